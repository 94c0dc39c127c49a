package postgres

import (
	"context"
	"errors"
	"fmt"
	"oauthd/data"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// insertChecked is the statement shape of CreateAuthCode, CreateSession
// and PutGrant: the user's row is read FOR KEY SHARE (see users.go) and the
// insert (%s, its $1 the user ID) happens only if the user is not disabled.
// It returns whether the user is disabled and whether a row was written.
const insertChecked = `WITH u AS MATERIALIZED (SELECT disabled FROM users WHERE id = $1 FOR KEY SHARE),
	i AS (%s RETURNING 1)
SELECT coalesce((SELECT disabled FROM u), false), EXISTS (SELECT 1 FROM i)`

// notDisabled is the condition insertChecked's insert is made on.
const notDisabled = `WHERE NOT coalesce((SELECT disabled FROM u), false)`

var (
	insertCode = fmt.Sprintf(insertChecked, `INSERT INTO auth_codes (user_id, hash, used, expires_ns, body)
		SELECT $1, $2, $3, $4, $5 `+notDisabled+` ON CONFLICT (hash) DO NOTHING`)
	insertSession = fmt.Sprintf(insertChecked, `INSERT INTO sessions (user_id, hash, expires_ns, body)
		SELECT $1, $2, $3, $4 `+notDisabled+` ON CONFLICT (hash) DO NOTHING`)
	upsertGrant = fmt.Sprintf(insertChecked, `INSERT INTO grants (user_id, client_id, body)
		SELECT $1, $2, $3 `+notDisabled+` ON CONFLICT (user_id, client_id) DO UPDATE SET body = excluded.body`)
)

// execChecked runs an insertChecked statement: ErrUserDisabled when the
// user is disabled, ErrExists when nothing was written.
func (s *Store) execChecked(ctx context.Context, sql string, userID int64, args ...any) error {
	var disabled, wrote bool
	if err := s.pool.QueryRow(ctx, sql, append([]any{userID}, args...)...).Scan(&disabled, &wrote); err != nil {
		return err
	}
	switch {
	case disabled:
		return fmt.Errorf("user %d: %w", userID, data.ErrUserDisabled)
	case !wrote:
		return data.ErrExists
	}
	return nil
}

// CreateAuthCode implements [data.Store.CreateAuthCode] in one statement
// (see insertChecked).
func (s *Store) CreateAuthCode(ctx context.Context, c data.AuthCode) error {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "create auth code")
	defer span.End()
	if err := s.begin(ctx, "create auth code"); err != nil {
		return err
	}
	if err := data.ValidateAuthCode(c); err != nil {
		return fmt.Errorf("create auth code: %w", err)
	}
	if err := s.execChecked(ctx, insertCode, c.UserID, c.Hash, c.Used, unixNano(c.ExpiresAt), encode(c)); err != nil {
		return fmt.Errorf("create auth code: %w", err)
	}
	return nil
}

// CreateConsentedCode implements [data.Store.CreateConsentedCode] in one
// transaction: the user's row FOR KEY SHARE (a disable waits for it, as
// for insertChecked), the client, the grant FOR SHARE, then the code.
// RevokeApp deletes the grant first: a removal that comes first leaves no
// grant row to read (the read waits for its commit, then finds the row
// gone); one that comes after waits on the grant's lock until this commits,
// and its later statements see the code and delete it.
func (s *Store) CreateConsentedCode(ctx context.Context, c data.AuthCode, check func(data.Client, data.Grant, bool) error) error {
	const op = "create consented code"
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	if err := data.ValidateAuthCode(c); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	body := encode(c)
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var disabled bool
		err := tx.QueryRow(ctx, "SELECT disabled FROM users WHERE id = $1 FOR KEY SHARE", c.UserID).Scan(&disabled)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case disabled:
			return fmt.Errorf("user %d: %w", c.UserID, data.ErrUserDisabled)
		}
		cl, err := queryOne[data.Client](ctx, tx, "SELECT body FROM clients WHERE id = $1", c.ClientID)
		if err != nil {
			return fmt.Errorf("client %q: %w", c.ClientID, err)
		}
		g, err := queryOne[data.Grant](ctx, tx, "SELECT body FROM grants WHERE user_id = $1 AND client_id = $2 FOR SHARE", c.UserID, c.ClientID)
		found := err == nil
		if err != nil && !errors.Is(err, data.ErrNotFound) {
			return err
		}
		if err := check(cl, g, found); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO auth_codes (user_id, hash, used, expires_ns, body) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (hash) DO NOTHING`, c.UserID, c.Hash, c.Used, unixNano(c.ExpiresAt), body)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return data.ErrExists
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// redeem marks the code used and inserts the family in one statement: the
// UPDATE matches only a code that is still unused (a concurrent exchange
// that committed first leaves it nothing to match, so nothing is
// inserted), and a family ID that exists already fails the whole
// statement, code included.
const redeem = `WITH c AS (
	UPDATE auth_codes SET used = true, body = $2 WHERE hash = $1 AND NOT used RETURNING 1)
INSERT INTO families (id, client_id, user_id, expires_ns, gc_ns, body) SELECT $3, $4, $7, $5, $5, $6 FROM c`

// ExchangeAuthCode implements [data.Store.ExchangeAuthCode]. Of any number
// of concurrent exchanges of one code, on any number of replicas, exactly
// one redeems it (see redeem); the others read the code again and get
// [data.ErrCodeUsed].
func (s *Store) ExchangeAuthCode(ctx context.Context, hash []byte, exchange func(data.AuthCode) (data.Family, error)) (data.AuthCode, data.Family, error) {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "exchange auth code")
	defer span.End()
	const op = "exchange auth code"
	if err := s.begin(ctx, op); err != nil {
		return data.AuthCode{}, data.Family{}, err
	}
	for attempt := 1; ; attempt++ {
		var used bool
		var b []byte
		err := s.pool.QueryRow(ctx, "SELECT used, body FROM auth_codes WHERE hash = $1", hash).Scan(&used, &b)
		if errors.Is(err, pgx.ErrNoRows) {
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w", op, data.ErrNotFound)
		}
		if err != nil {
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w", op, err)
		}
		code, err := decode[data.AuthCode](b)
		if err != nil {
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w", op, err)
		}
		if used || code.Used {
			code.Used = true
			return code, data.Family{}, fmt.Errorf("%s: %w", op, data.ErrCodeUsed)
		}
		arg, _ := decode[data.AuthCode](b)
		fam, err := exchange(arg)
		if err != nil {
			return data.AuthCode{}, data.Family{}, err
		}
		if fam.ID == "" {
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w", op, &data.RuleError{Field: "family_id", Reason: "the new family needs an ID"})
		}
		code.Used, code.FamilyID = true, fam.ID
		cb, fb := encode(code), encode(fam)
		var tag pgconn.CommandTag
		err = retry(ctx, func() (err error) {
			tag, err = s.pool.Exec(ctx, redeem, hash, cb, fam.ID, fam.ClientID, familyExpiry(fam), fb, fam.UserID)
			return err
		})
		switch {
		case isFamilyTaken(err):
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: family %q: %w", op, fam.ID, data.ErrExists)
		case err != nil:
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w", op, err)
		case tag.RowsAffected() == 1:
			s.fams.put(fam.ID, 1, fam)
			c, err := decode[data.AuthCode](cb)
			if err != nil {
				return data.AuthCode{}, data.Family{}, err
			}
			f, err := decode[data.Family](fb)
			return c, f, err
		case attempt >= maxAttempts:
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w: the code kept changing", op, data.ErrConflict)
		}
		// Another exchange redeemed the code between our read and our
		// write: read it again (it is used now).
		s.stats.casLost.Add(1)
	}
}
