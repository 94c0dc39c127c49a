package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/postgres/pgtest"
)

// TestStoreCopyCountsExpiredApart: store copy counts the codes, refresh
// families and sessions whose time is over but that no sweep has removed
// yet as expired, apart from the live ones (issue 31): a code past its
// expiry, used or not; a family past its idle or its absolute expiry; a
// session past its end. Every record is copied, so a copy of the copy
// counts the same, and so does a round trip through PostgreSQL.
func TestStoreCopyCountsExpiredApart(t *testing.T) {
	c := newCLI(t)
	addUser(c)
	var cl struct {
		ID string `json:"client_id"`
	}
	oneJSON(t, c.ok("", "clients", "create", "--owner", "dev@example.com", "--name", "App", "--redirect-uri", "https://a.example/cb",
		"--scope", "PROFILE_READ", "--json"), &cl)

	st, err := bolt.Open(c.db, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := time.Now().UTC()
	code := func(expires time.Duration) data.AuthCode {
		return data.AuthCode{Hash: data.AuthCodeKey(data.NewAuthCode(now)), ClientID: cl.ID, UserID: 1, RedirectURI: "https://a.example/cb",
			Scopes: []string{"PROFILE_READ"}, CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(expires)}
	}
	family := func(i int, idle, absolute time.Duration) data.Family {
		return data.Family{ID: data.NewFamilyID(now.Add(time.Duration(i) * time.Millisecond)), ClientID: cl.ID, UserID: 1, Scopes: []string{"PROFILE_READ"},
			TokenHash: data.Hash("token-" + string(rune('a'+i))), CreatedAt: now.Add(-2 * time.Hour), RotatedAt: now.Add(-2 * time.Hour),
			ExpiresAt: now.Add(idle), AbsoluteExp: now.Add(absolute), Tagged: true}
	}
	for _, c := range []data.AuthCode{code(time.Hour), code(-time.Minute)} { // live, expired; neither used
		if err := st.CreateAuthCode(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for i, x := range []struct {
		code data.AuthCode
		fam  data.Family
	}{
		{code(time.Hour), family(0, time.Hour, 24*time.Hour)},       // live code's tombstone, live family
		{code(-time.Hour), family(1, -time.Minute, 24*time.Hour)},   // expired tombstone, family past its idle expiry
		{code(-time.Hour), family(2, time.Hour, -time.Second)},      // expired tombstone, family past its absolute expiry
		{code(-time.Second), family(3, 30*24*time.Hour, time.Hour)}, // expired tombstone, live family
	} {
		x.fam.CodeHash = x.code.Hash
		if err := st.CreateAuthCode(ctx, x.code); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.ExchangeAuthCode(ctx, x.code.Hash, func(data.AuthCode) (data.Family, error) { return x.fam, nil }); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
	}
	for i, end := range []time.Duration{time.Hour, -time.Second, -time.Hour} {
		if err := st.CreateSession(ctx, data.Session{Hash: data.Hash("session-" + string(rune('a'+i))), UserID: 1, CSRF: "csrf",
			CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(end)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	type report struct {
		Users, Clients, Grants, Keys int
		AuthCodes                    int `json:"auth_codes"`
		Families, Sessions           int
		Expired                      struct {
			AuthCodes          int `json:"auth_codes"`
			Families, Sessions int
		}
	}
	check := func(what string, rep report) {
		t.Helper()
		if rep.Users != 1 || rep.Clients != 1 || rep.AuthCodes != 2 || rep.Families != 2 || rep.Sessions != 1 ||
			rep.Expired.AuthCodes != 4 || rep.Expired.Families != 2 || rep.Expired.Sessions != 2 {
			t.Errorf("%s: %+v; want 1 user, 1 client; live 2 codes, 2 families, 1 session; expired 4 codes, 2 families, 2 sessions", what, rep)
		}
	}
	dir := t.TempDir()
	var rep report
	oneJSON(t, c.ok("", "store", "copy", "--from", c.db, "--to", filepath.Join(dir, "a.db"), "--json"), &rep)
	check("store copy --json", rep)
	text := c.ok("", "store", "copy", "--from", c.db, "--to", filepath.Join(dir, "b.db"))
	for _, want := range []string{"copied 1 users, 1 clients, 0 grants and 0 signing keys", "live: 2 authorization codes, 2 refresh families and 1 sessions",
		"expired, not yet swept (the sweep removes them): 4 authorization codes, 2 refresh families and 2 sessions"} {
		if !strings.Contains(text, want) {
			t.Errorf("store copy: %q; want it to say %q", text, want)
		}
	}
	oneJSON(t, c.ok("", "store", "copy", "--from", filepath.Join(dir, "a.db"), "--to", filepath.Join(dir, "c.db"), "--json"), &rep)
	check("a copy of the copy", rep)

	if testing.Short() {
		t.Log("-short: the PostgreSQL round trip is skipped")
		return
	}
	pg := pgtest.New(t)
	oneJSON(t, c.ok("", "store", "copy", "--from", c.db, "--to", pg, "--json"), &rep)
	check("into PostgreSQL", rep)
	oneJSON(t, c.ok("", "store", "copy", "--from", pg, "--to", filepath.Join(dir, "d.db"), "--json"), &rep)
	check("out of PostgreSQL", rep)
}
