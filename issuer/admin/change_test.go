package admin

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/memory"
)

// approvedClient creates and approves a confidential client with scopes
// PROFILE_READ BOOKING_READ and redirect URI https://app.example/cb.
func approvedClient(t *testing.T, svc Service) CreatedClient {
	t.Helper()
	c := newClient(t, svc, false)
	if _, err := svc.ApproveClient(t.Context(), c.ClientID); err != nil {
		t.Fatal(err)
	}
	return c
}

func edit(t *testing.T, svc Service, id string, e ClientEdit) EditResult {
	t.Helper()
	r, err := svc.EditClient(t.Context(), id, e)
	if err != nil {
		t.Fatalf("EditClient(%+v): %v", e, err)
	}
	return r
}

func wantSettings(t *testing.T, store data.Store, id string, scopes, uris []string) data.Client {
	t.Helper()
	c, err := store.GetClient(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Scopes, scopes) || !slices.Equal(c.RedirectURIs, uris) {
		t.Errorf("approved settings = %v %v; want %v %v", c.Scopes, c.RedirectURIs, scopes, uris)
	}
	return c
}

// TestEditWidensOnlyByReview: an owner's edit of an approved client applies
// what narrows it at once and keeps what widens it pending until an
// administrator approves it; a rejection leaves the client as it was.
func TestEditWidensOnlyByReview(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		id := approvedClient(t, e.svc).ClientID
		const cb, cb2 = "https://app.example/cb", "https://app.example/cb2"

		// Mixed: BOOKING_READ removed at once, TEAM_BOOKING_READ waits.
		r := edit(t, e.svc, id, ClientEdit{Scopes: []string{"PROFILE_READ", "TEAM_BOOKING_READ"}})
		if !r.Applied || !r.Pending || r.Client.PendingChange == nil ||
			!slices.Equal(r.Client.PendingChange.AddScopes, []string{"TEAM_BOOKING_READ"}) ||
			!slices.Equal(r.Client.PendingChange.Scopes, []string{"PROFILE_READ", "TEAM_BOOKING_READ"}) ||
			r.Client.PendingChange.ProposedBy == "" {
			t.Fatalf("mixed edit = %+v", r)
		}
		wantSettings(t, e.store, id, []string{"PROFILE_READ"}, []string{cb})
		if cs, _ := e.svc.ListClients(t.Context(), "pending"); len(cs) != 1 || cs[0].ClientID != id {
			t.Errorf("ListClients(pending) = %+v; want the client with a pending change", cs)
		}
		if cs, _ := e.svc.ListClients(t.Context(), "approved"); len(cs) != 1 {
			t.Errorf("ListClients(approved) = %d; want the client (approved, with a pending change)", len(cs))
		}

		// A second edit (redirect URIs) keeps the pending scope and adds the URI.
		r = edit(t, e.svc, id, ClientEdit{RedirectURIs: []string{cb, cb2}})
		if r.Applied || !r.Pending || !slices.Equal(r.Client.PendingChange.AddScopes, []string{"TEAM_BOOKING_READ"}) ||
			!slices.Equal(r.Client.PendingChange.AddRedirectURIs, []string{cb2}) {
			t.Fatalf("second edit = %+v", r.Client.PendingChange)
		}
		wantSettings(t, e.store, id, []string{"PROFILE_READ"}, []string{cb})

		// Reject: the change goes, the approved client stays as it was.
		v, err := e.svc.RejectClient(t.Context(), id, "team bookings need a DPA")
		if err != nil || v.Status != "approved" || v.PendingChange != nil || v.RejectedChange == nil ||
			v.RejectedChange.RejectReason != "team bookings need a DPA" || v.RejectReason != "" {
			t.Fatalf("RejectClient(change) = %+v, %v", v, err)
		}
		wantSettings(t, e.store, id, []string{"PROFILE_READ"}, []string{cb})

		// Propose again; an edit that asks for the approved settings withdraws it.
		edit(t, e.svc, id, ClientEdit{RedirectURIs: []string{cb, cb2}})
		r = edit(t, e.svc, id, ClientEdit{RedirectURIs: []string{cb}})
		if r.Pending || r.Client.PendingChange != nil || r.Client.RejectedChange != nil {
			t.Fatalf("withdrawing edit = %+v", r)
		}

		// Propose and approve.
		edit(t, e.svc, id, ClientEdit{RedirectURIs: []string{cb, cb2}, Scopes: []string{"PROFILE_READ", "SCHEDULE_READ"}})
		v, err = e.svc.ApproveClient(t.Context(), id)
		if err != nil || v.PendingChange != nil || v.Status != "approved" {
			t.Fatalf("ApproveClient(change) = %+v, %v", v, err)
		}
		wantSettings(t, e.store, id, []string{"PROFILE_READ", "SCHEDULE_READ"}, []string{cb, cb2})

		// Replacing every approved redirect URI (or scope) would leave the
		// client unusable until the review: refused, saying how to proceed.
		for _, ed := range []ClientEdit{{RedirectURIs: []string{"https://moved.example/cb"}}, {Scopes: []string{"APPS_READ"}}} {
			if _, err := e.svc.EditClient(t.Context(), id, ed); !errors.Is(err, data.ErrInvalid) || !strings.Contains(err.Error(), "keep at least one of the approved") {
				t.Errorf("EditClient(%+v) = %v; want ErrInvalid saying to keep one", ed, err)
			}
		}
		// Pure narrowing applies at once, nothing pends.
		r = edit(t, e.svc, id, ClientEdit{RedirectURIs: []string{cb2}, Scopes: []string{"SCHEDULE_READ"}})
		if !r.Applied || r.Pending {
			t.Fatalf("narrowing edit = %+v", r)
		}
		wantSettings(t, e.store, id, []string{"SCHEDULE_READ"}, []string{cb2})

		// The operator's own changes apply at once, and a pending change
		// they make redundant shrinks or goes.
		edit(t, e.svc, id, ClientEdit{Scopes: []string{"SCHEDULE_READ", "APPS_READ", "APPS_WRITE"}})
		v, err = e.svc.SetScopes(t.Context(), id, []string{"SCHEDULE_READ", "APPS_READ"})
		if err != nil || !slices.Equal(v.Scopes, []string{"SCHEDULE_READ", "APPS_READ"}) || v.PendingChange == nil ||
			!slices.Equal(v.PendingChange.AddScopes, []string{"APPS_WRITE"}) {
			t.Fatalf("SetScopes beside a pending change = %+v, %v", v, err)
		}
		v, err = e.svc.SetScopes(t.Context(), id, []string{"SCHEDULE_READ", "APPS_WRITE"})
		if err != nil || v.PendingChange != nil {
			t.Fatalf("SetScopes covering the pending change = %+v, %v", v, err)
		}

		// Garbage.
		for _, ed := range []ClientEdit{{}, {ClientType: "hybrid"}, {Scopes: []string{"PROFILE_RAED"}}} {
			if _, err := e.svc.EditClient(t.Context(), id, ed); !errors.Is(err, data.ErrInvalid) {
				t.Errorf("EditClient(%+v) = %v; want ErrInvalid", ed, err)
			}
		}
		if _, err := e.svc.EditClient(t.Context(), "nope", ClientEdit{Scopes: []string{"PROFILE_READ"}}); !errors.Is(err, data.ErrNotFound) {
			t.Errorf("EditClient(unknown) = %v; want ErrNotFound", err)
		}
	})
}

// TestEditClientUnderReview: a client that is not approved takes its
// owner's edits directly; it is reviewed as a whole anyway.
func TestEditClientUnderReview(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		id := newClient(t, e.svc, false).ClientID
		r := edit(t, e.svc, id, ClientEdit{Scopes: []string{"ORG_BOOKING_READ"}, RedirectURIs: []string{"https://moved.example/cb"}})
		if !r.Applied || r.Pending {
			t.Fatalf("edit of a pending client = %+v", r)
		}
		wantSettings(t, e.store, id, []string{"ORG_BOOKING_READ"}, []string{"https://moved.example/cb"})
		if _, err := e.svc.RejectClient(t.Context(), id, "no"); err != nil {
			t.Fatal(err)
		}
		r = edit(t, e.svc, id, ClientEdit{Scopes: []string{"PROFILE_READ"}})
		if !r.Applied || r.Pending || r.Client.Status != "rejected" {
			t.Fatalf("edit of a rejected client = %+v", r)
		}
	})
}

// TestEditClientType: either change of type widens and waits; a public
// client that asks to become confidential gets its secret at once (shown
// once), which works only after approval.
func TestEditClientType(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		id := approvedClient(t, e.svc).ClientID
		r := edit(t, e.svc, id, ClientEdit{ClientType: "public"})
		if r.Applied || !r.Pending || r.Client.ClientType != "confidential" || r.Client.PendingChange.ClientType != "public" || r.NewSecret != nil {
			t.Fatalf("confidential → public = %+v", r)
		}
		if c, _ := e.store.GetClient(t.Context(), id); c.Type != data.Confidential || len(c.Secrets) != 1 {
			t.Fatalf("type changed before approval: %+v", c)
		}
		if _, err := e.svc.ApproveClient(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		if c, _ := e.store.GetClient(t.Context(), id); c.Type != data.Public || len(c.Secrets) != 0 {
			t.Fatalf("after approval: %+v; want public without secrets", c)
		}

		r = edit(t, e.svc, id, ClientEdit{ClientType: "confidential"})
		if r.NewSecret == nil || !strings.HasPrefix(r.NewSecret.ClientSecret, data.PrefixClientSecret) || !r.Pending {
			t.Fatalf("public → confidential = %+v", r)
		}
		// An unrelated edit keeps the pending type and its secret, and shows no new one.
		r2 := edit(t, e.svc, id, ClientEdit{Scopes: []string{"PROFILE_READ", "BOOKING_READ", "APPS_READ"}})
		if r2.NewSecret != nil || r2.Client.PendingChange.ClientType != "confidential" {
			t.Fatalf("second edit = %+v", r2)
		}
		if c, _ := e.store.GetClient(t.Context(), id); c.Type != data.Public || len(c.Secrets) != 0 {
			t.Fatalf("type changed before approval: %+v", c)
		}
		if _, err := e.svc.ApproveClient(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		c, _ := e.store.GetClient(t.Context(), id)
		if c.Type != data.Confidential || len(c.Secrets) != 1 || c.Secrets[0].ID != r.NewSecret.SecretID ||
			!data.Equal(c.Secrets[0].Hash, data.Hash(r.NewSecret.ClientSecret)) {
			t.Fatalf("after approval: %+v; want confidential with the secret shown at the edit", c)
		}
	})
}

// TestEditLegacyMigration: the owner's migration of a legacy client
// narrows it (applies at once) and needs the confirmation when it is not
// migration-safe.
func TestEditLegacyMigration(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		if _, err := e.svc.ImportClients(t.Context(), []LegacyClient{{ClientID: "old", Name: "Old", Owner: "dev@example.com",
			RedirectURIs: []string{"https://old.example/cb"}, ClientSecret: "s"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.UpdateClient(t.Context(), "old", func(c data.Client) (data.Client, error) {
			c.Usage = []data.UsageDay{{Day: "2026-03-01", WithoutScope: 2}}
			return c, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.EditClient(t.Context(), "old", ClientEdit{Scopes: []string{"PROFILE_READ"}}); !errors.Is(err, data.ErrConflict) {
			t.Fatalf("unconfirmed unsafe migration = %v; want ErrConflict", err)
		}
		r := edit(t, e.svc, "old", ClientEdit{Scopes: []string{"PROFILE_READ"}, Force: true})
		if !r.Applied || r.Pending || r.Client.Legacy {
			t.Fatalf("confirmed migration = %+v", r)
		}
	})
}

// TestReviewAudit: every step leaves an audit record naming the client.
func TestReviewAudit(t *testing.T) {
	var buf bytes.Buffer
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	l := NewLocal(store, &fakeKeys{}, slog.New(slog.NewTextHandler(&buf, nil)), func() time.Time { return t0 })
	addDev(t, l)
	id := approvedClient(t, l).ClientID
	owner := WithActor(t.Context(), Actor{Via: "settings_page", UID: -1, User: 1, RemoteAddr: "192.0.2.1"})
	steps := []struct {
		do   func() error
		want []string
	}{
		{func() error {
			_, err := l.EditClient(owner, id, ClientEdit{Scopes: []string{"PROFILE_READ", "TEAM_BOOKING_READ"}})
			return err
		}, []string{"event=client_narrowed", "removed_scopes=BOOKING_READ", "event=client_change_proposed", "add_scopes=TEAM_BOOKING_READ",
			`proposed_by="user 1 (settings_page)"`, "actor.user_id=1"}},
		{func() error { _, err := l.RejectClient(t.Context(), id, "not now"); return err },
			[]string{"event=client_change_rejected", `reason="not now"`, "add_scopes=TEAM_BOOKING_READ"}},
		{func() error {
			_, err := l.EditClient(owner, id, ClientEdit{RedirectURIs: []string{"https://app.example/cb", "https://app.example/two"}})
			return err
		}, []string{"event=client_change_proposed", "add_redirect_uris=https://app.example/two"}},
		{func() error { _, err := l.ApproveClient(t.Context(), id); return err },
			[]string{"event=client_change_approved", "add_redirect_uris=https://app.example/two"}},
	}
	for i, st := range steps {
		buf.Reset()
		if err := st.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for _, w := range st.want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("step %d: audit log %q lacks %q", i, buf.String(), w)
			}
		}
		if !strings.Contains(buf.String(), "client_id="+id) {
			t.Errorf("step %d: audit log does not name the client", i)
		}
	}
}

// TestApproveRevision: the owner cannot switch what the operator reviewed
// for something wider between `clients show` and `clients approve
// --revision` (a pending change, or a client under review).
func TestApproveRevision(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		ctx := t.Context()
		// A client under review, edited by its owner after the operator looked.
		id := newClient(t, e.svc, false).ClientID
		seen, _ := e.svc.ShowClient(ctx, id)
		edit(t, e.svc, id, ClientEdit{Scopes: []string{"ORG_MEMBERSHIP_WRITE"}})
		if _, err := e.svc.ApproveRevision(ctx, id, seen.Revision); !errors.Is(err, data.ErrConflict) || !strings.Contains(err.Error(), "nothing was approved") {
			t.Fatalf("ApproveRevision(stale) = %v; want ErrConflict", err)
		}
		if c, _ := e.store.GetClient(ctx, id); c.Status != data.StatusPending {
			t.Fatalf("a stale approval approved the client: %+v", c)
		}
		now, _ := e.svc.ShowClient(ctx, id)
		if now.Revision == seen.Revision {
			t.Fatal("the owner's edit did not change the revision")
		}
		if v, err := e.svc.ApproveRevision(ctx, id, now.Revision); err != nil || v.Status != "approved" {
			t.Fatalf("ApproveRevision(current) = %+v, %v", v, err)
		}
		// A pending change replaced by a wider one.
		edit(t, e.svc, id, ClientEdit{RedirectURIs: []string{"https://app.example/cb", "https://app.example/two"}})
		seen, _ = e.svc.ShowClient(ctx, id)
		edit(t, e.svc, id, ClientEdit{RedirectURIs: []string{"https://app.example/cb", "https://evil.example/cb"}})
		if _, err := e.svc.ApproveRevision(ctx, id, seen.Revision); !errors.Is(err, data.ErrConflict) {
			t.Fatalf("ApproveRevision(replaced change) = %v; want ErrConflict", err)
		}
		if c, _ := e.store.GetClient(ctx, id); len(c.RedirectURIs) != 1 || c.Pending == nil {
			t.Fatalf("a stale approval applied the change: %+v", c)
		}
		// Usage counting or secret use does not change the revision.
		before, _ := e.svc.ShowClient(ctx, id)
		if _, err := e.svc.GenerateSecret(ctx, id); err != nil {
			t.Fatal(err)
		}
		if after, _ := e.svc.ShowClient(ctx, id); after.Revision != before.Revision {
			t.Error("a new secret changed the revision")
		}
	})
}

// TestProtectionsOffOnlyByReview: an owner turning DPoP or PAR on applies
// at once; turning it off waits for review and takes effect only when an
// administrator approves; the operator's SetClientOptions applies at once.
func TestProtectionsOffOnlyByReview(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		id := approvedClient(t, e.svc).ClientID
		on, off := true, false
		r := edit(t, e.svc, id, ClientEdit{DPoPBoundAccessTokens: &on, RequirePAR: &on})
		if !r.Applied || r.Pending || !r.Client.DPoPBoundAccessTokens || !r.Client.RequirePAR {
			t.Fatalf("turning on: %+v", r)
		}
		r = edit(t, e.svc, id, ClientEdit{DPoPBoundAccessTokens: &off})
		if r.Applied || !r.Pending || !r.Client.DPoPBoundAccessTokens || r.Client.PendingChange == nil ||
			!r.Client.PendingChange.DropDPoPBoundAccessTokens || r.Client.PendingChange.DropRequirePAR {
			t.Fatalf("turning off: %+v", r)
		}
		c, _ := e.store.GetClient(t.Context(), id)
		if !c.DPoPBoundAccessTokens || !c.RequirePAR {
			t.Fatalf("in force before review: %+v", c)
		}
		// Turning it back on withdraws the pending change.
		r = edit(t, e.svc, id, ClientEdit{DPoPBoundAccessTokens: &on})
		if r.Pending {
			t.Fatalf("back on: still pending %+v", r.Client.PendingChange)
		}
		edit(t, e.svc, id, ClientEdit{RequirePAR: &off})
		cv, err := e.svc.ApproveClient(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if cv.RequirePAR || !cv.DPoPBoundAccessTokens || cv.PendingChange != nil {
			t.Fatalf("after approval: %+v", cv)
		}
		cv, err = e.svc.SetClientOptions(t.Context(), id, ClientOptions{DPoPBoundAccessTokens: &off})
		if err != nil || cv.DPoPBoundAccessTokens {
			t.Fatalf("operator off: %+v %v", cv, err)
		}
		if _, err := e.svc.SetClientOptions(t.Context(), id, ClientOptions{}); !errors.Is(err, data.ErrInvalid) {
			t.Fatalf("empty options: %v", err)
		}
	})
}

// TestPostLogoutURIsByReview: post-logout redirect URIs (OpenID Connect
// RP-Initiated Logout) are reviewed like redirect URIs: the owner's new
// one on an approved client waits, a removal applies at once, an
// approval applies it; the operator's set applies at once (also over
// the admin socket), and an empty list removes them all.
func TestPostLogoutURIsByReview(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		id := approvedClient(t, e.svc).ClientID
		const out1, out2 = "https://app.example/out", "https://app.example/out2"
		stored := func() data.Client {
			c, err := e.store.GetClient(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}

		r := edit(t, e.svc, id, ClientEdit{PostLogoutRedirectURIs: []string{out1}})
		if r.Applied || !r.Pending || !slices.Equal(r.Client.PendingChange.AddPostLogoutRedirectURIs, []string{out1}) ||
			len(r.Client.PostLogoutRedirectURIs) != 0 || !slices.Equal(r.Client.PendingChange.PostLogoutRedirectURIs, []string{out1}) {
			t.Fatalf("owner adds a post-logout URI: %+v", r)
		}
		if c := stored(); len(c.PostLogoutRedirectURIs) != 0 {
			t.Fatalf("a pending post-logout URI is in force: %v", c.PostLogoutRedirectURIs)
		}
		v, err := e.svc.ApproveClient(t.Context(), id)
		if err != nil || !slices.Equal(v.PostLogoutRedirectURIs, []string{out1}) || v.PendingChange != nil {
			t.Fatalf("approve = %+v, %v", v, err)
		}
		// Removal applies at once; a mixed edit's addition waits.
		r = edit(t, e.svc, id, ClientEdit{PostLogoutRedirectURIs: []string{out2}})
		if !r.Applied || !r.Pending || len(stored().PostLogoutRedirectURIs) != 0 ||
			!slices.Equal(r.Client.PendingChange.AddPostLogoutRedirectURIs, []string{out2}) {
			t.Fatalf("replace: %+v, stored %v", r, stored().PostLogoutRedirectURIs)
		}
		// The operator: at once; the pending change loses what it granted.
		v, err = e.svc.SetPostLogoutRedirectURIs(t.Context(), id, []string{out1, out2})
		if err != nil || !slices.Equal(v.PostLogoutRedirectURIs, []string{out1, out2}) || v.PendingChange != nil {
			t.Fatalf("operator set = %+v, %v", v, err)
		}
		if _, err := e.svc.SetPostLogoutRedirectURIs(t.Context(), id, []string{"http://app.example/out"}); !errors.Is(err, data.ErrInvalid) {
			t.Fatalf("an http post-logout URI: %v; want ErrInvalid", err)
		}
		if v, err := e.svc.SetPostLogoutRedirectURIs(t.Context(), id, nil); err != nil || len(v.PostLogoutRedirectURIs) != 0 {
			t.Fatalf("remove all = %+v, %v", v, err)
		}
		// The owner removes them all (an empty list, not "unchanged").
		e.svc.SetPostLogoutRedirectURIs(t.Context(), id, []string{out1})
		if r := edit(t, e.svc, id, ClientEdit{PostLogoutRedirectURIs: []string{}}); !r.Applied || len(stored().PostLogoutRedirectURIs) != 0 {
			t.Fatalf("owner removes all: %+v", r)
		}
	})
}

// TestGrantTypesWidenOnlyByReview: a grant type added to an approved
// client waits for review like a widened scope; one removed applies at
// once; a client made with grant types has them, one made without keeps
// the record as before (no field: the default).
func TestGrantTypesWidenOnlyByReview(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		id := approvedClient(t, e.svc).ClientID
		if c, _ := e.store.GetClient(t.Context(), id); c.GrantTypes != nil || !c.AllowsGrant(data.GrantRefreshToken) {
			t.Fatalf("default client record: GrantTypes = %v", c.GrantTypes)
		}
		r := edit(t, e.svc, id, ClientEdit{GrantTypes: []string{"authorization_code", "client_credentials"}})
		if !r.Applied || !r.Pending || !slices.Equal(r.Client.PendingChange.AddGrantTypes, []string{data.GrantClientCredentials}) {
			t.Fatalf("edit = %+v %+v", r, r.Client.PendingChange)
		}
		c, _ := e.store.GetClient(t.Context(), id)
		if !slices.Equal(c.AllowedGrantTypes(), []string{data.GrantAuthorizationCode}) {
			t.Fatalf("approved grant types = %v; want refresh_token removed at once, client_credentials waiting", c.AllowedGrantTypes())
		}
		if _, err := e.svc.ApproveClient(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		c, _ = e.store.GetClient(t.Context(), id)
		if !slices.Equal(c.AllowedGrantTypes(), []string{data.GrantAuthorizationCode, data.GrantClientCredentials}) || c.Pending != nil {
			t.Fatalf("after approval: %v (pending %v)", c.AllowedGrantTypes(), c.Pending)
		}
		if _, err := e.svc.EditClient(t.Context(), id, ClientEdit{GrantTypes: []string{"password"}}); err == nil {
			t.Errorf("unknown grant type accepted")
		}

		made, err := e.svc.CreateClient(t.Context(), NewClient{Owner: "dev@example.com", Name: "Sync", Scopes: []string{"BOOKING_READ"},
			GrantTypes: []string{"client_credentials"}})
		if err != nil || !slices.Equal(made.GrantTypes, []string{data.GrantClientCredentials}) {
			t.Fatalf("create machine client = %+v, %v", made, err)
		}
		if _, err := e.svc.CreateClient(t.Context(), NewClient{Owner: "dev@example.com", Name: "Sync", Scopes: []string{"BOOKING_READ"},
			Public: true, GrantTypes: []string{"client_credentials"}}); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("public client_credentials client: %v; want ErrInvalid", err)
		}
	})
}

// TestCreateKeyedClient: a client made with keys gets no secret, and its
// JWK set is checked (public keys only).
func TestCreateKeyedClient(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		pub := `{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`
		c, err := e.svc.CreateClient(t.Context(), NewClient{Owner: "dev@example.com", Name: "Keyed", Scopes: []string{"BOOKING_READ"},
			GrantTypes: []string{"client_credentials"}, JWKS: pub})
		if err != nil || c.ClientSecret != "" || c.TokenEndpointAuthMethod != "private_key_jwt" {
			t.Fatalf("create = %+v, %v; want no secret, private_key_jwt", c, err)
		}
		if _, err := e.svc.GenerateSecret(t.Context(), c.ClientID); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("secret for a keyed client: %v; want ErrInvalid", err)
		}
		priv := strings.Replace(pub, `"kid"`, `"d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI","kid"`, 1)
		if _, err := e.svc.CreateClient(t.Context(), NewClient{Owner: "dev@example.com", Name: "Keyed", Scopes: []string{"BOOKING_READ"},
			GrantTypes: []string{"client_credentials"}, JWKS: priv}); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("private JWK accepted: %v", err)
		}
		if _, err := e.svc.CreateClient(t.Context(), NewClient{Owner: "dev@example.com", Name: "Keyed", Scopes: []string{"BOOKING_READ"},
			GrantTypes: []string{"client_credentials"}, JWKSURI: "http://keys.example.com/jwks"}); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("http jwks_uri accepted: %v", err)
		}
	})
}
