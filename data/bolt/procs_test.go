package bolt_test

import (
	"runtime"
	"testing"

	"oauthd/data/bolt"
)

// TestReserveSyncProc: one more P for the flush, however many stores ask.
func TestReserveSyncProc(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	bolt.ReserveSyncProc()
	bolt.ReserveSyncProc()
	bolt.ReserveSyncProc()
	if got, want := runtime.GOMAXPROCS(0), before+1; got != want {
		t.Errorf("GOMAXPROCS after three calls = %d; want %d (one more, once)", got, want)
	}
}
