package keys

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"oauthd/data"
)

// RefreshSecretKID is the kid of the one record of the key set that is not
// a signing key (state [data.KeySecret]): 32 random bytes from which
// [Manager.RefreshTokenKey] is derived. It is made once, with the first
// keys or by the first Reload of a database that lacks it, sealed with the
// master key like the private keys (and sealed later if a master key is
// configured later: the secret itself never changes), and it is never
// published, listed, rotated, pruned or revoked. Every replica reads the
// same record, so a refresh token tagged by one is recognised by all.
const RefreshSecretKID = "refresh-token-tag-secret"

// refreshKeyInfo is the HKDF info of the refresh-token tag key.
const refreshKeyInfo = "oauthd refresh-token tag v1"

// RefreshTokenKey returns the key that tags refresh tokens
// ([data.NewRefreshToken], [data.CheckRefreshTag]):
// HKDF-SHA256(secret, info "oauthd refresh-token tag v1"), 32 bytes. The
// caller must not modify it. Nil only before the first successful load.
func (m *Manager) RefreshTokenKey() []byte {
	if s := m.snap.Load(); s != nil {
		return s.refreshKey
	}
	return nil
}

// newRefreshSecret returns a fresh secret record.
func newRefreshSecret(now time.Time) data.SigningKey {
	secret := make([]byte, data.RefreshKeySize)
	rand.Read(secret)
	return data.SigningKey{KID: RefreshSecretKID, Alg: "HKDF-SHA256", State: data.KeySecret, Private: secret, CreatedAt: now}
}

// hasRefreshSecret reports whether ks holds the secret record.
func hasRefreshSecret(ks []data.SigningKey) bool {
	return slices.ContainsFunc(ks, isRefreshSecret)
}

func isRefreshSecret(k data.SigningKey) bool { return k.State == data.KeySecret }

// signingKeys returns ks without the secret record.
func signingKeys(ks []data.SigningKey) []data.SigningKey {
	return slices.DeleteFunc(slices.Clone(ks), isRefreshSecret)
}

// refreshKeyOf opens the secret record of ks and derives the tag key.
func (m *Manager) refreshKeyOf(ks []data.SigningKey) ([]byte, error) {
	i := slices.IndexFunc(ks, isRefreshSecret)
	if i < 0 {
		return nil, errors.New("the key set has no refresh-token secret (reload to repair)")
	}
	k := ks[i]
	secret, err := m.privateOf(k)
	if err != nil {
		return nil, err
	}
	if len(secret) != data.RefreshKeySize {
		return nil, fmt.Errorf("the refresh-token secret is %d bytes; want %d", len(secret), data.RefreshKeySize)
	}
	return hkdf.Key(sha256.New, secret, nil, refreshKeyInfo, data.RefreshKeySize)
}
