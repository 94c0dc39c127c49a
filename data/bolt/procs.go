package bolt

import (
	"runtime"
	"sync"
)

// ReserveSyncProc raises GOMAXPROCS by one, once per process however
// often it is called, for the write-ahead log's flush, which with
// [Options.SyncHoldsProc] holds its P while the disk works: the other
// goroutines keep as many Ps as before (the flush spends that time
// blocked, not on a CPU). Call it before opening a store with
// SyncHoldsProc; without that option it is not needed.
func ReserveSyncProc() { reserveSyncProc() }

// reserveSyncProc is process-wide because GOMAXPROCS is.
var reserveSyncProc = sync.OnceFunc(func() {
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
})
