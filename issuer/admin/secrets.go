package admin

import (
	"context"
	"fmt"
	"oauthd/data"
	"slices"
	"time"
)

func newSecret(now time.Time) (string, data.ClientSecret) {
	secret := data.NewSecret(data.PrefixClientSecret)
	return secret, data.ClientSecret{ID: data.NewID("cs_", 9), Hash: data.Hash(secret), CreatedAt: now}
}

func secretViews(ss []data.ClientSecret) []SecretView {
	out := make([]SecretView, 0, len(ss))
	for _, s := range ss {
		v := SecretView{SecretID: s.ID, CreatedAt: s.CreatedAt}
		if !s.LastUsedAt.IsZero() {
			t := s.LastUsedAt
			v.LastUsedAt = &t
		}
		out = append(out, v)
	}
	return out
}

// GenerateSecret implements [Service.GenerateSecret]: refused when the client
// already has [data.MaxActiveSecrets] (checked again inside the store's
// transaction, so concurrent calls never make a third).
func (l *Local) GenerateSecret(ctx context.Context, id string) (CreatedSecret, error) {
	secret, s := newSecret(l.now().UTC())
	_, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		if c.Type == data.Public {
			return c, newError(data.ErrInvalid, fmt.Sprintf("client %s is public and has no secrets", id))
		}
		if len(c.Secrets) >= data.MaxActiveSecrets {
			return c, tooMany(id)
		}
		c.Secrets = append(c.Secrets, s)
		return c, nil
	})
	if err != nil {
		return CreatedSecret{}, err
	}
	l.audit(ctx, "secret_generated", "client_id", id, "secret_id", s.ID)
	return CreatedSecret{SecretID: s.ID, ClientSecret: secret}, nil
}

// ListSecrets implements [Service.ListSecrets].
func (l *Local) ListSecrets(ctx context.Context, id string) ([]SecretView, error) {
	c, err := l.getClient(ctx, id)
	if err != nil {
		return nil, err
	}
	return secretViews(c.Secrets), nil
}

// RevokeSecret implements [Service.RevokeSecret]. It takes effect at once; a
// confidential client keeps at least one secret.
func (l *Local) RevokeSecret(ctx context.Context, id, secretID string) error {
	_, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		i := slices.IndexFunc(c.Secrets, func(s data.ClientSecret) bool { return s.ID == secretID })
		if i < 0 {
			return c, newError(data.ErrNotFound, fmt.Sprintf("client %s has no active secret %q; list them with `oauthd clients secrets list %s`", id, secretID, id))
		}
		if len(c.Secrets) == 1 && c.Type == data.Confidential {
			return c, newError(data.ErrLastSecret, fmt.Sprintf("%s is the last secret of client %s; generate a new one first with `oauthd clients secrets generate %s`", secretID, id, id))
		}
		c.Secrets = slices.Delete(slices.Clone(c.Secrets), i, i+1)
		return c, nil
	})
	if err != nil {
		return err
	}
	l.audit(ctx, "secret_revoked", "client_id", id, "secret_id", secretID)
	return nil
}
