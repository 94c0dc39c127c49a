package bolt_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

// TestUserIndexBuiltOnOpen: a file written before the index by user
// existed (no entries, no marker) gets its index at the next Open, and the
// families in it are listed and removed by user.
func TestUserIndexBuiltOnOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauthd.db")
	s := open(t, path)
	for i, c := range []string{"b", "a", "a"} {
		code := data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_" + string(rune('x'+i))), ClientID: c, UserID: 7,
			RedirectURI: "https://app.example.com/cb", Scopes: []string{"PROFILE_READ"}, CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
		if err := s.CreateAuthCode(ctx, code); err != nil {
			t.Fatal(err)
		}
		id := data.NewFamilyID(t0.Add(time.Duration(i) * time.Millisecond))
		_, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
			return data.Family{ID: id, ClientID: c.ClientID, UserID: c.UserID, Scopes: c.Scopes, TokenHash: data.Hash(id),
				CreatedAt: t0, RotatedAt: t0, ExpiresAt: t0.Add(time.Hour), AbsoluteExp: t0.Add(time.Hour)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Make it an older release's file: no index, no marker.
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket([]byte("families_by_user")); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Delete([]byte("families_by_user_built"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	fams, err := s.ListUserFamilies(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	var clients []string
	for _, f := range fams {
		clients = append(clients, f.ClientID)
	}
	if want := []string{"a", "a", "b"}; !slices.Equal(clients, want) {
		t.Fatalf("ListUserFamilies after the index was built = clients %v; want %v", clients, want)
	}
	r, err := s.RevokeApp(ctx, 7, "a")
	if err != nil || len(r.Families) != 2 {
		t.Fatalf("RevokeApp = %+v, %v; want the two families of client a", r, err)
	}
	if fams, _ := s.ListUserFamilies(ctx, 7); len(fams) != 1 || fams[0].ClientID != "b" {
		t.Fatalf("ListUserFamilies after RevokeApp = %+v; want client b's only", fams)
	}
}

// BenchmarkExchangeAuthCode measures the code exchange on bolt (64
// goroutines): the write that also puts the family's entry in the index
// by user (one more key in the same log record, no more syncs).
func BenchmarkExchangeAuthCode(b *testing.B) {
	s := openTemp(b)
	var mu sync.Mutex
	next := 0
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			i := next
			next++
			mu.Unlock()
			now := t0.Add(time.Duration(i) * time.Microsecond)
			code := data.AuthCode{Hash: data.AuthCodeKey(fmt.Sprintf("oauthd_ac_bench%09d", i)), ClientID: "c", UserID: int64(i%1000 + 1),
				RedirectURI: "https://app.example.com/cb", Scopes: []string{"PROFILE_READ"}, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
			if err := s.CreateAuthCode(ctx, code); err != nil {
				b.Error(err)
				return
			}
			id := data.NewFamilyID(now)
			if _, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
				return data.Family{ID: id, ClientID: c.ClientID, UserID: c.UserID, Scopes: c.Scopes, TokenHash: data.Hash(id),
					CreatedAt: now, RotatedAt: now, ExpiresAt: now.Add(time.Hour), AbsoluteExp: now.Add(time.Hour)}, nil
			}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
