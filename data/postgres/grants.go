package postgres

import (
	"context"
	"fmt"
	"oauthd/data"
	"slices"

	"github.com/jackc/pgx/v5"
)

// RevokeApp implements [data.Store.RevokeApp] in one transaction, one
// statement per table, the grant first (see CreateConsentedCode), codes before families (as a disable does, see
// revokeUser): an exchange whose redeem statement holds the code's row
// makes the code delete wait for its commit, and the family delete, a
// later statement, then sees the family it stored; an exchange that comes
// after the code delete finds no code. A rotation in flight makes the
// family delete wait for it, which then deletes (and tombstones) the
// rotated record; a rotation after it finds no family.
func (s *Store) RevokeApp(ctx context.Context, userID int64, clientID string) (data.AppRevocation, error) {
	const op = "revoke app"
	if err := s.begin(ctx, op); err != nil {
		return data.AppRevocation{}, err
	}
	var r data.AppRevocation
	err := s.tx(ctx, func(tx pgx.Tx) error {
		r = data.AppRevocation{}
		// The grant first: a CreateConsentedCode of the pair holding it
		// (FOR SHARE) makes this wait for its commit, and the code delete,
		// a later statement, then sees its code.
		tag, err := tx.Exec(ctx, `WITH d AS (DELETE FROM grants WHERE user_id = $1 AND client_id = $2 RETURNING user_id, client_id)
			SELECT pg_notify('`+Channel+`', 'grant '||user_id||' '||client_id) FROM d`, userID, clientID)
		if err != nil {
			return err
		}
		r.Grant = tag.RowsAffected() > 0
		tag, err = tx.Exec(ctx, "DELETE FROM auth_codes WHERE user_id = $1 AND body->>'client_id' = $2", userID, clientID)
		if err != nil {
			return err
		}
		r.Codes = int(tag.RowsAffected())
		rows, err := tx.Query(ctx, "DELETE FROM families WHERE user_id = $1 AND client_id = $2 RETURNING body", userID, clientID)
		if err != nil {
			return err
		}
		fams, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (data.Family, error) {
			var b []byte
			if err := row.Scan(&b); err != nil {
				return data.Family{}, err
			}
			return decode[data.Family](b)
		})
		if err != nil {
			return err
		}
		for _, f := range fams {
			rv := data.RevocationOf(f)
			if _, err := tx.Exec(ctx, putTombstoneSQL, rv.GrantID, unixNano(rv.LastIssuedAt), encode(rv)); err != nil {
				return err
			}
			r.Families = append(r.Families, f.ID)
		}
		slices.Sort(r.Families)
		return nil
	})
	for _, id := range r.Families {
		s.fams.drop(id)
	}
	if err != nil {
		return data.AppRevocation{}, fmt.Errorf("%s %q of user %d: %w", op, clientID, userID, err)
	}
	return r, nil
}

// PutGrant implements [data.Store.PutGrant] in one statement (see
// insertChecked).
func (s *Store) PutGrant(ctx context.Context, g data.Grant) error {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "put grant")
	defer span.End()
	if err := s.begin(ctx, "put grant"); err != nil {
		return err
	}
	if err := s.execChecked(ctx, upsertGrant, g.UserID, g.ClientID, encode(g)); err != nil {
		return fmt.Errorf("put grant of user %d to %q: %w", g.UserID, g.ClientID, err)
	}
	return nil
}

// GetGrant implements [data.Store.GetGrant].
func (s *Store) GetGrant(ctx context.Context, userID int64, clientID string) (data.Grant, error) {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "get grant")
	defer span.End()
	if err := s.begin(ctx, "get grant"); err != nil {
		return data.Grant{}, err
	}
	g, err := queryOne[data.Grant](ctx, s.pool, "SELECT body FROM grants WHERE user_id = $1 AND client_id = $2", userID, clientID)
	if err != nil {
		return data.Grant{}, fmt.Errorf("get grant of user %d to %q: %w", userID, clientID, err)
	}
	return g, nil
}

// ListGrants implements [data.Store.ListGrants], ordered by client ID.
func (s *Store) ListGrants(ctx context.Context, userID int64) ([]data.Grant, error) {
	if err := s.begin(ctx, "list grants"); err != nil {
		return nil, err
	}
	gs, err := queryAll[data.Grant](ctx, s.pool, "SELECT body FROM grants WHERE user_id = $1 ORDER BY client_id", userID)
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	return gs, nil
}

// DeleteGrant implements [data.Store.DeleteGrant].
func (s *Store) DeleteGrant(ctx context.Context, userID int64, clientID string) error {
	if err := s.begin(ctx, "delete grant"); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `WITH d AS (DELETE FROM grants WHERE user_id = $1 AND client_id = $2 RETURNING user_id, client_id)
		SELECT pg_notify('`+Channel+`', 'grant '||user_id||' '||client_id) FROM d`, userID, clientID)
	if err != nil {
		return fmt.Errorf("delete grant of user %d to %q: %w", userID, clientID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete grant of user %d to %q: %w", userID, clientID, data.ErrNotFound)
	}
	return nil
}
