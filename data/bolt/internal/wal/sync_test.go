package wal

import (
	"testing"
	"time"
)

func TestHoldNext(t *testing.T) {
	for _, c := range []struct {
		enabled bool
		last    time.Duration
		want    bool
	}{
		{true, 0, true},
		{true, 400 * time.Microsecond, true},
		{true, slowSync - 1, true},
		{true, slowSync, false}, // a slow disk: release the P next time
		{true, time.Second, false},
		{false, 400 * time.Microsecond, false},
		{false, time.Second, false},
	} {
		if got := holdNext(c.enabled, c.last); got != c.want {
			t.Errorf("holdNext(%v, %v) = %v, want %v", c.enabled, c.last, got, c.want)
		}
	}
}
