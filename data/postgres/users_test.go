package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

// leftOf counts the records of user id in the database, found by the
// user ID in each record's body (not by the user_id columns the store
// deletes by, so that a wrong column shows here).
func leftOf(t *testing.T, s *postgres.Store, id int64) map[string]int {
	t.Helper()
	left := map[string]int{}
	for _, table := range []string{"sessions", "auth_codes", "families", "grants"} {
		var n int
		if err := s.Pool().QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE (body->>'user_id')::bigint = $1", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			left[table] = n
		}
	}
	return left
}

// TestSharedDisableRace disables a user on one store while both stores
// keep creating sessions, codes and grants for the user and exchanging the
// user's codes: once the disable has returned and the racers have stopped,
// nothing of the user is left, every racer's last answer is
// ErrUserDisabled (or, for an exchange, a code that is gone), and another
// user keeps what they had.
func TestSharedDisableRace(t *testing.T) { testSharedDisableRace(t, pgtest.New) }

func testSharedDisableRace(t *testing.T, newDB func(testing.TB) string) {
	ss := twoStoresOn(t, newDB(t))
	if err := ss[0].CreateClient(ctx, client("c")); err != nil {
		t.Fatal(err)
	}
	other, err := ss[0].CreateUser(ctx, data.User{Email: "other@example.com", Username: "other", CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := ss[1].CreateSession(ctx, data.Session{Hash: data.Hash("other"), UserID: other.ID, ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	var refusedTotal, madeTotal int64
	for round := range 8 {
		u, err := ss[round%2].CreateUser(ctx, data.User{Email: fmt.Sprintf("u%d@example.com", round), Username: fmt.Sprintf("u%d", round), CreatedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		// Codes for the exchangers to redeem while the disable runs.
		const codes = 40
		for i := range codes {
			c := data.AuthCode{Hash: data.AuthCodeKey(fmt.Sprintf("oauthd_ac_x%d_%d", round, i)), ClientID: "c", UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
			if err := ss[i%2].CreateAuthCode(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		var made atomic.Int64
		var wg sync.WaitGroup
		last := make([]error, 8)
		for w := range last {
			s := ss[w%2]
			wg.Go(func() {
				for i := 0; ; i++ {
					key := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					var err error
					switch w % 4 {
					case 0:
						err = s.CreateSession(ctx, data.Session{Hash: data.Hash(key), UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
					case 1:
						err = s.CreateAuthCode(ctx, data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_" + key), ClientID: "c", UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
					case 2:
						err = s.PutGrant(ctx, data.Grant{UserID: u.ID, ClientID: "c", Scopes: []string{key}, CreatedAt: t0})
					case 3:
						if i >= codes/2 {
							return // the codes of this exchanger are spent
						}
						_, _, err = s.ExchangeAuthCode(ctx, data.AuthCodeKey(fmt.Sprintf("oauthd_ac_x%d_%d", round, i*2+w/4)), func(c data.AuthCode) (data.Family, error) {
							return data.Family{ID: "fam-" + key, ClientID: "c", UserID: c.UserID, TokenHash: data.Hash(key), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}, nil
						})
						if errors.Is(err, data.ErrNotFound) {
							last[w] = err
							continue // the disable deleted it: try the next
						}
					}
					last[w] = err
					if err != nil {
						return
					}
					made.Add(1)
				}
			})
		}
		for made.Load() < 10 {
			time.Sleep(100 * time.Microsecond)
		}
		if _, err := ss[(round+1)%2].UpdateUser(ctx, u.ID, func(u data.User) (data.User, error) {
			u.Disabled, u.DisabledAt = true, t0
			return u, nil
		}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for w, err := range last {
			want := data.ErrUserDisabled
			if w%4 == 3 {
				want = data.ErrNotFound // exchangers: the remaining codes were deleted
				if err == nil {
					continue // every code was exchanged before the disable
				}
			}
			if !errors.Is(err, want) {
				t.Fatalf("round %d: racer %d stopped with %v; want %v", round, w, err, want)
			}
			refusedTotal++
		}
		madeTotal += made.Load()
		if left := leftOf(t, ss[round%2], u.ID); len(left) > 0 {
			t.Fatalf("round %d: after the disable, user %d still has %v", round, u.ID, left)
		}
	}
	if left := leftOf(t, ss[0], other.ID); left["sessions"] != 1 {
		t.Fatalf("the other user has %v; want their one session", left)
	}
	t.Logf("%d records made before the disables, %d racers refused after", madeTotal, refusedTotal)
}

// TestSharedNonceOnce: of many uses of one key from both stores at once,
// exactly one succeeds.
func TestSharedNonceOnce(t *testing.T) {
	ss := twoStores(t)
	for round := range 5 {
		key := fmt.Appendf(nil, "handover\x00iss\x00jti-%d", round)
		errs := race(20, ss, func(i int, s *postgres.Store) error {
			return s.UseNonce(ctx, key, t0.Add(time.Minute))
		})
		if ok, used := count(errs, nil), count(errs, data.ErrExists); ok != 1 || used != len(errs)-1 {
			t.Fatalf("round %d: %d uses succeeded, %d refused; want 1 and %d (errors %v)", round, ok, used, len(errs)-1, errs)
		}
	}
}

// TestSharedCreateUsersRace: batches with one email in common, from both
// stores at once: one batch is stored whole, the others not at all, and
// the IDs have no gap.
func TestSharedCreateUsersRace(t *testing.T) {
	ss := twoStores(t)
	errs := race(10, ss, func(i int, s *postgres.Store) error {
		_, err := s.CreateUsers(ctx, []data.User{
			{Email: fmt.Sprintf("own%d@example.com", i), Username: fmt.Sprintf("own%d", i), CreatedAt: t0},
			{Email: "shared@EXAMPLE.com", Username: fmt.Sprintf("s%d", i), ExternalID: fmt.Sprintf("p%d", i), CreatedAt: t0},
		})
		return err
	})
	if ok, clash := count(errs, nil), count(errs, data.ErrExists); ok != 1 || clash != len(errs)-1 {
		t.Fatalf("%d batches stored, %d refused; want 1 and %d (errors %v)", ok, clash, len(errs)-1, errs)
	}
	us, err := ss[1].ListUsers(ctx)
	if err != nil || len(us) != 2 || us[0].ID != 1 || us[1].ID != 2 {
		t.Fatalf("ListUsers = %+v, %v; want the one batch, IDs 1 and 2", us, err)
	}
}

// BenchmarkCreateAuthCode: what checking the user (the FOR KEY SHARE read
// in the insert's statement) costs on the code-issuing path, against the
// same store's statement for a user ID with no row (nothing to lock) and
// the plain insert this store used before users could be disabled.
//
//	go test -run '^$' -bench CreateAuthCode -benchtime 3s ./data/postgres/
func BenchmarkCreateAuthCode(b *testing.B) {
	s := open(b, pgtest.New(b))
	u, err := s.CreateUser(ctx, data.User{Email: "u@example.com", Username: "u", CreatedAt: t0})
	if err != nil {
		b.Fatal(err)
	}
	cl := data.Client{ID: "c", Name: "C", UnclaimedOwner: "dev@example.com", Type: data.Public, RedirectURIs: []string{"https://app.example.com/cb"}, Scopes: []string{"BOOKING_READ"},
		Status: data.StatusApproved, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateClient(ctx, cl); err != nil {
		b.Fatal(err)
	}
	if err := s.PutGrant(ctx, data.Grant{UserID: u.ID, ClientID: "c", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, UpdatedAt: t0}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	code := func(uid int64) data.AuthCode {
		return data.AuthCode{Hash: data.AuthCodeKey(fmt.Sprintf("oauthd_ac_b%d", n.Add(1))), ClientID: "c", UserID: uid, Scopes: []string{"BOOKING_READ"},
			RedirectURI: "https://app.example.com/cb", CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"checked", func() error { return s.CreateAuthCode(ctx, code(u.ID)) }},
		{"consented", func() error {
			// The approvals' path: the consent read with the code, one
			// transaction (CreateConsentedCode).
			return s.CreateConsentedCode(ctx, code(u.ID), func(_ data.Client, _ data.Grant, found bool) error {
				if !found {
					return data.ErrNotFound
				}
				return nil
			})
		}},
		{"no-user-row", func() error { return s.CreateAuthCode(ctx, code(999)) }},
		{"plain-insert", func() error {
			c := code(u.ID)
			body, _ := json.Marshal(c)
			_, err := s.Pool().Exec(ctx, "INSERT INTO auth_codes (hash, used, user_id, expires_ns, body) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (hash) DO NOTHING",
				c.Hash, c.Used, c.UserID, c.ExpiresAt.UnixNano(), body)
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.run(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
