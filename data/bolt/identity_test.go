package bolt_test

import (
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data/bolt"
	"oauthd/data/datatest"
)

// TestUpgradeIdentity: a file of schema 1 (indexes keyed by
// strings.ToLower, owners as emails) holding users who are one identifier
// under ident.Key, opened by this release: see
// datatest.CheckIdentityUpgrade. Reopening does not upgrade again.
func TestUpgradeIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauthd.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := datatest.OldIdentity()
	err = db.Update(func(tx *bbolt.Tx) error {
		b := map[string]*bbolt.Bucket{}
		for _, name := range []string{"meta", "users", "users_email", "users_username", "clients"} {
			if b[name], err = tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		if err := b["meta"].Put([]byte("schema_version"), []byte("1")); err != nil {
			return err
		}
		for _, u := range old.Users {
			id := make([]byte, 8)
			binary.BigEndian.PutUint64(id, uint64(u.ID))
			raw, _ := json.Marshal(u)
			if err := b["users"].Put(id, raw); err != nil {
				return err
			}
			if _, err := b["users"].NextSequence(); err != nil {
				return err
			}
			if err := b["users_email"].Put([]byte(strings.ToLower(u.Email)), id); err != nil {
				return err
			}
			if err := b["users_username"].Put([]byte(strings.ToLower(u.Username)), id); err != nil {
				return err
			}
		}
		for _, c := range old.Clients {
			if err := b["clients"].Put([]byte(c.ID), c.Body); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	s, err := bolt.Open(path, bolt.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatalf("open a schema 1 file: %v", err)
	}
	// The operator is told of each clash and each unclaimed client.
	for _, want := range []string{"identifier clash: user left out of the index (see docs/IDENTITY.md)\" user_id=2 held_by=1 field=email",
		"identifier clash: user left out of the index (see docs/IDENTITY.md)\" user_id=4 held_by=3 field=username",
		"client_id=c-ambiguous", "client_id=c-gone"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the upgrade's log lacks %q:\n%s", want, logged.String())
		}
	}
	datatest.CheckIdentityUpgrade(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Once upgraded, a reopen leaves the records as they are.
	s = open(t, path)
	defer s.Close()
	if u, err := s.GetUserByLogin(ctx, "longs@plat.test"); err != nil || u.ID != 2 {
		t.Errorf("after a reopen, GetUserByLogin(longs@plat.test) = %d, %v; want 2", u.ID, err)
	}
}
