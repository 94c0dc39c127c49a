package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"oauthd/data"
)

// A crash is simulated by copying the database and its log while the store
// is open and idle: after a write has returned, its record is in the log
// file, and the copies are what a kill -9 at that moment leaves behind.
// The copies are then opened as a new store.

var walT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// crashCopy copies the store's files to a new directory and returns the
// copy's database path.
func crashCopy(t *testing.T, s *Store) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "crashed.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(s.Path() + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func reopen(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newFamily issues a code and exchanges it for family id with token "id/0".
func newFamily(t *testing.T, s *Store, id string) {
	t.Helper()
	c := data.AuthCode{Hash: data.Hash("code-" + id), ClientID: "app", UserID: 1, RedirectURI: "https://app.example.com/cb",
		Scopes: []string{"BOOKING_READ"}, CreatedAt: walT0, ExpiresAt: walT0.Add(time.Minute)}
	if err := s.CreateAuthCode(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.ExchangeAuthCode(t.Context(), c.Hash, func(c data.AuthCode) (data.Family, error) {
		return data.Family{ID: id, ClientID: c.ClientID, UserID: c.UserID, Scopes: c.Scopes, TokenHash: data.Hash(id + "/0"),
			CreatedAt: walT0, RotatedAt: walT0, ExpiresAt: walT0.Add(time.Hour), AbsoluteExp: walT0.Add(24 * time.Hour), CodeHash: c.Hash}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rotate moves family id from generation gen to gen+1.
func rotate(t *testing.T, s *Store, id string, gen int) {
	t.Helper()
	_, err := s.RotateRefreshToken(t.Context(), id, func(f data.Family) (data.Family, error) {
		if !data.Equal(f.TokenHash, data.Hash(fmt.Sprintf("%s/%d", id, gen))) {
			return f, fmt.Errorf("family %s is not at generation %d", id, gen)
		}
		f.TokenHash = data.Hash(fmt.Sprintf("%s/%d", id, gen+1))
		f.Generation++
		return f, nil
	})
	if err != nil {
		t.Fatalf("rotate %s from %d: %v", id, gen, err)
	}
}

func wantGeneration(t *testing.T, s *Store, id string, gen uint64) {
	t.Helper()
	f, err := s.GetFamily(t.Context(), id)
	if err != nil {
		t.Fatalf("GetFamily(%s): %v", id, err)
	}
	if f.Generation != gen || !data.Equal(f.TokenHash, data.Hash(fmt.Sprintf("%s/%d", id, gen))) {
		t.Fatalf("family %s at generation %d; want %d", id, f.Generation, gen)
	}
}

// records returns the offsets of the log's valid records of its first
// generation, and the offset after the last.
func records(t *testing.T, s *Store) (starts []int64, end int64) {
	t.Helper()
	b, err := os.ReadFile(s.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off+walHeader <= int64(len(b)); {
		n := int64(binary.LittleEndian.Uint32(b[off:]))
		if n == 0 || off+walHeader+n > int64(len(b)) ||
			binary.LittleEndian.Uint64(b[off+8:]) != binary.LittleEndian.Uint64(b[8:]) ||
			crc32.Update(s.seed, crcTable, b[off+8:off+walHeader+n]) != binary.LittleEndian.Uint32(b[off+4:]) {
			break
		}
		starts = append(starts, off)
		off += walHeader + n
		end = off
	}
	return starts, end
}

// TestWALReplay: writes that returned are found after a crash, although
// no checkpoint copied them into the bbolt file.
func TestWALReplay(t *testing.T) {
	s := openTestStore(t)
	newFamily(t, s, "a")
	newFamily(t, s, "b")
	for g := range 5 {
		rotate(t, s, "a", g)
	}
	rotate(t, s, "b", 0)
	if err := s.DeleteFamily(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	if s.CommitStats().Checkpoints != 0 {
		t.Fatal("a checkpoint ran; the test needs the writes in the log only")
	}
	c := reopen(t, crashCopy(t, s))
	wantGeneration(t, c, "a", 5)
	if _, err := c.GetFamily(t.Context(), "b"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("deleted family b after replay: %v", err)
	}
	_, _, err := c.ExchangeAuthCode(t.Context(), data.Hash("code-a"), nil)
	if !errors.Is(err, data.ErrCodeUsed) {
		t.Fatalf("exchanging the used code after replay: %v; want ErrCodeUsed", err)
	}
	// The replayed store goes on: its own writes survive the next crash.
	rotate(t, c, "a", 5)
	wantGeneration(t, reopen(t, crashCopy(t, c)), "a", 6)
}

// TestWALTornTail: a last record that is cut short or damaged was never
// acknowledged; replay stops before it and keeps everything earlier.
func TestWALTornTail(t *testing.T) {
	s := openTestStore(t)
	newFamily(t, s, "a")
	for g := range 3 {
		rotate(t, s, "a", g)
	}
	starts, end := records(t, s)
	if len(starts) != 5 { // code, exchange, 3 rotations
		t.Fatalf("%d records; want 5", len(starts))
	}
	last := starts[len(starts)-1]
	for name, damage := range map[string]func(b []byte){
		"cut short":   func(b []byte) { clear(b[last+walHeader+3 : end]) },
		"bit flipped": func(b []byte) { b[end-1] ^= 1 },
		"zeroed":      func(b []byte) { clear(b[last:end]) },
	} {
		t.Run(name, func(t *testing.T) {
			path := crashCopy(t, s)
			b, err := os.ReadFile(path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			damage(b)
			if err := os.WriteFile(path+"-wal", b, 0o600); err != nil {
				t.Fatal(err)
			}
			wantGeneration(t, reopen(t, path), "a", 2)
		})
	}
}

// TestWALIgnoresOlderRecords: after a checkpoint the log starts over at
// offset 0, and the records of the earlier generation behind the new ones
// are never replayed, even where the new ones end exactly at one of them.
func TestWALIgnoresOlderRecords(t *testing.T) {
	s := openTestStore(t)
	newFamily(t, s, "a")
	for g := range 4 {
		rotate(t, s, "a", g)
	}
	if err := s.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Same-sized records as the first two of the earlier generation.
	newFamily(t, s, "b")
	if err := s.DeleteFamily(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	c := reopen(t, crashCopy(t, s))
	if _, err := c.GetFamily(t.Context(), "a"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("family a, deleted after the checkpoint: %v; want ErrNotFound", err)
	}
	wantGeneration(t, c, "b", 0)
}

// TestWALNoGenerationReuse: every Open uses a new generation, so that a
// record left behind a torn one by a crashed session cannot be read as
// part of a later session's log.
func TestWALNoGenerationReuse(t *testing.T) {
	s := openTestStore(t)
	newFamily(t, s, "a")
	rotate(t, s, "a", 0)
	rotate(t, s, "a", 1)
	// Crash with the first rotation's record torn: the second one, behind
	// it, is lost with it.
	path := crashCopy(t, s)
	starts, _ := records(t, s)
	b, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	b[starts[2]+walHeader] ^= 1
	if err := os.WriteFile(path+"-wal", b, 0o600); err != nil {
		t.Fatal(err)
	}
	c := reopen(t, path)
	wantGeneration(t, c, "a", 0)
	// The recovered session writes the same records again, but under a new
	// generation: after its next crash, the old third record does not
	// follow them.
	newFamily(t, c, "x") // two records, as code + exchange of "a" were
	rotate(t, c, "a", 0)
	d := reopen(t, crashCopy(t, c))
	wantGeneration(t, d, "a", 1)
}

// TestWALFailureStopsWrites: once the log cannot be written, every write
// fails with ErrFailed (none is acknowledged that is not on disk), reads
// still work, and a reopen recovers what was acknowledged.
func TestWALFailureStopsWrites(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "oauthd.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	newFamily(t, s, "a")
	rotate(t, s, "a", 0)
	path := crashCopy(t, s)
	s.wal.Close() // every write to the log now fails
	_, err = s.RotateRefreshToken(t.Context(), "a", func(f data.Family) (data.Family, error) { return f, nil })
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("rotation with a broken log: %v; want ErrFailed", err)
	}
	if err := s.DeleteFamily(t.Context(), "a"); !errors.Is(err, ErrFailed) {
		t.Fatalf("delete with a broken log: %v; want ErrFailed", err)
	}
	if _, err := s.GetFamily(t.Context(), "a"); err != nil {
		t.Fatalf("read with a broken log: %v", err)
	}
	s.Close()
	wantGeneration(t, reopen(t, path), "a", 1)
}

// TestWALCheckpointBySize: the log starts over once it passes
// walCheckpoint, and the file stops growing.
func TestWALCheckpointBySize(t *testing.T) {
	if testing.Short() {
		t.Skip("writes more than walCheckpoint bytes")
	}
	s := openTestStore(t)
	newFamily(t, s, "a")
	big := make([]byte, 64<<10)
	var gen int
	for s.CommitStats().Checkpoints < 2 {
		// A session record is as large as its caller makes it.
		err := s.CreateSession(t.Context(), data.Session{Hash: data.Hash(fmt.Sprint("s", gen)), UserID: 1,
			CSRF: string(big), CreatedAt: walT0, ExpiresAt: walT0.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		rotate(t, s, "a", gen)
		gen++
	}
	if s.CommitStats().CheckpointTime <= 0 {
		t.Errorf("CommitStats = %+v; want the checkpoints' time counted", s.CommitStats())
	}
	fi, err := os.Stat(s.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > walCheckpoint+2*walGrow {
		t.Errorf("log file is %d bytes after two checkpoints; want at most %d", fi.Size(), walCheckpoint+2*walGrow)
	}
	wantGeneration(t, reopen(t, crashCopy(t, s)), "a", uint64(gen))
}

// TestWALOfAnotherDatabase: a log left under the database's name by
// another database (its file deleted, the log not) is never replayed, even
// where its generations match.
func TestWALOfAnotherDatabase(t *testing.T) {
	a := openTestStore(t)
	newFamily(t, a, "a")
	other := crashCopy(t, a) // a log of generation 2 with family "a"

	path := filepath.Join(t.TempDir(), "oauthd.db")
	b := reopen(t, path) // new database: generation 1 checkpointed
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(other + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-wal", log, 0o600); err != nil {
		t.Fatal(err)
	}
	b = reopen(t, path) // replays generation 2
	if _, err := b.GetFamily(t.Context(), "a"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("family of another database's log: %v; want ErrNotFound", err)
	}
}
