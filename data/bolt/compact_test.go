package bolt_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/bolt"
)

// TestCompact: the expiry sweep's deletions leave free pages, which stay
// in the file (and in bbolt's in-memory free list) across a reopen;
// Compact returns them and keeps every record, while it refuses a file a
// store holds open.
func TestCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauthd.db")
	s := open(t, path)
	must(t, s.CreateClient(ctx, client("app")))
	const n = 3000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 32 { // concurrent, so that the group commit batches them
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 32 {
				if err := s.CreateAuthCode(ctx, code(fmt.Sprintf("c%d", i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	_, _, err := s.ExchangeAuthCode(ctx, data.Hash("c0"), family("keep", "rt0"))
	must(t, err)
	r, err := s.GarbageCollect(ctx, t0.Add(2*time.Minute)) // every code expired
	must(t, err)
	if r.AuthCodes != n {
		t.Fatalf("GarbageCollect removed %d codes; want %d", r.AuthCodes, n)
	}
	must(t, s.CreateAuthCode(ctx, data.AuthCode{Hash: data.Hash("late"), ClientID: "app", UserID: 1,
		RedirectURI: "https://app.example.com/cb", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}))

	if _, err := bolt.Compact(ctx, path, bolt.Options{Timeout: 50 * time.Millisecond}); !errors.Is(err, bolt.ErrLocked) {
		t.Fatalf("Compact of a file a store holds: %v; want ErrLocked", err)
	}
	must(t, s.Close())

	s = open(t, path)
	free := s.FreePages()
	must(t, s.Close())
	if free < 100 {
		t.Fatalf("after sweeping %d codes the file holds %d free pages; want at least 100 (does the test still delete?)", n, free)
	}

	res, err := bolt.Compact(ctx, path, bolt.Options{})
	must(t, err)
	if res.FreePagesBefore < free-8 || res.BytesAfter >= res.BytesBefore { // Open's own commits move a few pages
		t.Fatalf("Compact = %+v; want about %d free pages before and a smaller file", res, free)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != res.BytesAfter {
		t.Fatalf("file after Compact: %v, %v; want %d bytes", fi, err, res.BytesAfter)
	}
	if _, err := os.Stat(path + ".compact"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the copy is left beside the file: %v", err)
	}

	s = open(t, path)
	defer s.Close()
	if got := s.FreePages(); got > 8 {
		t.Fatalf("after Compact the file holds %d free pages; want at most 8", got)
	}
	if got, err := s.GetFamily(ctx, "keep"); err != nil || !data.Equal(got.TokenHash, data.Hash("rt0")) {
		t.Fatalf("GetFamily(keep) after Compact = %+v, %v", got, err)
	}
	if _, _, err := s.ExchangeAuthCode(ctx, data.Hash("c1"), family("swept", "x")); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("ExchangeAuthCode(c1) after Compact: %v; want ErrNotFound (swept)", err)
	}
	if _, _, err := s.ExchangeAuthCode(ctx, data.Hash("late"), family("late", "x")); err != nil {
		t.Fatalf("ExchangeAuthCode(late) after Compact: %v", err)
	}
	if c, err := s.GetClient(ctx, "app"); err != nil || c.Name != "App" {
		t.Fatalf("GetClient after Compact = %+v, %v", c, err)
	}
}

func TestCompactNoDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	if _, err := bolt.Compact(ctx, path, bolt.Options{}); !errors.Is(err, bolt.ErrNoDatabase) {
		t.Fatalf("Compact of a missing file: %v; want ErrNoDatabase", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Compact created %s", path)
	}
}

// TestOpenAfterReplace: an Open that waits for the lock of a file that is
// renamed over meanwhile (what Compact does) opens the new file, not the
// old, unlinked one.
func TestOpenAfterReplace(t *testing.T) {
	dir := t.TempDir()
	path, repl := filepath.Join(dir, "oauthd.db"), filepath.Join(dir, "new.db")
	s := open(t, repl)
	must(t, s.CreateClient(ctx, client("new")))
	must(t, s.Close())
	old := open(t, path)
	must(t, old.CreateClient(ctx, client("old")))

	opened := make(chan *bolt.Store, 1)
	go func() {
		s, err := bolt.Open(path, bolt.Options{Timeout: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		opened <- s
	}()
	time.Sleep(200 * time.Millisecond) // let it open the old file and wait for its lock
	must(t, os.Rename(repl, path))
	must(t, old.Close())
	s = <-opened
	if s == nil {
		return
	}
	defer s.Close()
	if _, err := s.GetClient(ctx, "new"); err != nil {
		t.Fatalf("the store opened after the rename does not hold the new file's client: %v", err)
	}
}
