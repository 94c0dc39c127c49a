package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

func newUsersImportCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import users with their existing password hashes (JSON lines or CSV); all or nothing",
		Long: `Import users from FILE ("-" for stdin): JSON lines, one object per line,
  {"email": "...", "username": "...", "name": "...", "time_zone": "Europe/Berlin", "password_hash": "..."}
or CSV with a header row naming the columns email, username, name, time_zone,
password_hash (username and time_zone optional). The hashes are kept as they
are: argon2id, bcrypt ($2a$/$2b$/$2y$), scrypt ($scrypt$ln=…,r=…,p=…$salt$hash)
or PBKDF2-SHA256 (passlib $pbkdf2-sha256$… or Django pbkdf2_sha256$…). A hash
whose one check would take more than a password slot's share is refused:
argon2id p above 4, or a check slower than 1 s on this machine (measured once per
distinct parameter set). At each user's first successful login a hash with other
parameters than today's argon2id (weaker or costlier) is replaced by it. Every
row is checked first; any bad row (named by its line) refuses the whole file.
See docs/USERS.md.`,
		Example: "  oauthd users import users.jsonl\n  oauthd users import users.csv --json",
		Args:    exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			rows, err := parseUserRows(b)
			if err != nil {
				return fmt.Errorf("%s: %w; nothing was imported", args[0], err)
			}
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				us, err := svc.ImportUsers(ctx, rows)
				if err != nil {
					return err
				}
				if asJSON {
					return clitext.JSON(cmd.OutOrStdout(), us)
				}
				err = clitext.Textf(cmd.OutOrStdout(), "imported %d users (IDs %d to %d)\n", len(us), us[0].ID, us[len(us)-1].ID)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the imported users as JSON")
	return cmd
}

// parseUserRows reads JSON lines (when the first non-blank byte is "{") or
// CSV with a header. Each row keeps its line number.
func parseUserRows(b []byte) ([]admin.ImportUser, error) {
	if t := bytes.TrimLeft(b, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		return parseJSONLines(b)
	}
	return parseCSV(b)
}

func parseJSONLines(b []byte) ([]admin.ImportUser, error) {
	var (
		out []admin.ImportUser
		bad []string
	)
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var u admin.ImportUser
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&u); err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %v", i+1, err))
			continue
		}
		u.Line = i + 1
		out = append(out, u)
	}
	if len(bad) > 0 {
		return nil, errors.New("bad rows:\n" + strings.Join(bad, "\n"))
	}
	return out, nil
}

// csvColumns are the columns a CSV import may have.
var csvColumns = []string{"email", "username", "name", "time_zone", "password_hash"}

func parseCSV(b []byte) ([]admin.ImportUser, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(b, []byte("\ufeff"))))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("neither JSON lines nor CSV with a header row: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if !slices.Contains(csvColumns, h) {
			return nil, fmt.Errorf("line 1: unknown column %q; the columns are %s", h, strings.Join(csvColumns, ", "))
		}
		if first, dup := col[h]; dup {
			return nil, fmt.Errorf("line 1: the header names the column %q twice (fields %d and %d); name each column once", h, first+1, i+1)
		}
		col[h] = i
	}
	for _, need := range []string{"email", "name", "password_hash"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("line 1: the header needs a column %q", need)
		}
	}
	var (
		out []admin.ImportUser
		bad []string
	)
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				bad = append(bad, fmt.Sprintf("line %d: %v", pe.Line, pe.Err))
				if pe.Err == csv.ErrQuote || pe.Err == csv.ErrBareQuote {
					break // the reader cannot resync after a broken quote
				}
				continue
			}
			return nil, err
		}
		if len(rec) != len(header) {
			bad = append(bad, "line "+strconv.Itoa(line)+": "+strconv.Itoa(len(rec))+" fields; the header has "+strconv.Itoa(len(header)))
			continue
		}
		get := func(k string) string {
			if i, ok := col[k]; ok {
				return rec[i]
			}
			return ""
		}
		out = append(out, admin.ImportUser{Line: line, Email: get("email"), Username: get("username"), Name: get("name"),
			TimeZone: get("time_zone"), PasswordHash: get("password_hash")})
	}
	if len(bad) > 0 {
		return nil, errors.New("bad rows:\n" + strings.Join(bad, "\n"))
	}
	return out, nil
}
