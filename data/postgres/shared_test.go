package postgres_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

// These tests race two Store values on one database, as two replicas do:
// the rules must hold in the database, not in either process's memory.

var t0 = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

func twoStores(t *testing.T) [2]*postgres.Store {
	t.Helper()
	return twoStoresOn(t, pgtest.New(t))
}

// twoStoresOn opens two stores on the database at url.
func twoStoresOn(t *testing.T, url string) [2]*postgres.Store {
	t.Helper()
	return [2]*postgres.Store{open(t, url), open(t, url)}
}

func client(id string) data.Client {
	return data.Client{
		ID: id, Name: "Client " + id, OwnerID: 1, Type: data.Confidential,
		RedirectURIs: []string{"https://app.example.com/cb"},
		Scopes:       []string{"BOOKING_READ"},
		Status:       data.StatusApproved,
		Secrets:      []data.ClientSecret{{ID: "cs_0", Hash: data.Hash("s0"), CreatedAt: t0}},
		CreatedAt:    t0, UpdatedAt: t0,
	}
}

// race runs n calls of fn, alternating between the two stores, all
// released at once.
func race(n int, ss [2]*postgres.Store, fn func(i int, s *postgres.Store) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i, ss[i%2])
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func count(errs []error, target error) int {
	n := 0
	for _, err := range errs {
		if (target == nil && err == nil) || (target != nil && errors.Is(err, target)) {
			n++
		}
	}
	return n
}

func TestSharedRotationOneWinner(t *testing.T) { testSharedRotationOneWinner(t, pgtest.New) }

func testSharedRotationOneWinner(t *testing.T, newDB func(testing.TB) string) {
	ss := twoStoresOn(t, newDB(t))
	if err := ss[0].CreateClient(ctx, client("c")); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		code := data.AuthCode{Hash: data.AuthCodeKey(fmt.Sprintf("oauthd_ac_%d", round)), ClientID: "c", UserID: 1, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		if err := ss[0].CreateAuthCode(ctx, code); err != nil {
			t.Fatal(err)
		}
		famID := fmt.Sprintf("fam%d", round)
		_, _, err := ss[1].ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
			return data.Family{ID: famID, ClientID: "c", UserID: 1, TokenHash: data.Hash("rt0"), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		errs := race(30, ss, func(i int, s *postgres.Store) error {
			_, err := s.RotateRefreshToken(ctx, famID, matching(data.Hash("rt0"), func(f data.Family) (data.Family, error) {
				f.TokenHash = data.Hash(fmt.Sprintf("rt-%d", i))
				f.Generation++
				return f, nil
			}))
			return err
		})
		ok, reused, gone := count(errs, nil), count(errs, data.ErrTokenReused), count(errs, data.ErrNotFound)
		if ok != 1 || ok+reused+gone != len(errs) || reused < 1 {
			t.Fatalf("round %d: %d rotations won, %d saw reuse, %d found no family (errors %v); want exactly 1 winner and the rest reuse or gone", round, ok, reused, gone, errs)
		}
		if lost := ss[0].Stats().CASLost + ss[1].Stats().CASLost; lost == 0 && round == 0 {
			t.Log("no conditional write lost in this round (the racers did not overlap)")
		}
		// Reuse revoked the family for both stores.
		for i, s := range ss {
			if _, err := s.GetFamily(ctx, famID); !errors.Is(err, data.ErrNotFound) {
				t.Fatalf("round %d: store %d GetFamily after the race: %v; want ErrNotFound", round, i, err)
			}
		}
	}
}

// TestSharedRotationChain rotates one family from both stores in turn
// (each presenting the token the other stored): no rotation is lost or
// seen as reuse.
func TestSharedRotationChain(t *testing.T) { testSharedRotationChain(t, pgtest.New) }

func testSharedRotationChain(t *testing.T, newDB func(testing.TB) string) {
	ss := twoStoresOn(t, newDB(t))
	code := data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_chain"), ClientID: "c", UserID: 1, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := ss[0].CreateAuthCode(ctx, code); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ss[0].ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		return data.Family{ID: "f", ClientID: "c", TokenHash: data.Hash("rt0"), ExpiresAt: t0.Add(time.Hour)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		f, err := ss[i%2].RotateRefreshToken(ctx, "f", matching(data.Hash(fmt.Sprintf("rt%d", i)), func(f data.Family) (data.Family, error) {
			f.TokenHash = data.Hash(fmt.Sprintf("rt%d", i+1))
			f.Generation++
			return f, nil
		}))
		if err != nil || f.Generation != uint64(i+1) {
			t.Fatalf("rotation %d on store %d = generation %d, %v; want %d, nil", i, i%2, f.Generation, err, i+1)
		}
	}
}

func TestSharedCodeExchangeOneWinner(t *testing.T) { testSharedCodeExchangeOneWinner(t, pgtest.New) }

func testSharedCodeExchangeOneWinner(t *testing.T, newDB func(testing.TB) string) {
	ss := twoStoresOn(t, newDB(t))
	for round := range 5 {
		code := data.AuthCode{Hash: data.AuthCodeKey(fmt.Sprintf("oauthd_ac_r%d", round)), ClientID: "c", UserID: 1, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		if err := ss[round%2].CreateAuthCode(ctx, code); err != nil {
			t.Fatal(err)
		}
		errs := race(30, ss, func(i int, s *postgres.Store) error {
			_, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
				return data.Family{ID: fmt.Sprintf("r%d-f%d", round, i), ClientID: "c", TokenHash: data.Hash("rt"), ExpiresAt: t0.Add(time.Hour)}, nil
			})
			return err
		})
		if ok, used := count(errs, nil), count(errs, data.ErrCodeUsed); ok != 1 || used != len(errs)-1 {
			t.Fatalf("round %d: %d exchanges won, %d saw the code used; want 1 and %d (errors %v)", round, ok, used, len(errs)-1, errs)
		}
	}
	fams, err := ss[0].ListFamilies(ctx, "c")
	if err != nil || len(fams) != 5 {
		t.Fatalf("ListFamilies = %d families, %v; want 5 (one per code)", len(fams), err)
	}
}

func TestSharedClientCaps(t *testing.T) {
	ss := twoStores(t)
	if err := ss[0].CreateClient(ctx, client("c")); err != nil {
		t.Fatal(err)
	}
	t.Run("two active secrets", func(t *testing.T) {
		errs := race(20, ss, func(i int, s *postgres.Store) error {
			_, err := s.UpdateClient(ctx, "c", func(c data.Client) (data.Client, error) {
				c.Secrets = append(c.Secrets, data.ClientSecret{ID: fmt.Sprintf("cs_g%d", i), Hash: data.Hash(fmt.Sprint(i)), CreatedAt: t0})
				return c, nil
			})
			return err
		})
		ok, refused := count(errs, nil), count(errs, data.ErrTooManySecrets)
		got, _ := ss[1].GetClient(ctx, "c")
		if ok != 1 || refused != len(errs)-1 || len(got.Secrets) != data.MaxActiveSecrets {
			t.Fatalf("%d secret additions won, %d refused, client has %d secrets; want 1, %d, %d", ok, refused, len(got.Secrets), len(errs)-1, data.MaxActiveSecrets)
		}
	})
	t.Run("ten redirect URIs", func(t *testing.T) {
		errs := race(20, ss, func(i int, s *postgres.Store) error {
			_, err := s.UpdateClient(ctx, "c", func(c data.Client) (data.Client, error) {
				c.RedirectURIs = append(c.RedirectURIs, fmt.Sprintf("https://app.example.com/cb%d", i))
				return c, nil
			})
			return err
		})
		ok, refused := count(errs, nil), count(errs, data.ErrInvalid)
		got, _ := ss[0].GetClient(ctx, "c")
		if ok != data.MaxRedirectURIs-1 || refused != len(errs)-ok || len(got.RedirectURIs) != data.MaxRedirectURIs {
			t.Fatalf("%d additions won, %d refused, client has %d redirect URIs; want %d, %d, %d", ok, refused, len(got.RedirectURIs), data.MaxRedirectURIs-1, len(errs)-ok, data.MaxRedirectURIs)
		}
	})
	t.Run("at least one scope", func(t *testing.T) {
		// Two scopes; each writer removes one it sees: at most one may win.
		if _, err := ss[0].UpdateClient(ctx, "c", func(c data.Client) (data.Client, error) {
			c.Scopes = []string{"BOOKING_READ", "PROFILE_READ"}
			return c, nil
		}); err != nil {
			t.Fatal(err)
		}
		errs := race(20, ss, func(i int, s *postgres.Store) error {
			_, err := s.UpdateClient(ctx, "c", func(c data.Client) (data.Client, error) {
				c.Scopes = slices.Delete(c.Scopes, i%len(c.Scopes), i%len(c.Scopes)+1)
				return c, nil
			})
			return err
		})
		got, _ := ss[1].GetClient(ctx, "c")
		if ok := count(errs, nil); ok != 1 || len(got.Scopes) != 1 || count(errs, data.ErrInvalid) != len(errs)-1 {
			t.Fatalf("%d scope removals won, client has scopes %v; want 1 and one scope left", ok, got.Scopes)
		}
	})
}

func TestSharedKeySet(t *testing.T) {
	ss := twoStores(t)
	key := func(kid string, st data.KeyState) data.SigningKey {
		return data.SigningKey{KID: kid, Alg: "ES256", State: st, Private: []byte("p"), Public: []byte("{}"), CreatedAt: t0}
	}
	if _, err := ss[0].UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) {
		return []data.SigningKey{key("k0", data.KeyActive), key("k1", data.KeyNext)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	const n = 30
	errs := race(n, ss, func(i int, s *postgres.Store) error {
		_, err := s.UpdateKeys(ctx, func(ks []data.SigningKey) ([]data.SigningKey, error) {
			for j := range ks {
				switch ks[j].State {
				case data.KeyActive:
					ks[j].State = data.KeyRetired
				case data.KeyNext:
					ks[j].State = data.KeyActive
				}
			}
			return append(ks, key(fmt.Sprintf("g%d", i), data.KeyNext)), nil
		})
		return err
	})
	if ok := count(errs, nil); ok != n {
		t.Fatalf("%d of %d promotions succeeded: %v", ok, n, errs)
	}
	a, _ := ss[0].ListKeys(ctx)
	b, _ := ss[1].ListKeys(ctx)
	states := map[data.KeyState]int{}
	for _, k := range a {
		states[k.State]++
	}
	if states[data.KeyActive] != 1 || states[data.KeyNext] != 1 || states[data.KeyRetired] != n || len(a) != n+2 {
		t.Fatalf("after %d promotions from two stores: %v; want 1 active, 1 next, %d retired", n, states, n)
	}
	if len(a) != len(b) || a[len(a)-1].KID != b[len(b)-1].KID {
		t.Fatal("the two stores read different key sets")
	}
	// An empty set is never written by a racing writer that read nothing:
	// the row is locked, not created.
	_, err := ss[1].UpdateKeys(ctx, func(ks []data.SigningKey) ([]data.SigningKey, error) {
		if len(ks) == 0 {
			return nil, errors.New("saw an empty set")
		}
		return ks, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSharedUserIDs(t *testing.T) {
	ss := twoStores(t)
	errs := race(20, ss, func(i int, s *postgres.Store) error {
		_, err := s.CreateUser(ctx, data.User{Email: fmt.Sprintf("u%d@example.com", i%10), Username: fmt.Sprintf("u%d", i%10), CreatedAt: t0})
		return err
	})
	if ok, dup := count(errs, nil), count(errs, data.ErrExists); ok != 10 || dup != 10 {
		t.Fatalf("%d creates succeeded, %d refused as taken; want 10 and 10 (errors %v)", ok, dup, errs)
	}
	us, _ := ss[0].ListUsers(ctx)
	for i, u := range us {
		if u.ID != int64(i+1) {
			t.Fatalf("user IDs %v: want 1..10 without gaps", us)
		}
	}
}

func TestMigrateConcurrentlyAndRefuseNewer(t *testing.T) {
	url := pgtest.New(t)
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = postgres.Migrate(ctx, url, nil) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	s := open(t, url)
	var versions int
	if err := s.Pool().QueryRow(ctx, "SELECT count(*) FROM oauthd_schema").Scan(&versions); err != nil || versions != postgres.SchemaVersion() {
		t.Fatalf("oauthd_schema has %d rows, %v; want %d (each migration once)", versions, err, postgres.SchemaVersion())
	}
	if _, err := s.Pool().Exec(ctx, "INSERT INTO oauthd_schema (version, name) VALUES ($1, 'from_the_future')", postgres.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, url, postgres.Options{}); !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Fatalf("Open on a newer schema: %v; want ErrSchemaTooNew", err)
	}
	if _, _, err := postgres.Migrate(ctx, url, nil); !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Fatalf("Migrate on a newer schema: %v; want ErrSchemaTooNew", err)
	}
	empty := pgtest.New(t)
	if _, err := postgres.Open(ctx, empty, postgres.Options{}); !errors.Is(err, postgres.ErrSchemaOld) {
		t.Fatalf("Open without Migrate on an empty database: %v; want ErrSchemaOld", err)
	}
}

// TestSharedStaleGuess: a store that rotated a family last remembers it
// (famCache), but the database decides: after another store revokes the
// family or rotates it on, the first store's guess neither resurrects nor
// overrides anything.
func TestSharedStaleGuess(t *testing.T) { testSharedStaleGuess(t, pgtest.New) }

func testSharedStaleGuess(t *testing.T, newDB func(testing.TB) string) {
	ss := twoStoresOn(t, newDB(t))
	mk := func(id string) {
		code := data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_" + id), ClientID: "c", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		if err := ss[0].CreateAuthCode(ctx, code); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ss[0].ExchangeAuthCode(ctx, code.Hash, func(data.AuthCode) (data.Family, error) {
			return data.Family{ID: id, ClientID: "c", TokenHash: data.Hash("rt0"), ExpiresAt: t0.Add(time.Hour)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	to := func(tok string) func(data.Family) (data.Family, error) {
		return func(f data.Family) (data.Family, error) { f.TokenHash = data.Hash(tok); f.Generation++; return f, nil }
	}
	mk("revoked")
	if _, err := ss[0].RotateRefreshToken(ctx, "revoked", matching(data.Hash("rt0"), to("rt1"))); err != nil {
		t.Fatal(err)
	}
	if err := ss[1].DeleteFamily(ctx, "revoked"); err != nil {
		t.Fatal(err)
	}
	if _, err := ss[0].RotateRefreshToken(ctx, "revoked", matching(data.Hash("rt1"), to("rt2"))); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("rotation of a family revoked by the other store: %v; want ErrNotFound", err)
	}
	mk("moved")
	if _, err := ss[0].RotateRefreshToken(ctx, "moved", matching(data.Hash("rt0"), to("rt1"))); err != nil {
		t.Fatal(err)
	}
	if _, err := ss[1].RotateRefreshToken(ctx, "moved", matching(data.Hash("rt1"), to("rt2"))); err != nil {
		t.Fatal(err)
	}
	// Store 0 still remembers rt1 as current; rt1 is rotated away.
	if _, err := ss[0].RotateRefreshToken(ctx, "moved", matching(data.Hash("rt1"), to("rt3"))); !errors.Is(err, data.ErrTokenReused) {
		t.Fatalf("rotation with a token the other store rotated away: %v; want ErrTokenReused", err)
	}
}

// matching is the rotation rule of the tests: a presented token hash that
// is not the family's current one is a reuse (the store deletes the
// family); otherwise update decides.
func matching(presented []byte, update func(data.Family) (data.Family, error)) func(data.Family) (data.Family, error) {
	return func(f data.Family) (data.Family, error) {
		if !data.Equal(f.TokenHash, presented) {
			return f, data.ErrTokenReused
		}
		return update(f)
	}
}
