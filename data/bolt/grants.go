package bolt

import (
	"bytes"
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

// Consent grants.

func grantKey(userID int64, clientID string) []byte {
	return append(itob(userID), clientID...)
}

// PutGrant implements [data.Store.PutGrant]: it creates or replaces the grant
// of g.UserID to g.ClientID.
func (s *Store) PutGrant(ctx context.Context, g data.Grant) error {
	g = data.Normalize(g)
	return s.update(ctx, "put grant", func(tx *bbolt.Tx) error {
		if userDisabled(tx, g.UserID) {
			return fmt.Errorf("put grant: user %d: %w", g.UserID, data.ErrUserDisabled)
		}
		return put(tx.Bucket(bucketGrants), grantKey(g.UserID, g.ClientID), g)
	})
}

// GetGrant implements [data.Store.GetGrant].
func (s *Store) GetGrant(ctx context.Context, userID int64, clientID string) (data.Grant, error) {
	var g data.Grant
	err := s.view(ctx, "get grant", func(tx *bbolt.Tx) error {
		ok, err := get(tx.Bucket(bucketGrants), grantKey(userID, clientID), &g)
		if err == nil && !ok {
			err = fmt.Errorf("get grant of user %d to %q: %w", userID, clientID, data.ErrNotFound)
		}
		return err
	})
	return g, err
}

// ListGrants implements [data.Store.ListGrants], ordered by client ID.
func (s *Store) ListGrants(ctx context.Context, userID int64) ([]data.Grant, error) {
	var out []data.Grant
	err := s.view(ctx, "list grants", func(tx *bbolt.Tx) error {
		var err error
		out, err = list[data.Grant](tx.Bucket(bucketGrants), itob(userID), nil)
		return err
	})
	return out, err
}

// DeleteGrant implements [data.Store.DeleteGrant].
func (s *Store) DeleteGrant(ctx context.Context, userID int64, clientID string) error {
	return s.update(ctx, "delete grant", func(tx *bbolt.Tx) error {
		b, k := tx.Bucket(bucketGrants), grantKey(userID, clientID)
		if b.Get(k) == nil {
			return fmt.Errorf("delete grant of user %d to %q: %w", userID, clientID, data.ErrNotFound)
		}
		return b.Delete(k)
	})
}

// Signing keys.

// RevokeApp implements [data.Store.RevokeApp] as an exclusive op (after a
// checkpoint, alone with the hot writes), so that no code exchange or
// rotation interleaves with it: the pair's codes (a scan of the codes
// bucket, which holds only codes younger than their expiry), its families
// (from the index by user, each with its tombstone) and the grant, in
// one bbolt transaction.
func (s *Store) RevokeApp(ctx context.Context, userID int64, clientID string) (data.AppRevocation, error) {
	var r data.AppRevocation
	err := s.log.Exclusive(ctx, "revoke app", true, func(tx *bbolt.Tx) error {
		r = data.AppRevocation{}
		var err error
		if r.Codes, err = sweep(tx.Bucket(bucketCodes), func(c *data.AuthCode) bool {
			return c.UserID == userID && c.ClientID == clientID
		}, nil); err != nil {
			return err
		}
		fams, byUser := tx.Bucket(bucketFamilies), tx.Bucket(bucketFamByUser)
		prefix := familyUserKey(userID, clientID, "")
		var dead [][]byte
		c := byUser.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			dead = append(dead, bytes.Clone(k))
		}
		for _, k := range dead {
			id := k[len(prefix):]
			var f data.Family
			ok, err := get(fams, id, &f)
			if err != nil {
				return err
			}
			if err := byUser.Delete(k); err != nil {
				return err
			}
			if !ok {
				continue
			}
			if err := putRevocation(boltPut(tx), f); err != nil {
				return err
			}
			if err := dropFamilyIndexes(tx, &f); err != nil {
				return err
			}
			if err := fams.Delete(id); err != nil {
				return err
			}
			r.Families = append(r.Families, f.ID)
		}
		grants, gk := tx.Bucket(bucketGrants), grantKey(userID, clientID)
		if grants.Get(gk) != nil {
			r.Grant = true
			return grants.Delete(gk)
		}
		return nil
	})
	if err != nil {
		return data.AppRevocation{}, fmt.Errorf("revoke app %q of user %d: %w", clientID, userID, err)
	}
	return r, nil
}
