//go:build !linux

package wal

import "os"

// fdatasync flushes f (fsync where there is no fdatasync).
func fdatasync(f *os.File) error { return f.Sync() }
