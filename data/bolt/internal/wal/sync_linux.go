package wal

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data, and only the metadata needed to read it back.
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// fdatasyncHolding is fdatasync made without telling the Go scheduler that
// the thread blocks: the goroutine keeps its processor (P) through the
// flush and runs on as soon as the kernel wakes the thread (see
// bolt.Options.SyncHoldsProc for why, and for the cost).
func fdatasyncHolding(f *os.File) error {
	fd := f.Fd()
	for {
		_, _, e := unix.RawSyscall(unix.SYS_FDATASYNC, fd, 0, 0)
		if e != unix.EINTR {
			runtime.KeepAlive(f)
			if e != 0 {
				return e
			}
			return nil
		}
	}
}
