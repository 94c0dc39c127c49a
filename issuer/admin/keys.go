package admin

import (
	"context"
	"errors"
	"fmt"

	"oauthd/data"
	"oauthd/keys"
)

// KeyManager is the part of *keys.Manager the operator API uses.
type KeyManager interface {
	List(ctx context.Context) ([]keys.Info, error)
	Rotate(ctx context.Context, alg string) (keys.RotateResult, error)
	Revoke(ctx context.Context, kid string) error
}

// errNoSigningKeys: listing creates no key (a read never writes).
var errNoSigningKeys = newError(data.ErrNotFound, "no signing keys yet: start `oauthd serve` or `store copy` into it")

var errNoKeys = newError(data.ErrInvalid, "no key manager is configured; key commands need the database")

// ListKeys implements [Service.ListKeys].
func (l *Local) ListKeys(ctx context.Context) ([]keys.Info, error) {
	if l.keys == nil {
		return nil, errNoKeys
	}
	ks, err := l.keys.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	if len(ks) == 0 {
		return nil, errNoSigningKeys
	}
	return ks, nil
}

// RotateKeys implements [Service.RotateKeys]: next becomes active, active
// becomes retired, a new next key is made (alg "" = the configured default).
func (l *Local) RotateKeys(ctx context.Context, alg string) (keys.RotateResult, error) {
	if l.keys == nil {
		return keys.RotateResult{}, errNoKeys
	}
	res, err := l.keys.Rotate(ctx, alg)
	if errors.Is(err, keys.ErrUnsupportedAlg) {
		return keys.RotateResult{}, newError(data.ErrInvalid, fmt.Sprintf("%q is not a supported algorithm; use ES256, EdDSA or RS256", alg))
	}
	if err != nil {
		return keys.RotateResult{}, fmt.Errorf("rotate keys: %w", err)
	}
	l.audit(ctx, "key_rotated", "alg", alg)
	return res, nil
}

// RevokeKey implements [Service.RevokeKey]: the key leaves the JWKS at once.
func (l *Local) RevokeKey(ctx context.Context, kid string) error {
	if l.keys == nil {
		return errNoKeys
	}
	err := l.keys.Revoke(ctx, kid)
	if errors.Is(err, keys.ErrUnknownKey) || errors.Is(err, data.ErrNotFound) {
		return newError(data.ErrNotFound, fmt.Sprintf("no signing key with kid %q; list them with `oauthd keys list`", kid))
	}
	if err != nil {
		return fmt.Errorf("revoke key %q: %w", kid, err)
	}
	l.audit(ctx, "key_revoked", "kid", kid)
	return nil
}
