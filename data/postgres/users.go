package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"oauthd/data"
	"oauthd/data/ident"
)

// The rule that a disabled user has no session, code, family or grant, and
// gets none, holds across replicas by a row lock on the user:
//
//   - UpdateUser reads the user FOR UPDATE, and when it disables them,
//     deletes their records in the same transaction, one statement per
//     table (so each statement sees what committed before it started), codes
//     before families (an exchange that redeemed a code before the code
//     delete has committed its family by the time the family delete runs;
//     one that comes after finds no code).
//   - CreateSession, CreateAuthCode and PutGrant are one statement each that
//     reads the user FOR KEY SHARE (the weakest lock that conflicts with FOR
//     UPDATE) and inserts only if the user is not disabled. Against a
//     disable in progress the lock waits for its commit and then reads the
//     disabled row; a disable that comes second waits for the insert's
//     commit, and its deletes then see the new record.
//
// A family deleted here may stay in famCache (of any replica): a rotation
// on that guess updates no row, reads again and finds no family.
//
// A user ID with no user row (records of a user deleted by hand, say) is
// not disabled: the insert goes ahead, as on the other stores.

// insertUser is the one statement that writes a user row.
const insertUser = `INSERT INTO users (id, email_lower, username_lower, external_id, disabled, body) VALUES ($1, $2, $3, $4, $5, $6)`

// userArgs are insertUser's arguments: the unique columns email_lower and
// username_lower hold data.UserKeys (ident.Key; the names are from before).
func userArgs(u data.User, body json.RawMessage) []any {
	e, n := data.UserKeys(u)
	return []any{u.ID, e, n, u.ExternalID, u.Disabled, body}
}

// userClash turns a unique violation on users into ErrExists naming the
// field; other errors are returned as they are.
func userClash(err error, u data.User) error {
	switch {
	case isUnique(err, "users_email"):
		return fmt.Errorf("email %q: %w", u.Email, data.ErrExists)
	case isUnique(err, "users_username"):
		return fmt.Errorf("username %q: %w", u.Username, data.ErrExists)
	case isUnique(err, "users_external_id"):
		return fmt.Errorf("external ID %q: %w", u.ExternalID, data.ErrExists)
	}
	return err
}

// lockUsers is the table lock CreateUsers takes for max(id)+1. SHARE ROW
// EXCLUSIVE conflicts with itself and with writes to users, but not with
// reads nor with the FOR KEY SHARE of CreateSession, CreateAuthCode and
// PutGrant (ROW SHARE): a long `users import` holds up other user writes,
// never a login or a code. (EXCLUSIVE would stall those too.)
const lockUsers = "LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE"

// CreateUsers implements [data.Store.CreateUsers]: one transaction, the
// inserts sent as one batch. IDs come from max(id)+1 under lockUsers, so
// that a refused batch uses up no ID.
func (s *Store) CreateUsers(ctx context.Context, us []data.User) ([]data.User, error) {
	const op = "create user"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	out := make([]data.User, len(us))
	if len(us) == 0 {
		return out, nil
	}
	failed := -1
	err := s.tx(ctx, func(tx pgx.Tx) error {
		failed = -1
		if _, err := tx.Exec(ctx, lockUsers); err != nil {
			return err
		}
		var next int64
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(id), 0) + 1 FROM users").Scan(&next); err != nil {
			return err
		}
		bodies := make([]json.RawMessage, len(us))
		b := &pgx.Batch{}
		for i, u := range us {
			u.ID = next + int64(i)
			bodies[i] = encode(u)
			b.Queue(insertUser, userArgs(u, bodies[i])...)
		}
		br := tx.SendBatch(ctx, b)
		for i := range us {
			if _, err := br.Exec(); err != nil {
				failed = i
				br.Close()
				return err
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		for i, b := range bodies {
			var err error
			if out[i], err = decode[data.User](b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if failed >= 0 {
			if len(us) == 1 {
				return nil, fmt.Errorf("%s: %w", op, userClash(err, us[failed]))
			}
			return nil, fmt.Errorf("%s %d: %w", op, failed+1, userClash(err, us[failed]))
		}
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// GetUserByExternalID implements [data.Store.GetUserByExternalID].
func (s *Store) GetUserByExternalID(ctx context.Context, id string) (data.User, error) {
	const op = "get user by external ID"
	if err := s.begin(ctx, op); err != nil {
		return data.User{}, err
	}
	if id == "" {
		return data.User{}, fmt.Errorf("%s %q: %w", op, id, data.ErrNotFound)
	}
	u, err := queryOne[data.User](ctx, s.pool, "SELECT body FROM users WHERE external_id = $1", id)
	if err != nil {
		return data.User{}, fmt.Errorf("%s %q: %w", op, id, err)
	}
	return u, nil
}

// revokeUser deletes every record of a user, one statement per table, in
// this order (see the comment at the top of this file). Each deleted family
// leaves its tombstone (data.RevocationOf, as every revocation does, so
// offline verifiers following the feed refuse the user's access tokens
// too); each deleted grant is announced as DeleteGrant announces one.
func revokeUser(ctx context.Context, tx pgx.Tx, id int64) error {
	for _, q := range []string{"DELETE FROM sessions WHERE user_id = $1", "DELETE FROM auth_codes WHERE user_id = $1"} {
		if _, err := tx.Exec(ctx, q, id); err != nil {
			return err
		}
	}
	rows, err := tx.Query(ctx, "DELETE FROM families WHERE user_id = $1 RETURNING body", id)
	if err != nil {
		return err
	}
	fams, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (data.Family, error) {
		var b []byte
		if err := r.Scan(&b); err != nil {
			return data.Family{}, err
		}
		return decode[data.Family](b)
	})
	if err != nil {
		return err
	}
	for _, f := range fams {
		r := data.RevocationOf(f)
		if _, err := tx.Exec(ctx, putTombstoneSQL, r.GrantID, unixNano(r.LastIssuedAt), encode(r)); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, `WITH d AS (DELETE FROM grants WHERE user_id = $1 RETURNING user_id, client_id)
		SELECT pg_notify('`+Channel+`', 'grant '||user_id||' '||client_id) FROM d`, id)
	return err
}

// UpdateUser implements [data.Store.UpdateUser]: the user's row is locked
// FOR UPDATE from the read to the commit, so updates apply one after
// another and a disable serializes with the inserts that check it.
func (s *Store) UpdateUser(ctx context.Context, id int64, update func(data.User) (data.User, error)) (data.User, error) {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "update user")
	defer span.End()
	const op = "update user"
	if err := s.begin(ctx, op); err != nil {
		return data.User{}, err
	}
	var out data.User
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var b []byte
		err := tx.QueryRow(ctx, "SELECT body FROM users WHERE id = $1 FOR UPDATE", id).Scan(&b)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%s %d: %w", op, id, data.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("%s %d: %w", op, id, err)
		}
		old, err := decode[data.User](b)
		if err != nil {
			return fmt.Errorf("%s %d: %w", op, id, err)
		}
		arg, _ := decode[data.User](b) // update may change its argument
		next, err := update(arg)
		if err != nil {
			return err
		}
		if next.ID != id {
			return fmt.Errorf("%s %d: %w", op, id, &data.RuleError{Field: "id", Reason: "an update cannot change the user's ID"})
		}
		nb := encode(next)
		// A key that does not change is left as it is: a user an upgrade
		// left out of an index for a clash (data.Clash, an empty column)
		// can still be updated and disabled.
		oe, on := data.UserKeys(old)
		ne, nn := data.UserKeys(next)
		if _, err := tx.Exec(ctx, `UPDATE users SET email_lower = CASE WHEN $7 THEN email_lower ELSE $2 END,
			username_lower = CASE WHEN $8 THEN username_lower ELSE $3 END,
			external_id = $4, disabled = $5, body = $6 WHERE id = $1`,
			append(userArgs(next, nb), oe == ne, on == nn)...); err != nil {
			return fmt.Errorf("%s %d: %w", op, id, userClash(err, next))
		}
		if next.Disabled && !old.Disabled {
			if err := revokeUser(ctx, tx, id); err != nil {
				return fmt.Errorf("%s %d: revoke: %w", op, id, err)
			}
		}
		out, err = decode[data.User](nb)
		return err
	})
	if err != nil {
		return data.User{}, err
	}
	return out, nil
}

// CreateUser implements [data.Store.CreateUser] as a batch of one (see
// [Store.CreateUsers]).
func (s *Store) CreateUser(ctx context.Context, u data.User) (data.User, error) {
	us, err := s.CreateUsers(ctx, []data.User{u})
	if err != nil {
		return data.User{}, err
	}
	return us[0], nil
}

// GetUser implements [data.Store.GetUser].
func (s *Store) GetUser(ctx context.Context, id int64) (data.User, error) {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "get user")
	defer span.End()
	if err := s.begin(ctx, "get user"); err != nil {
		return data.User{}, err
	}
	u, err := queryOne[data.User](ctx, s.pool, "SELECT body FROM users WHERE id = $1", id)
	if err != nil {
		return data.User{}, fmt.Errorf("get user %d: %w", id, err)
	}
	return u, nil
}

// GetUserByLogin implements [data.Store.GetUserByLogin]: an email match
// comes before a username match.
func (s *Store) GetUserByLogin(ctx context.Context, login string) (data.User, error) {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "get user by login")
	defer span.End()
	if err := s.begin(ctx, "get user by login"); err != nil {
		return data.User{}, err
	}
	l := ident.Key(login)
	if l == "" {
		return data.User{}, fmt.Errorf("get user by login: %w", data.ErrNotFound)
	}
	u, err := queryOne[data.User](ctx, s.pool,
		"SELECT body FROM users WHERE email_lower = $1 OR username_lower = $1 ORDER BY email_lower = $1 DESC LIMIT 1", l)
	if err != nil {
		return data.User{}, fmt.Errorf("get user by login: %w", err)
	}
	return u, nil
}

// ListUsers implements [data.Store.ListUsers], ordered by ID.
func (s *Store) ListUsers(ctx context.Context) ([]data.User, error) {
	if err := s.begin(ctx, "list users"); err != nil {
		return nil, err
	}
	us, err := queryAll[data.User](ctx, s.pool, "SELECT body FROM users ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return us, nil
}
