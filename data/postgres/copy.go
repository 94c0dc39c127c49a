package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"oauthd/data"
)

// ErrNotEmpty: [Store.Import] found records in the target.
var ErrNotEmpty = errors.New("the target database is not empty")

// copyTables are the tables of records, in the order Import fills them.
var copyTables = []string{"users", "clients", "auth_codes", "families", "grants", "sessions", "agent_hosts"}

// Export returns every record of the database, read in one read-only
// repeatable-read transaction: a consistent snapshot, taken while servers
// keep running.
func (s *Store) Export(ctx context.Context) (data.Dump, error) {
	var d data.Dump
	if err := s.begin(ctx, "export"); err != nil {
		return d, err
	}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if d.Users, err = queryAll[data.User](ctx, tx, "SELECT body FROM users ORDER BY id"); err != nil {
			return err
		}
		if d.Clients, err = queryAll[data.Client](ctx, tx, "SELECT body FROM clients ORDER BY id"); err != nil {
			return err
		}
		if d.AuthCodes, err = queryAll[data.AuthCode](ctx, tx, "SELECT body || jsonb_build_object('used', used) FROM auth_codes ORDER BY hash"); err != nil {
			return err
		}
		if d.Families, err = queryAll[data.Family](ctx, tx, "SELECT body FROM families ORDER BY id"); err != nil {
			return err
		}
		if d.Grants, err = queryAll[data.Grant](ctx, tx, "SELECT body FROM grants ORDER BY user_id, client_id"); err != nil {
			return err
		}
		if d.Sessions, err = queryAll[data.Session](ctx, tx, "SELECT body FROM sessions ORDER BY hash"); err != nil {
			return err
		}
		if d.AgentHosts, err = queryAll[data.AgentHost](ctx, tx, "SELECT body FROM agent_hosts ORDER BY host"); err != nil {
			return err
		}
		if len(d.AgentHosts) == 0 {
			d.AgentHosts = nil
		}
		d.Keys, err = queryOne[[]data.SigningKey](ctx, tx, "SELECT body FROM key_set WHERE id = 1")
		return err
	})
	err = classify(err)
	if err != nil {
		return data.Dump{}, fmt.Errorf("export: %w", err)
	}
	return d, nil
}

// Import writes every record of d into the database in one transaction,
// which first locks every table and refuses with [ErrNotEmpty] a database
// that holds any record or key. Clients must pass [data.ValidateClient]
// and keys [data.ValidateKeySet]; nothing is written unless all is.
func (s *Store) Import(ctx context.Context, d data.Dump) error {
	if err := s.begin(ctx, "import"); err != nil {
		return err
	}
	for _, c := range d.Clients {
		if err := data.ValidateClient(c); err != nil {
			return fmt.Errorf("import client %q: %w", c.ID, err)
		}
	}
	if err := data.ValidateKeySet(d.Keys); err != nil {
		return fmt.Errorf("import keys: %w", err)
	}
	if err := noneDisabled(d); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "LOCK TABLE "+strings.Join(copyTables, ", ")+", key_set IN EXCLUSIVE MODE"); err != nil {
			return err
		}
		var rows int64
		q := "SELECT (SELECT count(*) FROM key_set WHERE body <> '[]')"
		for _, t := range copyTables {
			q += " + (SELECT count(*) FROM " + t + ")"
		}
		if err := tx.QueryRow(ctx, q).Scan(&rows); err != nil {
			return err
		}
		if rows > 0 {
			return fmt.Errorf("%w (%d records); copy into a new, empty database", ErrNotEmpty, rows)
		}
		b := &pgx.Batch{}
		_, _, clashes := data.IndexUsers(d.Users)
		for _, u := range d.Users {
			args := userArgs(u, encode(u))
			for _, c := range clashes { // left out of the index, as in the source
				if c.UserID == u.ID && c.Field == "email" {
					args[1] = ""
				}
				if c.UserID == u.ID && c.Field == "username" {
					args[2] = ""
				}
			}
			b.Queue(insertUser, args...)
		}
		for _, c := range d.Clients {
			b.Queue("INSERT INTO clients (id, status, body) VALUES ($1, $2, $3)", c.ID, string(c.Status), encode(c))
		}
		for _, c := range d.AuthCodes {
			b.Queue("INSERT INTO auth_codes (hash, used, user_id, expires_ns, body) VALUES ($1, $2, $3, $4, $5)", c.Hash, c.Used, c.UserID, unixNano(c.ExpiresAt), encode(c))
		}
		for _, f := range d.Families {
			b.Queue("INSERT INTO families (id, client_id, user_id, expires_ns, gc_ns, body) VALUES ($1, $2, $3, $4, $4, $5)", f.ID, f.ClientID, f.UserID, familyExpiry(f), encode(f))
		}
		for _, g := range d.Grants {
			b.Queue("INSERT INTO grants (user_id, client_id, body) VALUES ($1, $2, $3)", g.UserID, g.ClientID, encode(g))
		}
		for _, ss := range d.Sessions {
			b.Queue("INSERT INTO sessions (hash, user_id, expires_ns, body) VALUES ($1, $2, $3, $4)", ss.Hash, ss.UserID, unixNano(ss.ExpiresAt), encode(ss))
		}
		for _, h := range d.AgentHosts {
			if err := data.ValidateAgentHost(h); err != nil {
				return err
			}
			h = data.NormalizeAgentHost(h)
			b.Queue("INSERT INTO agent_hosts (host, body) VALUES ($1, $2)", h.Host, encode(h))
		}
		keys := d.Keys
		if keys == nil {
			keys = []data.SigningKey{}
		}
		b.Queue("UPDATE key_set SET version = version + 1, body = $1 WHERE id = 1", encode(keys))
		b.Queue("SELECT pg_notify($1, 'keys')", Channel)
		return tx.SendBatch(ctx, b).Close()
	})
	err = classify(err)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// noneDisabled fails with [data.ErrUserDisabled] when d holds a code,
// family, grant or session of a disabled user: a store holds none (see
// [data.Store.UpdateUser]), and a copy keeps that rule.
func noneDisabled(d data.Dump) error {
	off := map[int64]bool{}
	for _, u := range d.Users {
		if u.Disabled {
			off[u.ID] = true
		}
	}
	if len(off) == 0 {
		return nil
	}
	var ids []int64
	for _, c := range d.AuthCodes {
		ids = append(ids, c.UserID)
	}
	for _, f := range d.Families {
		ids = append(ids, f.UserID)
	}
	for _, g := range d.Grants {
		ids = append(ids, g.UserID)
	}
	for _, s := range d.Sessions {
		ids = append(ids, s.UserID)
	}
	for _, id := range ids {
		if off[id] {
			return fmt.Errorf("a record of user %d: %w", id, data.ErrUserDisabled)
		}
	}
	return nil
}
