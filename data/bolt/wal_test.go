package bolt

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"oauthd/data"
)

// The store with its write-ahead log (package internal/wal, which tests
// the log's format, torn tails, generations, failures and checkpoints on
// its own). A crash is simulated by copying the database and its log while the store
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

var errInjected = errors.New("injected EIO")

// failingSync is a flush that fails once failing is set.
func failingSync(failing *atomic.Bool) func(*os.File) error {
	return func(f *os.File) error {
		if failing.Load() {
			return errInjected
		}
		return f.Sync()
	}
}

// TestFlushFailureIsFatal: when the log's flush fails, the writer gets
// ErrFailed (no success), OnFatal is called once with the flush's error,
// and the store answers no read from the write that failed (nor any
// other hot read).
func TestFlushFailureIsFatal(t *testing.T) {
	var failing atomic.Bool
	var fatal []error
	var mu sync.Mutex
	path := filepath.Join(t.TempDir(), "oauthd.db")
	s, err := Open(path, Options{sync: failingSync(&failing), OnFatal: func(err error) {
		mu.Lock()
		fatal = append(fatal, err)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kept := data.Session{Hash: data.Hash("kept"), UserID: 1, CreatedAt: walT0, ExpiresAt: walT0.Add(time.Hour)}
	if err := s.CreateSession(t.Context(), kept); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	lost := data.Session{Hash: data.Hash("lost"), UserID: 1, CreatedAt: walT0, ExpiresAt: walT0.Add(time.Hour)}
	if err := s.CreateSession(t.Context(), lost); !errors.Is(err, ErrFailed) || !errors.Is(err, errInjected) {
		t.Fatalf("CreateSession whose flush failed: %v; want ErrFailed wrapping the flush's error", err)
	}
	mu.Lock()
	got := fatal
	mu.Unlock()
	if len(got) != 1 || !errors.Is(got[0], errInjected) {
		t.Fatalf("OnFatal calls: %v; want one, with the flush's error", got)
	}
	if _, err := s.GetSession(t.Context(), lost.Hash); !errors.Is(err, ErrFailed) {
		t.Fatalf("GetSession of the write whose flush failed: %v; want ErrFailed", err)
	}
	if _, err := s.GetSession(t.Context(), kept.Hash); !errors.Is(err, ErrFailed) {
		t.Fatalf("GetSession after a failed flush: %v; want ErrFailed", err)
	}
	if _, err := s.ListRevoked(t.Context(), time.Time{}); !errors.Is(err, ErrFailed) {
		t.Fatalf("ListRevoked after a failed flush: %v; want ErrFailed", err)
	}
	if err := s.CreateSession(t.Context(), data.Session{Hash: data.Hash("later"), UserID: 1}); !errors.Is(err, ErrFailed) {
		t.Fatalf("CreateSession after a failed flush: %v; want ErrFailed", err)
	}
}

// TestFlushFailureExits: with the default OnFatal, a failed flush ends the
// process with ExitFatal, saying why on stderr, before the writer returns.
// The test runs itself as the process that fails.
func TestFlushFailureExits(t *testing.T) {
	if dir := os.Getenv("OAUTHD_TEST_FLUSH_FAILS"); dir != "" {
		var failing atomic.Bool
		s, err := Open(filepath.Join(dir, "oauthd.db"), Options{sync: failingSync(&failing)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "open:", err)
			os.Exit(2)
		}
		failing.Store(true)
		err = s.CreateSession(t.Context(), data.Session{Hash: data.Hash("lost"), UserID: 1})
		fmt.Fprintln(os.Stderr, "CreateSession returned:", err) // must not happen
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFlushFailureExits$", "-test.count=1")
	cmd.Env = append(os.Environ(), "OAUTHD_TEST_FLUSH_FAILS="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitFatal {
		t.Fatalf("the process whose flush failed ended with %v; want exit status %d\nstderr: %s", err, ExitFatal, stderr.String())
	}
	if out := stderr.String(); !strings.Contains(out, "stopping") || !strings.Contains(out, errInjected.Error()) || strings.Contains(out, "CreateSession returned") {
		t.Fatalf("stderr of the process whose flush failed:\n%s\nwant the reason, and no answer to the writer", out)
	}
}
