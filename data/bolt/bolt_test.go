package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/datatest"
)

var (
	ctx = context.Background()
	t0  = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
)

func open(t testing.TB, path string) *bolt.Store {
	t.Helper()
	return openWith(t, path, bolt.Options{})
}

func openWith(t testing.TB, path string, opts bolt.Options) *bolt.Store {
	t.Helper()
	opts.Logger = slog.New(slog.DiscardHandler)
	s, err := bolt.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openTemp(t testing.TB) *bolt.Store {
	t.Helper()
	s := open(t, filepath.Join(t.TempDir(), "oauthd.db"))
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	datatest.RunStoreTests(t, func(t *testing.T) data.Store { return openTemp(t) })
}

func client(id string) data.Client {
	return data.Client{
		ID: id, Name: "App", OwnerID: 1, Type: data.Confidential,
		RedirectURIs: []string{"https://app.example.com/cb"}, Scopes: []string{"BOOKING_READ"},
		Status: data.StatusApproved, Secrets: []data.ClientSecret{{ID: "cs_1", Hash: data.Hash("s"), CreatedAt: t0}},
		CreatedAt: t0, UpdatedAt: t0,
	}
}

func code(c string) data.AuthCode {
	return data.AuthCode{Hash: data.Hash(c), ClientID: "app", UserID: 1, RedirectURI: "https://app.example.com/cb",
		Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
}

func family(id, token string) func(data.AuthCode) (data.Family, error) {
	return func(c data.AuthCode) (data.Family, error) {
		return data.Family{ID: id, ClientID: c.ClientID, UserID: c.UserID, Scopes: c.Scopes, TokenHash: data.Hash(token),
			CreatedAt: t0, RotatedAt: t0, ExpiresAt: t0.Add(time.Hour), AbsoluteExp: t0.Add(24 * time.Hour), CodeHash: c.Hash}, nil
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReopen writes every kind of record, closes the file, opens it again
// and finds everything; user IDs continue where they stopped.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauthd.db")
	s := open(t, path)
	u, err := s.CreateUser(ctx, data.User{Email: "a@example.com", Username: "a", CreatedAt: t0})
	must(t, err)
	must(t, s.CreateClient(ctx, client("app")))
	must(t, s.CreateAuthCode(ctx, code("c1")))
	must(t, s.CreateAuthCode(ctx, code("c2")))
	_, fam, err := s.ExchangeAuthCode(ctx, data.Hash("c1"), family("fam", "rt0"))
	must(t, err)
	must(t, s.PutGrant(ctx, data.Grant{UserID: u.ID, ClientID: "app", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, UpdatedAt: t0}))
	must(t, s.CreateSession(ctx, data.Session{Hash: data.Hash("ss"), UserID: u.ID, CSRF: "x", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}))
	keys := []data.SigningKey{{KID: "k1", Alg: "ES256", State: data.KeyActive, Private: []byte("priv"), Public: []byte("pub"), CreatedAt: t0}}
	_, err = s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) { return keys, nil })
	must(t, err)
	must(t, s.Close())

	s = open(t, path)
	defer s.Close()
	if got, err := s.GetUserByLogin(ctx, "A@EXAMPLE.COM"); err != nil || got != u {
		t.Fatalf("GetUserByLogin = %+v, %v; want %+v", got, err, u)
	}
	u2, err := s.CreateUser(ctx, data.User{Email: "b@example.com", Username: "b", CreatedAt: t0})
	if err != nil || u2.ID != 2 {
		t.Fatalf("CreateUser after reopen = %d, %v; want ID 2", u2.ID, err)
	}
	if _, err := s.CreateUser(ctx, data.User{Email: "a@example.com", Username: "c"}); !errors.Is(err, data.ErrExists) {
		t.Fatalf("CreateUser with a taken email after reopen: %v; want ErrExists", err)
	}
	if c, err := s.GetClient(ctx, "app"); err != nil || c.Name != "App" || len(c.Secrets) != 1 {
		t.Fatalf("GetClient = %+v, %v", c, err)
	}
	if _, _, err := s.ExchangeAuthCode(ctx, data.Hash("c1"), family("fam2", "x")); !errors.Is(err, data.ErrCodeUsed) {
		t.Fatalf("ExchangeAuthCode(c1) after reopen: %v; want ErrCodeUsed", err)
	}
	if _, _, err := s.ExchangeAuthCode(ctx, data.Hash("c2"), family("fam2", "x")); err != nil {
		t.Fatalf("ExchangeAuthCode(c2) after reopen: %v", err)
	}
	if got, err := s.GetFamily(ctx, "fam"); err != nil || !data.Equal(got.TokenHash, fam.TokenHash) || !got.ExpiresAt.Equal(fam.ExpiresAt) {
		t.Fatalf("GetFamily = %+v, %v; want %+v", got, err, fam)
	}
	if fams, err := s.ListFamilies(ctx, "app"); err != nil || len(fams) != 2 {
		t.Fatalf("ListFamilies(app) = %d families, %v; want 2", len(fams), err)
	}
	if g, err := s.GetGrant(ctx, u.ID, "app"); err != nil || len(g.Scopes) != 1 {
		t.Fatalf("GetGrant = %+v, %v", g, err)
	}
	if sess, err := s.GetSession(ctx, data.Hash("ss")); err != nil || sess.CSRF != "x" {
		t.Fatalf("GetSession = %+v, %v", sess, err)
	}
	if ks, err := s.ListKeys(ctx); err != nil || len(ks) != 1 || string(ks[0].Private) != "priv" {
		t.Fatalf("ListKeys = %+v, %v", ks, err)
	}
}

func TestOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauthd.db")
	s := open(t, path)
	defer s.Close()
	start := time.Now()
	_, err := bolt.Open(path, bolt.Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, bolt.ErrLocked) {
		t.Fatalf("second Open: %v; want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "oauthd serve") {
		t.Fatalf("error %q does not name the file and say what to do", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("second Open took %v; want about the 50ms timeout", d)
	}
}

func TestOpenSchemaMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauthd.db")
	must(t, open(t, path).Close())
	db, err := bbolt.Open(path, 0o600, nil)
	must(t, err)
	must(t, db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte("99")) }))
	must(t, db.Close())
	if _, err := bolt.Open(path, bolt.Options{}); !errors.Is(err, bolt.ErrSchema) {
		t.Fatalf("Open of a schema-99 file: %v; want ErrSchema", err)
	}
}

// TestOpenRefusesNewerFile: a file holding a bucket this build does not
// know was written by a newer oauthd; Open refuses it (ErrSchema) with a
// sentence that says what to do, and leaves it as it was.
func TestOpenRefusesNewerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauthd.db")
	must(t, open(t, path).Close())
	db, err := bbolt.Open(path, 0o600, nil)
	must(t, err)
	must(t, db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("from_a_newer_release")); return err }))
	must(t, db.Close())
	for _, opts := range []bolt.Options{{}, {MustExist: true}} {
		_, err := bolt.Open(path, opts)
		if !errors.Is(err, bolt.ErrSchema) || !strings.Contains(err.Error(), `"from_a_newer_release"`) || !strings.Contains(err.Error(), "restore the backup taken before the upgrade") {
			t.Fatalf("Open(%+v) of a file with an unknown bucket: %v; want ErrSchema naming it and saying what to do", opts, err)
		}
	}
	db, err = bbolt.Open(path, 0o600, nil)
	must(t, err)
	must(t, db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte("from_a_newer_release")) == nil {
			return errors.New("the refused file lost its bucket")
		}
		return nil
	}))
	must(t, db.Close())
}

// TestGroupCommitWriteFailure checks that a write that fails half-way inside
// a shared transaction (here: a key over bbolt's limit) fails alone, while
// the other writes of its batch are retried and stored.
func TestGroupCommitWriteFailure(t *testing.T) {
	s := openTemp(t)
	const n = 50
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := code(fmt.Sprint("c", i))
			if i == n/2 {
				c.Hash = make([]byte, bbolt.MaxKeySize+1)
			}
			errs[i] = s.CreateAuthCode(ctx, c)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i == n/2 {
			if err == nil {
				t.Fatal("CreateAuthCode with an oversized key succeeded")
			}
			continue
		}
		if err != nil {
			t.Fatalf("CreateAuthCode(c%d): %v", i, err)
		}
		if _, _, err := s.ExchangeAuthCode(ctx, data.Hash(fmt.Sprint("c", i)), family(fmt.Sprint("f", i), "t")); err != nil {
			t.Fatalf("ExchangeAuthCode(c%d): %v", i, err)
		}
	}
}

// TestCallbackPanic checks that a panic in a callback reaches the caller's
// goroutine and leaves the store working.
func TestCallbackPanic(t *testing.T) {
	s := openTemp(t)
	must(t, s.CreateAuthCode(ctx, code("c")))
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v; want boom", v)
			}
		}()
		s.ExchangeAuthCode(ctx, data.Hash("c"), func(data.AuthCode) (data.Family, error) { panic("boom") })
		t.Fatal("ExchangeAuthCode returned after a panic in exchange")
	}()
	if _, _, err := s.ExchangeAuthCode(ctx, data.Hash("c"), family("f", "t")); err != nil {
		t.Fatalf("ExchangeAuthCode after the panic: %v", err)
	}
}

// TestCloseDrains checks that Close commits every write that was accepted
// and that writes after Close fail with ErrClosed.
func TestCloseDrains(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauthd.db")
	s := open(t, path)
	const n = 100
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.CreateAuthCode(ctx, code(fmt.Sprint("c", i))) })
	}
	time.Sleep(time.Millisecond)
	must(t, s.Close())
	wg.Wait()
	must(t, s.Close()) // a second Close is harmless
	s = open(t, path)
	defer s.Close()
	stored := 0
	for i, err := range errs {
		_, _, xerr := s.ExchangeAuthCode(ctx, data.Hash(fmt.Sprint("c", i)), family(fmt.Sprint("f", i), "t"))
		switch {
		case err == nil && xerr == nil:
			stored++
		case errors.Is(err, bolt.ErrClosed) && errors.Is(xerr, data.ErrNotFound):
		default:
			t.Fatalf("code %d: create %v, exchange after reopen %v", i, err, xerr)
		}
	}
	t.Logf("%d of %d writes made it before Close", stored, n)
}

// Benchmarks. Each goroutine rotates its own family back and forth between
// two token hashes, so that the numbers are the store's (one JSON decode and
// encode, one fsync per batch), not the hashing of tokens.

func benchFamily(b *testing.B, s *bolt.Store, id string) (rotate func() error) {
	c := code("c-" + id)
	c.ExpiresAt = t0.Add(time.Hour)
	must(b, s.CreateAuthCode(ctx, c))
	_, _, err := s.ExchangeAuthCode(ctx, c.Hash, family(id, "t0"))
	must(b, err)
	hashes := [2][]byte{data.Hash("t0"), data.Hash("t1")}
	cur := 0
	updates := [2]func(data.Family) (data.Family, error){}
	for i := range updates {
		next, want := hashes[1-i], hashes[i]
		updates[i] = func(f data.Family) (data.Family, error) {
			if !data.Equal(f.TokenHash, want) {
				return f, data.ErrTokenReused
			}
			f.TokenHash = next
			f.Generation++
			return f, nil
		}
	}
	return func() error {
		_, err := s.RotateRefreshToken(ctx, id, updates[cur])
		cur = 1 - cur
		return err
	}
}

func BenchmarkRotateRefreshToken(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		s := openTemp(b)
		rotate := benchFamily(b, s, "fam")
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := rotate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel64", func(b *testing.B) {
		s := openTemp(b)
		var mu sync.Mutex
		next := 0
		b.SetParallelism(32) // × GOMAXPROCS (2 here) ≈ 64 goroutines
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			mu.Lock()
			id := fmt.Sprint("fam", next)
			next++
			mu.Unlock()
			rotate := benchFamily(b, s, id)
			for pb.Next() {
				if err := rotate(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
