package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/backend"
	"oauthd/cmd/internal/clitext"
	"oauthd/data"
)

// copyEnd is what `oauthd store copy` needs of a store.
type copyEnd interface {
	Export(ctx context.Context) (data.Dump, error)
	Import(ctx context.Context, d data.Dump) error
	Close() error
}

// copyReport is what store copy prints. AuthCodes, Families and Sessions
// count the live records; Expired the ones whose time is over but that
// the sweep has not removed yet (copied too: the target's sweep removes
// them).
type copyReport struct {
	From      string        `json:"from"`
	To        string        `json:"to"`
	Users     int           `json:"users"`
	Clients   int           `json:"clients"`
	AuthCodes int           `json:"auth_codes"`
	Families  int           `json:"families"`
	Grants    int           `json:"grants"`
	Sessions  int           `json:"sessions"`
	Keys      int           `json:"keys"`
	Expired   copiedExpired `json:"expired"`
}

// copiedExpired counts the expired records a copy carried.
type copiedExpired struct {
	AuthCodes int `json:"auth_codes"`
	Families  int `json:"families"`
	Sessions  int `json:"sessions"`
}

// countCopy is the report of a copy of d, read at now: each record that
// expires counted as live or expired by its own rule (data.AuthCode.Expired…).
func countCopy(d data.Dump, now time.Time) copyReport {
	rep := copyReport{Users: len(d.Users), Clients: len(d.Clients), Grants: len(d.Grants), Keys: len(d.Keys)}
	for _, c := range d.AuthCodes {
		if c.Expired(now) {
			rep.Expired.AuthCodes++
		} else {
			rep.AuthCodes++
		}
	}
	for _, f := range d.Families {
		if f.Expired(now) {
			rep.Expired.Families++
		} else {
			rep.Families++
		}
	}
	for _, s := range d.Sessions {
		if s.Expired(now) {
			rep.Expired.Sessions++
		} else {
			rep.Sessions++
		}
	}
	return rep
}

func newStoreCopyCommand(root *rootOptions) *cobra.Command {
	var from, to string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "copy --from PATH|URL --to PATH|URL",
		Short: "Copy every record (users, clients with secret hashes, grants, refresh families, live codes, sessions, signing keys as sealed) into an empty database",
		Long: `copy reads every record of --from in one consistent snapshot and writes it
into --to, which must be empty (a new file, or a database with no record;
its schema is created). Tokens issued before the copy keep working after it,
as long as the servers on --to use the same master key.

--from may keep serving: a bbolt file that a server holds open is read
through that server's admin socket (PATH.sock), a PostgreSQL database
directly; changes made after the snapshot are not copied. This is how a
running server's database is backed up.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return errors.New("store copy needs --from PATH|URL and --to PATH|URL")
			}
			if from == to {
				return errors.New("--from and --to name the same database")
			}
			logger, err := root.logger(cmd, slog.LevelWarn)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			src, err := openCopyEnd(ctx, logger, from, backend.ForCopyFrom)
			if err != nil {
				return fmt.Errorf("--from: %w", err)
			}
			defer src.Close()
			d, err := src.Export(ctx)
			read := time.Now()
			if err != nil {
				return fmt.Errorf("read %s: %w", backend.Redact(from), err)
			}
			dst, err := openCopyEnd(ctx, logger, to, backend.ForCopyTo)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			if err := dst.Import(ctx, d); err != nil {
				dst.Close()
				if dst.Discard != nil {
					dst.Discard(err)
				}
				return fmt.Errorf("write %s: %w", backend.Redact(to), err)
			}
			if err := dst.closeFilled(ctx); err != nil {
				return fmt.Errorf("close %s: %w", backend.Redact(to), err)
			}
			rep := countCopy(d, read)
			rep.From, rep.To = backend.Redact(from), backend.Redact(to)
			if asJSON {
				return clitext.JSON(cmd.OutOrStdout(), rep)
			}
			clitext.Textf(cmd.OutOrStdout(), "copied %d users, %d clients, %d grants and %d signing keys; live: %d authorization codes, %d refresh families and %d sessions; "+
				"expired, not yet swept (the sweep removes them): %d authorization codes, %d refresh families and %d sessions; from %s to %s\n",
				rep.Users, rep.Clients, rep.Grants, rep.Keys, rep.AuthCodes, rep.Families, rep.Sessions,
				rep.Expired.AuthCodes, rep.Expired.Families, rep.Expired.Sessions, rep.From, rep.To)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the database to copy: a bbolt file or a postgres:// URL")
	cmd.Flags().StringVar(&to, "to", "", "the empty database to fill: a new bbolt file or a postgres:// URL (its schema is created)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the counts as one JSON value")
	return cmd
}

// openCopyEnd opens one side of the copy. A --from that a running server
// holds open (a bbolt file) is read through that server's admin socket.
func openCopyEnd(ctx context.Context, logger *slog.Logger, db string, mode backend.Mode) (*copyDB, error) {
	if sock := backend.AdminSocket(db); mode == backend.ForCopyFrom && sock != "" {
		if src, err := dialSource(sock); err == nil {
			return &copyDB{copyEnd: src, Database: &backend.Database{}}, nil
		}
	}
	d, err := backend.Open(ctx, db, mode, logger)
	if err != nil {
		return nil, err
	}
	c, ok := d.Store.(copyEnd)
	if !ok {
		d.Close()
		return nil, fmt.Errorf("%s cannot be copied: its backend has no export", backend.Redact(db))
	}
	return &copyDB{copyEnd: c, Database: d}, nil
}

// copyDB is an opened side of the copy.
type copyDB struct {
	copyEnd
	*backend.Database
}

func (c *copyDB) Close() error { return c.copyEnd.Close() }

// closeFilled closes the filled target. A bbolt file is left whole on
// its own, without the (checkpointed, preallocated 1 MiB) write-ahead log
// beside it, so the copy is one file to move or keep.
func (c *copyDB) closeFilled(ctx context.Context) error {
	if b, ok := c.copyEnd.(interface{ CloseWithoutLog(context.Context) error }); ok {
		return b.CloseWithoutLog(ctx)
	}
	return c.Close()
}
