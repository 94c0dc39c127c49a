package bolt

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

// SeedFamilies is for benchmarks only (oauthd bench --seed): it writes
// codes[i] as ExchangeAuthCode leaves it once fams[i] redeemed it (used,
// its FamilyID set: the tombstone) and fams[i] as that exchange stores it,
// for every i: the same records, encodings and index entries (putFamily,
// putExpiry), but in one transaction of the bbolt file for the whole batch
// (an exclusive op, as the sweep's), with the keys in order, so that each
// page of a large file is written once a batch and not once a record: the
// exchange's path rewrites a random page of the codes for every code, which
// at millions of records writes tens of times the file's size. It checks
// nothing the exchange checks (a code that exists or is used, a disabled
// user; a family ID already stored is overwritten): never use it to serve a
// real grant.
func (s *Store) SeedFamilies(ctx context.Context, fams []data.Family, codes []data.AuthCode) error {
	const op = "seed families"
	if len(fams) != len(codes) {
		return fmt.Errorf("%s: %d families and %d codes: %w", op, len(fams), len(codes), &data.RuleError{Field: "codes", Reason: "one code for each family"})
	}
	order := make([]int, len(fams))
	for i, f := range fams {
		if len(codes[i].Hash) == 0 || f.ID == "" {
			return fmt.Errorf("%s: %w", op, &data.RuleError{Field: "family", Reason: "every code needs its hash and every family its ID"})
		}
		order[i] = i
	}
	err := s.exclusive(ctx, op, true, func(tx *bbolt.Tx) error {
		for b, fill := range hotFill { // as the checkpoint's writes (appendFill)
			if fill != 0 {
				tx.Bucket(hotBuckets[b]).FillPercent = fill
			}
		}
		put := boltPut(tx)
		slices.SortFunc(order, func(a, b int) int { return bytes.Compare(codes[a].Hash, codes[b].Hash) })
		for _, i := range order {
			c := data.Normalize(codes[i])
			c.Used, c.FamilyID = true, fams[i].ID
			if err := put(hotCodes, c.Hash, appendAuthCode(nil, &c)); err != nil {
				return err
			}
			if err := putExpiry(put, c.ExpiresAt, hotCodes, c.Hash); err != nil {
				return err
			}
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(fams[a].ID, fams[b].ID) })
		for _, i := range order {
			if err := putFamily(put, data.Normalize(fams[i])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}
