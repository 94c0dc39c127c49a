package password

// SlotMemory is the heap to allow for each slot of a [Gate] when the
// process sets a soft memory limit ([MemoryLimit]). A check of a hash made
// by [Hash] allocates [Memory] KiB (19 MiB) that is garbage a moment
// later; without a limit the collector, at a high GC target, lets five
// times the live heap of it pile up before collecting (200 MiB at 2
// slots). 32 MiB per slot holds one check's buffer with room for the
// collector to finish behind it.
const SlotMemory = 32 << 20

// MemoryLimit is the soft memory limit, in bytes, for a process that
// needs base bytes for everything else and runs slots password checks at
// once through a [Gate]: base + slots × [SlotMemory]. Package password
// only computes it; the process sets it (runtime/debug.SetMemoryLimit).
func MemoryLimit(base int64, slots int) int64 {
	return base + int64(max(slots, 0))*SlotMemory
}
