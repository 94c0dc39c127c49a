package main

import (
	"testing"
	"time"
)

// TestFmtDuration: the banner's durations read as words.
func TestFmtDuration(t *testing.T) {
	for d, want := range map[string]string{"1m": "1 minute", "10m": "10 minutes", "90s": "90 seconds", "1500ms": "1.5s"} {
		if got := fmtDuration(mustDuration(t, d)); got != want {
			t.Errorf("fmtDuration(%s) = %q; want %q", d, got, want)
		}
	}
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
