package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

func TestListen(t *testing.T) {
	ss := twoStores(t)
	events := make(chan postgres.Event, 100)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ss[1].Listen(lctx, postgres.ListenOptions{Probe: 200 * time.Millisecond}, func(_ context.Context, e postgres.Event) { events <- e })
	}()
	t.Cleanup(func() { cancel(); <-done })
	next := func(what string) postgres.Event {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(5 * time.Second):
			t.Fatalf("no event for %s within 5s", what)
		}
		return postgres.Event{}
	}
	if e := next("the first LISTEN"); !e.Reset {
		t.Fatalf("first event = %+v; want a reset", e)
	}
	if err := ss[0].CreateClient(ctx, client("c")); err != nil {
		t.Fatal(err)
	}
	if e := next("CreateClient"); e.Kind != "client" || e.ID != "c" {
		t.Fatalf("event = %+v; want client c", e)
	}
	if _, err := ss[0].UpdateClient(ctx, "c", func(c data.Client) (data.Client, error) { c.Name = "x"; return c, nil }); err != nil {
		t.Fatal(err)
	}
	if e := next("UpdateClient"); e.Kind != "client" || e.ID != "c" {
		t.Fatalf("event = %+v; want client c", e)
	}
	// A failed update announces nothing.
	ss[0].UpdateClient(ctx, "c", func(c data.Client) (data.Client, error) { c.Scopes = nil; return c, nil })
	if _, err := ss[0].UpdateKeys(ctx, func(ks []data.SigningKey) ([]data.SigningKey, error) { return ks, nil }); err != nil {
		t.Fatal(err)
	}
	if e := next("UpdateKeys"); e.Kind != "keys" {
		t.Fatalf("event = %+v; want keys (a failed update announced itself?)", e)
	}
	if err := ss[0].PutGrant(ctx, data.Grant{UserID: 7, ClientID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := ss[0].DeleteGrant(ctx, 7, "c"); err != nil {
		t.Fatal(err)
	}
	if e := next("DeleteGrant"); e.Kind != "grant" || e.ID != "7 c" {
		t.Fatalf("event = %+v; want grant 7 c", e)
	}
	// Disabling a user announces each grant it deletes.
	u, err := ss[0].CreateUser(ctx, data.User{Email: "u@example.com", CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := ss[0].PutGrant(ctx, data.Grant{UserID: u.ID, ClientID: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ss[0].UpdateUser(ctx, u.ID, func(u data.User) (data.User, error) { u.Disabled = true; return u, nil }); err != nil {
		t.Fatal(err)
	}
	if e := next("disabling a user"); e.Kind != "grant" || e.ID != fmt.Sprintf("%d c", u.ID) {
		t.Fatalf("event = %+v; want grant %d c", e, u.ID)
	}
	// The listener's connection is cut: it reconnects and reports a reset.
	if _, err := ss[0].Pool().Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()", postgres.ListenerName); err != nil {
		t.Fatal(err)
	}
	if e := next("a reconnection"); !e.Reset {
		t.Fatalf("event after the connection was cut = %+v; want a reset", e)
	}
	if st := ss[1].Stats(); st.Reconnects < 1 || st.Resets < 2 || st.Notifications < 5 {
		t.Fatalf("Stats = %+v; want a reconnect, two resets and the five notifications", st)
	}
	if _, err := ss[0].UpdateClient(ctx, "c", func(c data.Client) (data.Client, error) { c.Name = "y"; return c, nil }); err != nil {
		t.Fatal(err)
	}
	if e := next("UpdateClient after the reconnection"); e.Kind != "client" {
		t.Fatalf("event = %+v; want client c", e)
	}
}

// TestListenResync: the safety net, a reset every Resync even when no
// notification came.
func TestListenResync(t *testing.T) {
	ss := twoStores(t)
	resets := make(chan struct{}, 100)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ss[0].Listen(lctx, postgres.ListenOptions{Resync: 200 * time.Millisecond, Probe: time.Second}, func(_ context.Context, e postgres.Event) {
			if e.Reset {
				resets <- struct{}{}
			}
		})
	}()
	defer func() { cancel(); <-done }()
	deadline := time.After(5 * time.Second)
	for n := 0; n < 4; n++ { // the first LISTEN, then three resyncs
		select {
		case <-resets:
		case <-deadline:
			t.Fatalf("%d resets within 5s; want 4 with Resync 200ms", n)
		}
	}
}

// TestCheckSession: the LISTEN connection must keep its session. Straight
// to the server it does; through PgBouncer's transaction pooling
// (OAUTHD_TEST_PGBOUNCER, as in CI) it does not, and CheckSession says
// what to set, while the session URL (straight to the server) passes and
// the listener then gets the changes made through the pool.
func TestCheckSession(t *testing.T) {
	url := pgtest.New(t)
	s := open(t, url)
	if err := s.CheckSession(ctx); err != nil {
		t.Fatalf("CheckSession: %v", err)
	}
	if !pgtest.PgBouncer() {
		t.Log("straight to the server; set " + pgtest.EnvPgBouncer + " for the PgBouncer half")
		return
	}
	pooled, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close()
	err = pooled.CheckSession(ctx)
	if !errors.Is(err, postgres.ErrNoSession) || !strings.Contains(err.Error(), "--db-session-url") {
		t.Fatalf("CheckSession through PgBouncer without a session URL = %v; want ErrNoSession naming --db-session-url", err)
	}
	t.Log(err)
}

func TestCheckPooledURL(t *testing.T) {
	for _, tc := range []struct {
		db, session, want string // want: a part of the error, "" for none
	}{
		{"postgres://h/db", "", ""},
		{"/var/lib/oauthd.db", "", ""},
		{"postgres://pgbouncer:6432/db?default_query_exec_mode=exec", "postgres://pg:5432/db", ""},
		{"postgres://pgbouncer:6432/db?default_query_exec_mode=cache_statement", "postgres://pg:5432/db", ""},
		{"postgres://u:secret@pgbouncer:6432/db", "postgres://pg:5432/db", "add default_query_exec_mode=exec"},
		{"/var/lib/oauthd.db", "postgres://pg:5432/db", "both must be postgres:// URLs"},
		{"postgres://pgbouncer:6432/db?default_query_exec_mode=exec", "pg:5432", "both must be postgres:// URLs"},
		{"postgres://pgbouncer:6432/db?default_query_exec_mode=exec", "postgres://pg:notaport/db", "--db-session-url"},
	} {
		err := postgres.CheckPooledURL(tc.db, tc.session)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckPooledURL(%q, %q) = %v; want nil", tc.db, tc.session, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckPooledURL(%q, %q) = %v; want an error saying %q", tc.db, tc.session, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("CheckPooledURL's error shows the password: %v", err)
		}
	}
}
