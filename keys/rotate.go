package keys

import (
	"context"
	"fmt"
	"slices"
	"time"

	"oauthd/data"
)

// RotateResult reports a rotation.
type RotateResult struct {
	Active  Info `json:"active"`           // the promoted key (was next)
	Retired Info `json:"retired,omitzero"` // the key that was active
	Next    Info `json:"next"`             // the new next key
	// Warning is set when the promoted key was published less than
	// JWKSMaxAge ago: a resource server that cached the JWKS before it
	// appeared and does not refetch on an unknown kid may reject its
	// tokens until its cache expires.
	Warning string `json:"warning,omitempty"`
}

// Rotate promotes the next key to active (ActivatedAt = now), retires the
// active key (RetiredAt = now; its private key is deleted: it will never
// sign again, but stays published until [Manager.Prune] removes it) and
// makes a new next key of alg ("" = Config.Alg). It is one store
// transaction: concurrent rotations serialize.
func (m *Manager) Rotate(ctx context.Context, alg string) (RotateResult, error) {
	if alg == "" {
		alg = m.cfg.Alg
	}
	if !supported(alg) {
		return RotateResult{}, fmt.Errorf("rotate: alg %q: %w", alg, ErrUnsupportedAlg)
	}
	cand, err := m.newKey(alg)
	if err != nil {
		return RotateResult{}, fmt.Errorf("rotate: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Now()
	var res RotateResult
	ks, err := m.cfg.Store.UpdateKeys(ctx, func(cur []data.SigningKey) ([]data.SigningKey, error) {
		res = RotateResult{}
		out := slices.Clone(cur)
		next := indexOf(out, data.KeyNext)
		if next < 0 {
			return nil, fmt.Errorf("no next key to promote (reload to repair): %w", ErrNoSigningKey)
		}
		if a := indexOf(out, data.KeyActive); a >= 0 {
			retire(&out[a], now)
			res.Retired = infoOf(out[a])
		}
		out[next].State, out[next].ActivatedAt = data.KeyActive, now
		res.Active = infoOf(out[next])
		if age := now.Sub(out[next].CreatedAt); age < m.cfg.JWKSMaxAge {
			res.Warning = fmt.Sprintf("key %s was published only %s ago: resource servers that cache the JWKS for up to %s and do not refetch on an unknown kid may reject tokens of key %s for a while",
				out[next].KID, age.Round(time.Second), m.cfg.JWKSMaxAge, out[next].KID)
		}
		out = append(out, cand)
		res.Next = infoOf(cand)
		return out, nil
	})
	if err != nil {
		return RotateResult{}, fmt.Errorf("rotate: %w", err)
	}
	if err := m.install(ks); err != nil {
		return RotateResult{}, fmt.Errorf("rotate: %w", err)
	}
	m.log.InfoContext(ctx, "signing keys rotated", "active", res.Active.KID, "retired", res.Retired.KID, "next", res.Next.KID, "alg", alg)
	return res, nil
}

// retire moves k to retired and forgets its private key.
func retire(k *data.SigningKey, now time.Time) {
	k.State, k.RetiredAt = data.KeyRetired, now
	k.Private, k.Sealed = nil, false
}

// Revoke removes the key kid at once: it leaves the JWKS and tokens it
// signed stop verifying. Revoking the active key promotes the next key
// and makes a new next key; revoking the next key makes a new next key.
// An unknown kid gives an error wrapping [ErrUnknownKey].
func (m *Manager) Revoke(ctx context.Context, kid string) error {
	// A replacement is made up front (outside the transaction); it is
	// dropped when kid is a retired key.
	cand, err := m.newKey(m.cfg.Alg)
	if err != nil {
		return fmt.Errorf("revoke key %q: %w", truncate(kid, 64), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Now()
	var state data.KeyState
	ks, err := m.cfg.Store.UpdateKeys(ctx, func(cur []data.SigningKey) ([]data.SigningKey, error) {
		i := slices.IndexFunc(cur, func(k data.SigningKey) bool { return k.KID == kid && !isRefreshSecret(k) })
		if i < 0 {
			return nil, ErrUnknownKey
		}
		state = cur[i].State
		out := slices.Delete(slices.Clone(cur), i, i+1)
		switch state {
		case data.KeyActive:
			next := indexOf(out, data.KeyNext)
			if next < 0 {
				return nil, fmt.Errorf("no next key to promote: %w", ErrNoSigningKey)
			}
			out[next].State, out[next].ActivatedAt = data.KeyActive, now
			out = append(out, cand)
		case data.KeyNext:
			out = append(out, cand)
		}
		return out, nil
	})
	if err != nil {
		return fmt.Errorf("revoke key %q: %w", truncate(kid, 64), err)
	}
	if err := m.install(ks); err != nil {
		return fmt.Errorf("revoke key %q: %w", kid, err)
	}
	m.log.WarnContext(ctx, "signing key revoked", "kid", kid, "state", string(state))
	return nil
}

// Prune removes the retired keys whose tokens have all expired: those
// retired more than TokenTTL + Leeway ago.
func (m *Manager) Prune(ctx context.Context) error {
	now := m.cfg.Now()
	expired := func(k data.SigningKey) bool {
		return k.State == data.KeyRetired && now.After(k.RetiredAt.Add(m.cfg.TokenTTL+m.cfg.Leeway))
	}
	ks, err := m.cfg.Store.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("prune signing keys: %w", err)
	}
	if !slices.ContainsFunc(ks, expired) {
		return nil // no write transaction when there is nothing to do
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var pruned []string
	ks, err = m.cfg.Store.UpdateKeys(ctx, func(cur []data.SigningKey) ([]data.SigningKey, error) {
		pruned = pruned[:0]
		out := make([]data.SigningKey, 0, len(cur))
		for _, k := range cur {
			if expired(k) {
				pruned = append(pruned, k.KID)
				continue
			}
			out = append(out, k)
		}
		return out, nil
	})
	if err != nil {
		return fmt.Errorf("prune signing keys: %w", err)
	}
	if err := m.install(ks); err != nil {
		return fmt.Errorf("prune signing keys: %w", err)
	}
	for _, kid := range pruned {
		m.log.InfoContext(ctx, "retired signing key removed", "kid", kid)
	}
	return nil
}

// Run prunes expired keys and reloads the store every [RunInterval] until
// ctx is done, so changes the CLI made to the store reach this process.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(RunInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := m.Prune(ctx); err != nil && ctx.Err() == nil {
			m.log.ErrorContext(ctx, "prune signing keys", "err", err)
		}
		if err := m.Reload(ctx); err != nil && ctx.Err() == nil {
			m.log.ErrorContext(ctx, "reload signing keys", "err", err)
		}
	}
}
