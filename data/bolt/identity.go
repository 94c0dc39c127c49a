package bolt

import (
	"encoding/json"
	"fmt"
	"log/slog"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

// upgradeIdentity upgrades a schema "1" file in tx, the one transaction
// of Open (all of it or nothing): the user indexes are rebuilt under
// ident.Key (a clash leaves the later user out of that index, never merges
// two users: data.IndexUsers), and each client's owner email becomes its
// user's ID (data.ResolveLegacyOwner; unclaimed when it names no one user).
// Each clash and unclaimed client is logged for the operator. Users and
// clients are not hot buckets: the write-ahead log holds none of them.
func upgradeIdentity(tx *bbolt.Tx, logger *slog.Logger) error {
	users, err := list[data.User](tx.Bucket(bucketUsers), nil, nil)
	if err != nil {
		return fmt.Errorf("read users: %w", err)
	}
	email, username, clashes := data.IndexUsers(users)
	for _, ix := range []struct {
		b []byte
		m map[string]int64
	}{{bucketUserEmail, email}, {bucketUserName, username}} {
		if err := tx.DeleteBucket(ix.b); err != nil {
			return err
		}
		b, err := tx.CreateBucket(ix.b)
		if err != nil {
			return err
		}
		for k, id := range ix.m {
			if err := b.Put([]byte(k), itob(id)); err != nil {
				return err
			}
		}
	}
	for _, c := range clashes {
		logger.Warn("identifier clash: user left out of the index (see docs/IDENTITY.md)",
			"user_id", c.UserID, "held_by", c.HeldBy, "field", c.Field)
	}

	clients := tx.Bucket(bucketClients)
	type rec struct {
		k []byte
		c data.Client
	}
	var upgraded []rec
	err = clients.ForEach(func(k, v []byte) error {
		var c data.Client
		var legacy data.LegacyOwner
		if err := jsonUnmarshal(v, &c); err != nil {
			return fmt.Errorf("client %q: %w", k, err)
		}
		if err := json.Unmarshal(v, &legacy); err != nil {
			return fmt.Errorf("client %q: %w", k, err)
		}
		upgraded = append(upgraded, rec{append([]byte(nil), k...), data.UpgradeClientOwner(c, legacy.Owner, users)})
		return nil
	})
	if err != nil {
		return fmt.Errorf("read clients: %w", err)
	}
	for _, r := range upgraded {
		if r.c.OwnerID == 0 {
			logger.Warn("client unclaimed: its owner names no one user (`oauthd clients list --owner unclaimed`)",
				"client_id", r.c.ID)
		}
		if err := put(clients, r.k, r.c); err != nil {
			return err
		}
	}
	if len(clashes) > 0 || len(upgraded) > 0 {
		logger.Info("database upgraded: identities by ID", "users", len(users), "clashes", len(clashes), "clients", len(upgraded))
	}
	return nil
}
