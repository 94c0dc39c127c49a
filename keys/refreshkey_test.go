package keys_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"oauthd/data"
	"oauthd/keys"
)

// TestRefreshTokenKey: the tag key is made with the first keys, is the
// same for every manager on the store (replicas, restarts), survives a
// master key configured later, and the secret behind it is never
// published, listed, rotated or revoked.
func TestRefreshTokenKey(t *testing.T) {
	c := newClock()
	st := newStore()
	m := newManager(t, st, c, nil)
	k := m.RefreshTokenKey()
	if len(k) != data.RefreshKeySize {
		t.Fatalf("RefreshTokenKey() = %d bytes; want %d", len(k), data.RefreshKeySize)
	}
	ks, _ := st.ListKeys(ctxT(t))
	for _, sk := range ks {
		if sk.State == data.KeySecret && bytes.Contains(sk.Private, k) {
			t.Fatal("the stored secret is the tag key itself; want the key derived from it")
		}
	}
	if other := newManager(t, st, c, nil); !bytes.Equal(other.RefreshTokenKey(), k) {
		t.Fatal("a second manager on the same store (a replica) derives another key")
	}
	if err := m.Reload(ctxT(t)); err != nil || !bytes.Equal(m.RefreshTokenKey(), k) {
		t.Fatalf("after Reload: %v, key changed %v", err, !bytes.Equal(m.RefreshTokenKey(), k))
	}

	// A master key configured later seals the secret; the key stays.
	mk := bytes.Repeat([]byte{1}, keys.MasterKeySize)
	sealed := newManager(t, st, c, func(cfg *keys.Config) { cfg.MasterKey = mk })
	if !bytes.Equal(sealed.RefreshTokenKey(), k) {
		t.Fatal("configuring a master key changed the refresh-token key: every issued refresh token would look forged")
	}
	ks, _ = st.ListKeys(ctxT(t))
	for _, sk := range ks {
		if sk.State == data.KeySecret && !sk.Sealed {
			t.Fatal("the secret is stored unsealed although a master key is configured")
		}
	}
	if _, err := keys.New(ctxT(t), keys.Config{Store: st, Logger: discard(), Now: c.Now}); !errors.Is(err, keys.ErrSealed) {
		t.Fatalf("keys.New without the master key on a sealed secret: %v; want ErrSealed", err)
	}

	// Never listed, published, rotated away or revoked.
	infos, err := sealed.List(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if i.KID == keys.RefreshSecretKID || i.State == data.KeySecret {
			t.Fatalf("List shows the refresh-token secret: %+v", i)
		}
	}
	if strings.Contains(string(sealed.JWKS()), keys.RefreshSecretKID) {
		t.Fatal("the JWKS names the refresh-token secret")
	}
	if _, err := sealed.Rotate(ctxT(t), ""); err != nil {
		t.Fatal(err)
	}
	if err := sealed.Revoke(ctxT(t), keys.RefreshSecretKID); !errors.Is(err, keys.ErrUnknownKey) {
		t.Fatalf("Revoke(the secret) = %v; want ErrUnknownKey", err)
	}
	c.Add(2 * keys.DefaultTokenTTL)
	if err := sealed.Prune(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sealed.RefreshTokenKey(), k) {
		t.Fatal("rotate, revoke or prune changed the refresh-token key")
	}
}

// TestRefreshTokenKeyAddedToOldStore: a key set written before the secret
// existed gets one at the next load, once, whoever loads first.
func TestRefreshTokenKeyAddedToOldStore(t *testing.T) {
	c := newClock()
	st := newStore()
	newManager(t, st, c, nil)
	// Remove the secret, as in a database of an earlier release.
	if _, err := st.UpdateKeys(ctxT(t), func(ks []data.SigningKey) ([]data.SigningKey, error) {
		var out []data.SigningKey
		for _, k := range ks {
			if k.State != data.KeySecret {
				out = append(out, k)
			}
		}
		return out, nil
	}); err != nil {
		t.Fatal(err)
	}
	a := newManager(t, st, c, nil)
	b := newManager(t, st, c, nil)
	if a.RefreshTokenKey() == nil || !bytes.Equal(a.RefreshTokenKey(), b.RefreshTokenKey()) {
		t.Fatal("two loads of an old key set derive different refresh-token keys")
	}
	_, n := states(t, st)
	if n[data.KeySecret] != 1 {
		t.Fatalf("%d secrets stored; want 1", n[data.KeySecret])
	}
}
