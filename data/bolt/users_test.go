package bolt_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"oauthd/data"
)

// BenchmarkDisableUser measures `users disable` on a database holding
// 20,000 refresh-token families of other users (and 5 of the user): the
// disable runs as an exclusive op and scans the sessions, codes and
// families buckets. Each iteration disables, then enables (not timed).
func BenchmarkDisableUser(b *testing.B) {
	s := openTemp(b)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.CreateClient(ctx, data.Client{ID: "c1", Name: "c", OwnerID: 1, Type: data.Confidential,
		RedirectURIs: []string{"https://app.example/cb"}, Scopes: []string{"BOOKING_READ"}, Status: data.StatusApproved,
		Secrets: []data.ClientSecret{{ID: "cs_1", Hash: data.Hash("s")}}, CreatedAt: t0}); err != nil {
		b.Fatal(err)
	}
	var users []data.User
	for i := range 101 {
		u, err := s.CreateUser(ctx, data.User{Email: fmt.Sprintf("u%d@example.com", i), CreatedAt: t0})
		if err != nil {
			b.Fatal(err)
		}
		users = append(users, u)
	}
	target := users[0].ID
	var wg sync.WaitGroup
	for g := range 100 { // concurrent, so that the group commit batches them
		wg.Go(func() {
			for i := range 200 {
				uid := users[1+g].ID
				if g == 0 && i < 5 {
					uid = target
				}
				id := fmt.Sprintf("fam-%03d-%03d", g, i)
				code := data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_" + id), ClientID: "c1", UserID: uid,
					RedirectURI: "https://app.example/cb", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
				if err := s.CreateAuthCode(ctx, code); err != nil {
					b.Error(err)
					return
				}
				if _, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
					return data.Family{ID: id, ClientID: "c1", UserID: c.UserID, TokenHash: data.Hash(id), CreatedAt: t0,
						RotatedAt: t0, ExpiresAt: t0.Add(time.Hour), AbsoluteExp: t0.Add(time.Hour)}, nil
				}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	set := func(off bool) {
		if _, err := s.UpdateUser(ctx, target, func(u data.User) (data.User, error) { u.Disabled = off; return u, nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		set(true)
		b.StopTimer()
		set(false)
		b.StartTimer()
	}
}
