package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

// Export returns every record of the store (for `oauthd store copy`). It
// runs alone, after a checkpoint, in one read transaction: a consistent
// snapshot.
func (s *Store) Export(ctx context.Context) (data.Dump, error) {
	var d data.Dump
	err := s.exclusive(ctx, "export", false, func(tx *bbolt.Tx) error {
		if err := exportBucket(tx, bucketUsers, &d.Users); err != nil {
			return err
		}
		if err := exportBucket(tx, bucketClients, &d.Clients); err != nil {
			return err
		}
		if err := exportBucket(tx, bucketCodes, &d.AuthCodes); err != nil {
			return err
		}
		if err := exportBucket(tx, bucketFamilies, &d.Families); err != nil {
			return err
		}
		if err := exportBucket(tx, bucketGrants, &d.Grants); err != nil {
			return err
		}
		if err := exportBucket(tx, bucketSessions, &d.Sessions); err != nil {
			return err
		}
		if tx.Bucket(bucketAgents) != nil { // absent from a read-only file of an earlier release
			if err := exportBucket(tx, bucketAgents, &d.AgentHosts); err != nil {
				return err
			}
		}
		_, err := get(tx.Bucket(bucketKeys), keySetKey, &d.Keys)
		return err
	})
	return d, err
}

// exportBucket decodes every value of bucket into out, in key order.
func exportBucket[T any](tx *bbolt.Tx, bucket []byte, out *[]T) error {
	return tx.Bucket(bucket).ForEach(func(_, raw []byte) error {
		var v T
		if err := jsonUnmarshal(raw, &v); err != nil {
			return err
		}
		*out = append(*out, v)
		return nil
	})
}

// ErrNotEmpty: [Store.Import] found records in the store.
var ErrNotEmpty = errors.New("the target database is not empty")

// Import writes every record of d into the store, which must hold no
// record (else [ErrNotEmpty]), through the store's own methods, so every
// rule is checked as on any write. It is not one transaction: on an error
// the caller removes the half-filled file. A family is stored by exchanging
// its code (recreated unused first, so the tombstone comes out as it was)
// or, when its code has expired and gone, a stand-in code that has
// already expired and is removed by the next garbage collection.
func (s *Store) Import(ctx context.Context, d data.Dump) error {
	if err := s.checkEmpty(ctx); err != nil {
		return err
	}
	if err := s.importUsers(ctx, d.Users); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	for _, c := range d.Clients {
		if err := s.CreateClient(ctx, c); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	if err := s.importCodes(ctx, d.AuthCodes, d.Families); err != nil {
		return err
	}
	for _, g := range d.Grants {
		if err := s.PutGrant(ctx, g); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	for _, ss := range d.Sessions {
		if err := s.CreateSession(ctx, ss); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	for _, h := range d.AgentHosts {
		if err := s.PutAgentHost(ctx, h); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	if len(d.Keys) > 0 {
		if _, err := s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) { return d.Keys, nil }); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	return nil
}

// checkEmpty fails with [ErrNotEmpty] when any bucket but the meta bucket
// holds a record.
func (s *Store) checkEmpty(ctx context.Context) error {
	empty := true
	err := s.exclusive(ctx, "import", false, func(tx *bbolt.Tx) error {
		for _, b := range allBuckets {
			if bytes.Equal(b, bucketMeta) {
				continue
			}
			if k, _ := tx.Bucket(b).Cursor().First(); k != nil {
				empty = false
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !empty {
		return fmt.Errorf("import: %w; copy into a new file", ErrNotEmpty)
	}
	return nil
}

// importUsers stores users in one transaction, with their IDs; a user the
// source left out of an index for an upgrade clash (data.Clash) is left
// out here too (putUser leaves a held key to its holder), and no other
// user may clash.
func (s *Store) importUsers(ctx context.Context, us []data.User) error {
	_, _, clashes := data.IndexUsers(us)
	clashed := map[int64]bool{}
	for _, c := range clashes {
		clashed[c.UserID] = true
	}
	return s.update(ctx, "import users", func(tx *bbolt.Tx) error {
		users := tx.Bucket(bucketUsers)
		for _, u := range us {
			u = data.Normalize(u)
			seq, err := users.NextSequence()
			if err != nil {
				return err
			}
			if int64(seq) != u.ID {
				return fmt.Errorf("import user %d: got ID %d (the source's user IDs have a gap)", u.ID, seq)
			}
			if !clashed[u.ID] {
				if err := checkUnique(tx, u, nil); err != nil {
					return fmt.Errorf("import user %d: %w", u.ID, err)
				}
			}
			if err := putUser(tx, u); err != nil {
				return err
			}
		}
		return nil
	})
}

// importCodes stores the authorization codes and the families: each
// family by exchanging its code (see [Store.Import]), then the codes no
// family spent.
func (s *Store) importCodes(ctx context.Context, cs []data.AuthCode, fams []data.Family) error {
	codes := make(map[string]data.AuthCode, len(cs))
	for _, c := range cs {
		codes[string(c.Hash)] = c
	}
	for _, f := range fams {
		code, ok := codes[string(f.CodeHash)]
		if ok && code.FamilyID == f.ID {
			delete(codes, string(f.CodeHash))
			code.Used, code.FamilyID = false, ""
		} else {
			code = data.AuthCode{Hash: data.AuthCodeKey(data.PrefixAuthCode + "copy-" + f.ID), ClientID: f.ClientID, UserID: f.UserID}
		}
		if err := s.CreateAuthCode(ctx, code); err != nil {
			return fmt.Errorf("import family %q: %w", f.ID, err)
		}
		if _, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(data.AuthCode) (data.Family, error) { return f, nil }); err != nil {
			return fmt.Errorf("import family %q: %w", f.ID, err)
		}
	}
	for _, c := range cs {
		if _, left := codes[string(c.Hash)]; !left {
			continue
		}
		if err := s.CreateAuthCode(ctx, c); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	return nil
}
