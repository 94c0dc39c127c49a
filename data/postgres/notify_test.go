package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/postgres"
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
	if _, err := ss[0].Pool().Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN "+postgres.Channel+"' OR query LIKE 'SELECT 1'"); err != nil {
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
