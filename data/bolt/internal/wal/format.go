package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The log's file format (docs/DESIGN.md "Write-ahead log").
//
// A bbolt commit costs two fsyncs in a row (data pages, then the meta page)
// and holds the writer lock through both, so commits cannot overlap. The
// hot-path writes (codes, refresh-token families, sessions) are instead
// appended to this log, one record per group-commit batch, and are durable
// after one fdatasync per batch. A checkpoint copies them into the bbolt
// file (fsynced as usual) and starts the log over; Open replays what the
// last checkpoint did not cover.
//
// The log is one file beside the database, named as the database plus
// "-wal". It grows by walGrow bytes of zeros at a time, fsynced, ahead of
// the records, so that writing a record overwrites allocated blocks and
// its fdatasync needs to flush data only, with no file metadata (ext4
// without a journal still writes the inode's block after an mtime change,
// at most once per clock tick: docs/PERFORMANCE.md, "Why c=16 falls
// short"). A checkpoint starts the log over at offset 0; the file keeps its
// size. A record:
//
//	u32 little-endian  payload length n (> 0)
//	u32 little-endian  CRC-32C of the database's log salt, then of the
//	                   16+n bytes that follow
//	u64 little-endian  generation: one per log lifetime, never reused
//	u64 little-endian  sequence number within the generation, from 1
//	n bytes            the batch's writes, in order, each:
//	                   kind (walPut or walDelete), bucket (its index in
//	                   Options.Buckets),
//	                   uvarint key length, key,
//	                   and for walPut: uvarint value length, value
//
// Replay reads records from offset 0 while each is whole, has the right
// checksum, the expected generation (the checkpointed one plus one) and the
// next sequence number; the first record that is not stops it. That is a
// torn write of a batch that was never acknowledged, a zero-filled tail, or
// an older generation's record: nothing after it was acknowledged either.
// Every Open consumes a generation, so a stale record of the live
// generation cannot be left in the file. The salt (random, made with the
// database, kept in its meta bucket) makes the records of another
// database's log, left under this name, fail their checksum.
const (
	walGrow       = 1 << 20 // bytes of zeros the log file grows by
	walCheckpoint = 8 << 20 // log offset that triggers a checkpoint
	walHeader     = 24
	walPut        = 1
	walDelete     = 2
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errWALRecord is a log record that does not parse although its checksum
// matched: a bug, never a torn write.
var errWALRecord = errors.New("malformed write-ahead log record")

// openWAL opens the log file, creating it (empty) when it is missing.
func openWAL(path string) (*os.File, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil || statErr == nil {
		return f, err
	}
	// A new file's name must survive a power loss too.
	if err := SyncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// SyncDir makes the creation, rename or removal of a name in dir durable
// (fsync of the folder).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// zeroFill makes sure f holds allocated zeros (or older records) up to at
// least end, growing it walGrow bytes at a time from its size, and returns
// its new size. The growth is fsynced (data and size) before any record
// relies on it.
func zeroFill(f *os.File, size, end int64) (int64, error) {
	if end <= size {
		return size, nil
	}
	newSize := size + (end-size+walGrow-1)/walGrow*walGrow
	zeros := make([]byte, walGrow)
	for off := size; off < newSize; off += walGrow {
		if _, err := f.WriteAt(zeros, off); err != nil {
			return size, err
		}
	}
	if err := f.Sync(); err != nil {
		return size, err
	}
	return newSize, nil
}

// A mutation is one write of a batch.
type mutation struct {
	bucket int
	del    bool
	key    []byte
	val    []byte // nil for a delete; may be empty for a put
}

// walSeed is the checksum of a database's log salt: every record's CRC
// starts from it.
func walSeed(salt []byte) uint32 { return crc32.Checksum(salt, crcTable) }

// appendRecord appends the record of muts to b.
func appendRecord(b []byte, seed uint32, gen, seq uint64, muts []mutation) []byte {
	start := len(b)
	b = append(b, make([]byte, walHeader)...)
	binary.LittleEndian.PutUint64(b[start+8:], gen)
	binary.LittleEndian.PutUint64(b[start+16:], seq)
	for _, m := range muts {
		kind := byte(walPut)
		if m.del {
			kind = walDelete
		}
		b = append(b, kind, byte(m.bucket))
		b = binary.AppendUvarint(b, uint64(len(m.key)))
		b = append(b, m.key...)
		if !m.del {
			b = binary.AppendUvarint(b, uint64(len(m.val)))
			b = append(b, m.val...)
		}
	}
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-walHeader))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Update(seed, crcTable, b[start+8:]))
	return b
}

// readWAL returns the writes of the valid records (checksums from seed) of
// generation gen at the start of r (see the file comment), in order, and the offset after them.
func readWAL(r io.ReaderAt, size int64, seed uint32, gen uint64, buckets int) (muts []mutation, end int64, err error) {
	var hdr [walHeader]byte
	for seq := uint64(1); ; seq++ {
		if end+walHeader > size {
			return muts, end, nil
		}
		if _, err := r.ReadAt(hdr[:], end); err != nil {
			return nil, 0, err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[0:]))
		if n == 0 || n > size-end-walHeader ||
			binary.LittleEndian.Uint64(hdr[8:]) != gen || binary.LittleEndian.Uint64(hdr[16:]) != seq {
			return muts, end, nil
		}
		rec := make([]byte, walHeader+n)
		if _, err := r.ReadAt(rec, end); err != nil {
			return nil, 0, err
		}
		if crc32.Update(seed, crcTable, rec[8:]) != binary.LittleEndian.Uint32(hdr[4:]) {
			return muts, end, nil
		}
		if muts, err = decodeRecord(muts, rec[walHeader:], buckets); err != nil {
			return nil, 0, fmt.Errorf("record %d at offset %d: %w", seq, end, err)
		}
		end += walHeader + n
	}
}

// decodeRecord appends the writes of one record's payload to muts; a
// bucket index must be below buckets.
func decodeRecord(muts []mutation, p []byte, buckets int) ([]mutation, error) {
	field := func() ([]byte, bool) {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, false
		}
		v := p[k : k+int(n) : k+int(n)]
		p = p[k+int(n):]
		return v, true
	}
	for len(p) > 0 {
		if len(p) < 2 || (p[0] != walPut && p[0] != walDelete) || int(p[1]) >= buckets {
			return nil, errWALRecord
		}
		m := mutation{bucket: int(p[1]), del: p[0] == walDelete}
		p = p[2:]
		var ok bool
		if m.key, ok = field(); !ok || len(m.key) == 0 {
			return nil, errWALRecord
		}
		if !m.del {
			if m.val, ok = field(); !ok {
				return nil, errWALRecord
			}
		}
		muts = append(muts, m)
	}
	return muts, nil
}
