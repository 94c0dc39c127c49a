package bolt_test

import (
	"path/filepath"
	"slices"
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
