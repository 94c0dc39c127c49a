package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"

	"oauthd/data"
)

// upgradeIdentity is migration 6's Go step (migrations/0006_identity.sql):
// the unique user columns are recomputed under ident.Key (a clash leaves
// the later user's column empty, out of the index: data.IndexUsers never
// merges two users), and each client's owner email becomes its user's ID
// (data.ResolveLegacyOwner; unclaimed when it names no one user). Each
// clash and unclaimed client is logged for the operator.
func upgradeIdentity(ctx context.Context, tx pgx.Tx, logger *slog.Logger) error {
	users, err := queryAll[data.User](ctx, tx, "SELECT body FROM users ORDER BY id")
	if err != nil {
		return fmt.Errorf("read users: %w", err)
	}
	email, username, clashes := data.IndexUsers(users)
	// Empty first, so that no intermediate state breaks the unique indexes.
	if _, err := tx.Exec(ctx, "UPDATE users SET email_lower = '', username_lower = ''"); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, u := range users {
		e, n := data.UserKeys(u)
		if email[e] != u.ID {
			e = ""
		}
		if username[n] != u.ID {
			n = ""
		}
		b.Queue("UPDATE users SET email_lower = $2, username_lower = $3 WHERE id = $1", u.ID, e, n)
	}
	for _, c := range clashes {
		logger.WarnContext(ctx, "identifier clash: user left out of the index (see docs/IDENTITY.md)",
			"user_id", c.UserID, "held_by", c.HeldBy, "field", c.Field)
	}

	rows, err := tx.Query(ctx, "SELECT body FROM clients ORDER BY id")
	if err != nil {
		return fmt.Errorf("read clients: %w", err)
	}
	raws, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return fmt.Errorf("read clients: %w", err)
	}
	for _, raw := range raws {
		c, err := decode[data.Client](raw)
		if err != nil {
			return fmt.Errorf("read clients: %w", err)
		}
		var legacy data.LegacyOwner
		if err := json.Unmarshal(raw, &legacy); err != nil {
			return fmt.Errorf("read client %q: %w", c.ID, err)
		}
		c = data.UpgradeClientOwner(c, legacy.Owner, users)
		if c.OwnerID == 0 {
			logger.WarnContext(ctx, "client unclaimed: its owner names no one user (`oauthd clients list --owner unclaimed`)", "client_id", c.ID)
		}
		b.Queue("UPDATE clients SET body = $2 WHERE id = $1", c.ID, encode(c))
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store the upgraded users and clients: %w", err)
	}
	logger.InfoContext(ctx, "database upgraded: identities by ID", "users", len(users), "clashes", len(clashes), "clients", len(raws))
	return nil
}
