package postgres_test

import (
	"fmt"
	"testing"

	"oauthd/data"
	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

// BenchmarkRotation: one refresh-token rotation per op on two stores
// (replicas) of one database, as the refresh grant asks for it (with the
// rotation promise, data.WithPresented): "same" on one store, "alternating"
// taking turns. The statements per rotation are TestRotationRoundTrips';
// this measures what they cost (scripts: ns/op here; the PostgreSQL side's
// CPU from outside, docs/PERFORMANCE.md).
func BenchmarkRotation(b *testing.B) {
	for _, mode := range []string{"same", "alternating"} {
		b.Run(mode, func(b *testing.B) {
			url := pgtest.New(b)
			ss := [2]*postgres.Store{open(b, url), open(b, url)}
			code := data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_bench"), ClientID: "c", UserID: 1, CreatedAt: t0, ExpiresAt: t0.Add(1 << 40)}
			if err := ss[0].CreateAuthCode(ctx, code); err != nil {
				b.Fatal(err)
			}
			if _, _, err := ss[0].ExchangeAuthCode(ctx, code.Hash, func(data.AuthCode) (data.Family, error) {
				return data.Family{ID: "f", ClientID: "c", UserID: 1, Scopes: []string{"a"}, TokenHash: data.Hash("rt0"), Tagged: true,
					RotatedAt: t0, ExpiresAt: t0.Add(1 << 40), AbsoluteExp: t0.Add(1 << 41)}, nil
			}); err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				s := ss[0]
				if mode == "alternating" {
					s = ss[n%2]
				}
				presented := data.Hash(fmt.Sprintf("rt%d", n))
				_, err := s.RotateRefreshToken(data.WithPresented(ctx, presented), "f", matching(presented, func(f data.Family) (data.Family, error) {
					f.TokenHash, f.PrevHash = data.Hash(fmt.Sprintf("rt%d", n+1)), f.TokenHash
					f.Generation++
					return f, nil
				}))
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}
