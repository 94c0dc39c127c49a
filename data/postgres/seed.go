package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"oauthd/data"
)

// SeedFamilies is for benchmarks only (oauthd bench --seed): it writes
// codes[i] as ExchangeAuthCode leaves it once fams[i] redeemed it (used,
// its FamilyID set: the tombstone) and fams[i] as that exchange stores it,
// for every i, with the same columns and encoding (encode, familyExpiry,
// unixNano) but with PostgreSQL's COPY, in one transaction for the whole
// batch: tens of thousands of families a second where the exchange, two
// durable statements each, writes a few thousand. It checks nothing the
// exchange checks (a code that exists or is used, a disabled user, the
// family's ID; a duplicate key fails the whole batch) and does not fill
// the rotation cache: never use it to serve a real grant.
func (s *Store) SeedFamilies(ctx context.Context, fams []data.Family, codes []data.AuthCode) error {
	const op = "seed families"
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	if len(fams) != len(codes) {
		return fmt.Errorf("%s: %d families and %d codes: %w", op, len(fams), len(codes), &data.RuleError{Field: "codes", Reason: "one code for each family"})
	}
	codeRows := make([][]any, len(codes))
	famRows := make([][]any, len(fams))
	for i, f := range fams {
		c := codes[i]
		if len(c.Hash) == 0 || f.ID == "" {
			return fmt.Errorf("%s: %w", op, &data.RuleError{Field: "family", Reason: "every code needs its hash and every family its ID"})
		}
		c.Used, c.FamilyID = true, f.ID
		codeRows[i] = []any{c.Hash, true, c.UserID, unixNano(c.ExpiresAt), encode(c)}
		famRows[i] = []any{f.ID, f.ClientID, f.UserID, familyExpiry(f), familyExpiry(f), encode(f)}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"auth_codes"}, []string{"hash", "used", "user_id", "expires_ns", "body"}, pgx.CopyFromRows(codeRows)); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"families"}, []string{"id", "client_id", "user_id", "expires_ns", "gc_ns", "body"}, pgx.CopyFromRows(famRows))
		return err
	})
	if err = classify(err); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}
