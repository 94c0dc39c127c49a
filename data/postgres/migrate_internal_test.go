package postgres

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"oauthd/data"
	"oauthd/data/datatest"
	"oauthd/data/postgres/pgtest"
)

// TestMigrateUsersBackfill: a database at version 4, with records written
// in that version's shape, migrated to 5: the new columns are filled from
// the records, so disabling a user deletes what they had before the
// upgrade, and a user's external ID finds them.
func TestMigrateUsersBackfill(t *testing.T) {
	ctx := context.Background()
	url, conn := databaseBefore(t, 4, "0005_users")
	t0 := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	exp := unixNano(t0.Add(time.Hour))
	for _, u := range []data.User{
		{ID: 1, Email: "one@example.com", Username: "one", CreatedAt: t0},
		{ID: 2, Email: "two@example.com", Username: "two", ExternalID: "p-2", CreatedAt: t0},
	} {
		if _, err := conn.Exec(ctx, "INSERT INTO users (id, email_lower, username_lower, body) VALUES ($1, $2, $3, $4)", u.ID, u.Email, u.Username, encode(u)); err != nil {
			t.Fatal(err)
		}
		c := data.AuthCode{Hash: data.Hash("code" + u.Email), ClientID: "c", UserID: u.ID, ExpiresAt: t0.Add(time.Hour)}
		f := data.Family{ID: "fam" + u.Email, ClientID: "c", UserID: u.ID, ExpiresAt: t0.Add(time.Hour)}
		ss := data.Session{Hash: data.Hash("sess" + u.Email), UserID: u.ID, ExpiresAt: t0.Add(time.Hour)}
		g := data.Grant{UserID: u.ID, ClientID: "c"}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{"INSERT INTO auth_codes (hash, used, expires_ns, body) VALUES ($1, false, $2, $3)", []any{c.Hash, exp, encode(c)}},
			{"INSERT INTO families (id, client_id, expires_ns, gc_ns, body) VALUES ($1, 'c', $2, $2, $3)", []any{f.ID, exp, encode(f)}},
			{"INSERT INTO sessions (hash, expires_ns, body) VALUES ($1, $2, $3)", []any{ss.Hash, exp, encode(ss)}},
			{"INSERT INTO grants (user_id, client_id, body) VALUES ($1, 'c', $2)", []any{g.UserID, encode(g)}},
		} {
			if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	from, to, err := Migrate(ctx, url, nil)
	if err != nil || from != 4 || to != SchemaVersion() {
		t.Fatalf("Migrate = %d → %d, %v; want 4 → %d", from, to, err, SchemaVersion())
	}
	s, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if u, err := s.GetUserByExternalID(ctx, "p-2"); err != nil || u.ID != 2 {
		t.Fatalf("GetUserByExternalID(p-2) = %+v, %v", u, err)
	}
	if _, err := s.UpdateUser(ctx, 1, func(u data.User) (data.User, error) { u.Disabled = true; return u, nil }); err != nil {
		t.Fatal(err)
	}
	d, err := s.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		what string
		ids  []int64
	}{
		{"codes", userIDs(d.AuthCodes, func(c data.AuthCode) int64 { return c.UserID })},
		{"families", userIDs(d.Families, func(f data.Family) int64 { return f.UserID })},
		{"sessions", userIDs(d.Sessions, func(s data.Session) int64 { return s.UserID })},
		{"grants", userIDs(d.Grants, func(g data.Grant) int64 { return g.UserID })},
	} {
		if len(n.ids) != 1 || n.ids[0] != 2 {
			t.Errorf("%s after disabling user 1 belong to users %v; want [2]", n.what, n.ids)
		}
	}
}

func userIDs[T any](rs []T, id func(T) int64) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, id(r))
	}
	return out
}

// TestCreateUsersLockLetsLoginsThrough: while a CreateUsers transaction
// holds its table lock (a long `users import`), sessions, codes and grants
// are still made and users read; another CreateUsers waits.
func TestCreateUsersLockLetsLoginsThrough(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	s, err := Open(ctx, url, Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, err := s.CreateUser(ctx, data.User{Email: "u@example.com", Username: "u"})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, lockUsers); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	exp := time.Now().Add(time.Hour)
	if err := s.CreateSession(wctx, data.Session{Hash: data.Hash("s"), UserID: u.ID, ExpiresAt: exp}); err != nil {
		t.Fatalf("CreateSession under the import's lock: %v", err)
	}
	if err := s.CreateAuthCode(wctx, data.AuthCode{Hash: data.Hash("c"), UserID: u.ID, ExpiresAt: exp}); err != nil {
		t.Fatalf("CreateAuthCode under the import's lock: %v", err)
	}
	if err := s.PutGrant(wctx, data.Grant{UserID: u.ID, ClientID: "c"}); err != nil {
		t.Fatalf("PutGrant under the import's lock: %v", err)
	}
	if _, err := s.GetUserByLogin(wctx, "u@example.com"); err != nil {
		t.Fatalf("GetUserByLogin under the import's lock: %v", err)
	}
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if _, err := s.CreateUser(short, data.User{Email: "v@example.com"}); err == nil {
		t.Fatal("a second CreateUser did not wait for the first's lock")
	}
}

// TestMigrateIdentity: a database at version 5 whose unique user columns
// hold strings.ToLower (users who are one identifier under ident.Key side
// by side) and whose clients' owners are emails, migrated to 6: see
// datatest.CheckIdentityUpgrade.
func TestMigrateIdentity(t *testing.T) {
	ctx := context.Background()
	url, conn := databaseBefore(t, 5, "0006_identity")
	old := datatest.OldIdentity()
	for _, u := range old.Users {
		if _, err := conn.Exec(ctx, "INSERT INTO users (id, email_lower, username_lower, external_id, disabled, body) VALUES ($1, $2, $3, '', false, $4)",
			u.ID, strings.ToLower(u.Email), strings.ToLower(u.Username), encode(u)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range old.Clients {
		if _, err := conn.Exec(ctx, "INSERT INTO clients (id, status, body) VALUES ($1, 'pending', $2)", c.ID, c.Body); err != nil {
			t.Fatal(err)
		}
	}
	var logged strings.Builder
	from, to, err := Migrate(ctx, url, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil || from != 5 || to != SchemaVersion() {
		t.Fatalf("Migrate = %d → %d, %v; want 5 → %d", from, to, err, SchemaVersion())
	}
	for _, want := range []string{"user_id=2 held_by=1 field=email", "user_id=4 held_by=3 field=username", "client_id=c-ambiguous", "client_id=c-gone"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the migration's log lacks %q:\n%s", want, logged.String())
		}
	}
	s, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	datatest.CheckIdentityUpgrade(t, s)
}

// databaseBefore is a new database migrated up to migration number i
// (from 0), which must be named next, not included (as an older release
// left it), and a connection to it, closed when the test ends.
func databaseBefore(t *testing.T, i int, next string) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.New(t)
	ms, err := migrations()
	if err != nil || len(ms) <= i || ms[i].name != next {
		t.Fatalf("migrations = %d, %v; want %s as number %d", len(ms), err, next, i+1)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	if _, err := conn.Exec(ctx, createVersionTable); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:i] {
		if _, err := conn.Exec(ctx, m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO oauthd_schema (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			t.Fatal(err)
		}
	}
	return url, conn
}
