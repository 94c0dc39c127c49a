package postgres_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/postgres/pgtest"
)

// TestSharedRevokeAppRace removes an app on one store while the other
// store (another replica) keeps exchanging the pair's codes and rotating
// its families: once the removal has returned and the racers have
// stopped, no code, family or grant of the pair is left, every racer's
// last answer is ErrNotFound, and the user's other app keeps its family.
func TestSharedRevokeAppRace(t *testing.T) { testSharedRevokeAppRace(t, pgtest.New) }

func testSharedRevokeAppRace(t *testing.T, newDB func(testing.TB) string) {
	ss := twoStoresOn(t, newDB(t))
	for _, id := range []string{"c", "other"} {
		if err := ss[0].CreateClient(ctx, client(id)); err != nil {
			t.Fatal(err)
		}
	}
	u, err := ss[0].CreateUser(ctx, data.User{Email: "u@example.com", Username: "u", CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	fam := func(id, clientID string) func(data.AuthCode) (data.Family, error) {
		return func(c data.AuthCode) (data.Family, error) {
			return data.Family{ID: id, ClientID: clientID, UserID: c.UserID, TokenHash: data.Hash(id), CreatedAt: t0, RotatedAt: t0,
				ExpiresAt: t0.Add(time.Hour), AbsoluteExp: t0.Add(time.Hour)}, nil
		}
	}
	newCode := func(key, clientID string) data.AuthCode {
		return data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_" + key), ClientID: clientID, UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	}
	c := newCode("keep", "other")
	if err := ss[0].CreateAuthCode(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ss[0].ExchangeAuthCode(ctx, c.Hash, fam("keep", "other")); err != nil {
		t.Fatal(err)
	}
	for round := range 6 {
		const codes, live = 30, 4
		for i := range codes {
			if err := ss[i%2].CreateAuthCode(ctx, newCode(fmt.Sprintf("r%d-%d", round, i), "c")); err != nil {
				t.Fatal(err)
			}
		}
		for i := range live {
			key := fmt.Sprintf("live-r%d-%d", round, i)
			c := newCode(key, "c")
			if err := ss[0].CreateAuthCode(ctx, c); err != nil {
				t.Fatal(err)
			}
			if _, _, err := ss[0].ExchangeAuthCode(ctx, c.Hash, fam(key, "c")); err != nil {
				t.Fatal(err)
			}
		}
		if err := ss[0].PutGrant(ctx, data.Grant{UserID: u.ID, ClientID: "c", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		last := make([]error, 4)
		for w := range last {
			wg.Go(func() {
				for i := 0; ; i++ {
					var err error
					if w%2 == 0 { // exchangers, on store 1
						if i >= codes/2 {
							return
						}
						key := fmt.Sprintf("r%d-%d", round, i*2+w/2)
						_, _, err = ss[1].ExchangeAuthCode(ctx, data.AuthCodeKey("oauthd_ac_"+key), fam("f-"+key, "c"))
					} else { // rotators, on store 1
						id := fmt.Sprintf("live-r%d-%d", round, (i+w)%live)
						_, err = ss[1].RotateRefreshToken(ctx, id, func(f data.Family) (data.Family, error) {
							f.Generation++
							f.RotatedAt = f.RotatedAt.Add(time.Second)
							return f, nil
						})
						if i > 200 && errors.Is(err, data.ErrNotFound) {
							last[w] = err
							return
						}
					}
					last[w] = err
					if errors.Is(err, data.ErrNotFound) && w%2 == 1 {
						continue // one family gone; try the next until all are
					}
					if err != nil && !errors.Is(err, data.ErrNotFound) {
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		r, err := ss[0].RevokeApp(ctx, u.ID, "c")
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for w, err := range last {
			if err != nil && !errors.Is(err, data.ErrNotFound) {
				t.Fatalf("round %d: racer %d ended with %v; want nil or ErrNotFound", round, w, err)
			}
		}
		left := map[string]int{}
		for _, table := range []string{"auth_codes", "families", "grants"} {
			var n int
			if err := ss[0].Pool().QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE (body->>'user_id')::bigint = $1 AND body->>'client_id' = 'c'", u.ID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				left[table] = n
			}
		}
		if len(left) > 0 {
			t.Fatalf("round %d: after RevokeApp (%d families) and the racers, left of the pair: %v", round, len(r.Families), left)
		}
		t.Logf("round %d: RevokeApp removed %d families and %d codes", round, len(r.Families), r.Codes)
	}
	if _, err := ss[1].GetFamily(ctx, "keep"); err != nil {
		t.Fatalf("the user's other app: %v", err)
	}
}
