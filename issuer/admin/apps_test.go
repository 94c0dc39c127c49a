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

// giveGrant stores what a consent and a code exchange leave for user 1
// (or uid): the consent grant and a refresh-token family fam, created at
// at and last rotated at last.
func giveGrant(t *testing.T, store *memory.Store, uid int64, fam, client string, scopes []string, at, last time.Time) {
	t.Helper()
	ctx := t.Context()
	g := data.Grant{UserID: uid, ClientID: client, Scopes: scopes, CreatedAt: at, UpdatedAt: at, Stamped: true}
	if c, err := store.GetClient(ctx, client); err == nil {
		g.Review = c.Review.Gen // written under the client's review, as the issuer writes it
	}
	if err := store.PutGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	if fam == "" {
		return
	}
	code := data.Hash("code-" + fam)
	if err := store.CreateAuthCode(ctx, data.AuthCode{Hash: code, ClientID: client, UserID: uid, Scopes: scopes, ExpiresAt: at.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.ExchangeAuthCode(ctx, code, func(data.AuthCode) (data.Family, error) {
		return data.Family{ID: fam, ClientID: client, UserID: uid, Scopes: scopes, TokenHash: data.Hash(fam),
			CreatedAt: at, RotatedAt: last, ExpiresAt: last.Add(time.Hour), AbsoluteExp: last.Add(time.Hour)}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestUserApps: the list (by ID, email and username), its edges (pending
// never, rejected and deleted as such, the permissions and times), and
// the removal, idempotent, through Local and the socket.
func TestUserApps(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		ctx := t.Context()
		dev := addDev(t, e.svc)
		user, err := e.svc.AddUser(ctx, NewUser{Email: "Ann@Example.com", Username: "ann", Name: "Ann", Password: "correct horse"})
		if err != nil {
			t.Fatal(err)
		}
		mk := func(name string, approve bool) string {
			c, err := e.svc.CreateClient(ctx, NewClient{Owner: "dev@example.com", Name: name, RedirectURIs: []string{"https://app.example/cb"},
				Scopes: []string{"PROFILE_READ, BOOKING_READ"}})
			if err != nil {
				t.Fatal(err)
			}
			if approve {
				if _, err := e.svc.ApproveClient(ctx, c.ClientID); err != nil {
					t.Fatal(err)
				}
			}
			return c.ClientID
		}
		zeta, alpha, pending, rejected := mk("Zeta", true), mk("alpha", true), mk("Pending", false), mk("Rejected", true)
		t1, t2 := t0.Add(time.Hour), t0.Add(2*time.Hour)
		uid := user.ID
		giveGrant(t, e.store, uid, "fz1", zeta, []string{"PROFILE_READ"}, t0, t1)
		giveGrant(t, e.store, uid, "fz2", zeta, []string{"BOOKING_READ", "PROFILE_READ"}, t1, t2)
		giveGrant(t, e.store, uid, "", alpha, []string{"BOOKING_READ"}, t1, t1) // consent, no live grant
		giveGrant(t, e.store, uid, "", pending, []string{"BOOKING_READ"}, t1, t1)
		giveGrant(t, e.store, uid, "fr", rejected, []string{"BOOKING_READ"}, t1, t1)
		giveGrant(t, e.store, uid, "", "gone-client", []string{"PROFILE_READ"}, t0, t0)
		giveGrant(t, e.store, dev.ID, "fdev", zeta, []string{"PROFILE_READ"}, t0, t0) // someone else's
		if _, err := e.svc.RejectClient(ctx, rejected, "abuse"); err != nil {
			t.Fatal(err)
		}

		for _, ref := range []string{"2", "ann@example.com", "ANN"} {
			apps, err := e.svc.ListUserApps(ctx, ref)
			if err != nil {
				t.Fatalf("ListUserApps(%q): %v", ref, err)
			}
			var got []string
			for _, a := range apps {
				got = append(got, a.ClientID+":"+a.Status)
			}
			want := []string{"gone-client:deleted", alpha + ":approved", rejected + ":rejected", zeta + ":approved"}
			if !slices.Equal(got, want) {
				t.Fatalf("ListUserApps(%q) = %v; want %v", ref, got, want)
			}
			z := apps[3]
			if z.Name != "Zeta" || z.Developer != "dev@example.com" || !slices.Equal(z.Scopes, []string{"BOOKING_READ", "PROFILE_READ"}) ||
				!z.FirstAllowedAt.Equal(t0) || z.LastUsedAt == nil || !z.LastUsedAt.Equal(t2) || !slices.Equal(z.GrantIDs, []string{"fz1", "fz2"}) {
				t.Fatalf("Zeta = %+v; want both scopes in catalogue order, first allowed %v, last used %v, grants fz1 fz2", z, t0, t2)
			}
			if a := apps[1]; a.LastUsedAt != nil || !slices.Equal(a.Scopes, []string{"BOOKING_READ"}) || len(a.GrantIDs) != 0 {
				t.Fatalf("alpha (consent, no live grant) = %+v; want its consent's scope and no last use", a)
			}
			// The rejection revoked its family; the consent stays listed as rejected.
			if r := apps[2]; len(r.GrantIDs) != 0 || r.Name != "Rejected" {
				t.Fatalf("rejected app = %+v; want no live grant", r)
			}
		}
		if _, err := e.svc.ListUserApps(ctx, "nobody"); !errors.Is(err, data.ErrNotFound) {
			t.Fatalf("ListUserApps(nobody): %v; want ErrNotFound", err)
		}

		// Removing Zeta: both grants, the consent; the developer's grant stays.
		r, err := e.svc.RevokeUserApp(ctx, "ann", zeta)
		if err != nil {
			t.Fatal(err)
		}
		if r.UserID != uid || r.Name != "Zeta" || !slices.Equal(r.RevokedGrantIDs, []string{"fz1", "fz2"}) || !r.ConsentForgotten || r.CodesDeleted != 2 {
			t.Fatalf("RevokeUserApp = %+v", r)
		}
		for _, f := range []string{"fz1", "fz2"} {
			if _, err := e.store.GetFamily(ctx, f); !errors.Is(err, data.ErrNotFound) {
				t.Fatalf("GetFamily(%s) after removal: %v", f, err)
			}
		}
		if _, err := e.store.GetFamily(ctx, "fdev"); err != nil {
			t.Fatalf("another user's grant to the app: %v", err)
		}
		apps, _ := e.svc.ListUserApps(ctx, "ann")
		if slices.ContainsFunc(apps, func(a AppView) bool { return a.ClientID == zeta }) {
			t.Fatalf("ListUserApps after removal still has %s", zeta)
		}
		// Idempotent; an app with no live grant; a deleted client's consent.
		for _, id := range []string{zeta, alpha, "gone-client"} {
			if _, err := e.svc.RevokeUserApp(ctx, "2", id); err != nil {
				t.Fatalf("RevokeUserApp(%s): %v", id, err)
			}
		}
		if _, err := e.svc.RevokeUserApp(ctx, "2", "no-such-client"); !errors.Is(err, data.ErrNotFound) {
			t.Fatalf("RevokeUserApp(unknown client): %v; want ErrNotFound", err)
		}
		if _, err := e.svc.RevokeUserApp(ctx, "2", " "); !errors.Is(err, data.ErrInvalid) {
			t.Fatalf("RevokeUserApp(blank): %v; want ErrInvalid", err)
		}
		apps, _ = e.svc.ListUserApps(ctx, "ann")
		if len(apps) != 1 || apps[0].ClientID != rejected {
			t.Fatalf("ListUserApps at the end = %+v; want the rejected app only", apps)
		}
	})
}

// TestRevokeUserAppAudit: the removal's audit record names who removed
// what.
func TestRevokeUserAppAudit(t *testing.T) {
	var buf bytes.Buffer
	store := memory.New()
	defer store.Close()
	l := NewLocal(store, nil, slog.New(slog.NewTextHandler(&buf, nil)), func() time.Time { return t0 })
	u, err := l.AddUser(t.Context(), NewUser{Email: "ann@example.com", Username: "ann", Name: "Ann", Password: "correct horse"})
	if err != nil {
		t.Fatal(err)
	}
	giveGrant(t, store, u.ID, "f1", "c1", []string{"PROFILE_READ"}, t0, t0)
	ctx := WithActor(t.Context(), Actor{Via: "settings_page", UID: -1, User: u.ID, RemoteAddr: "192.0.2.7"})
	if _, err := l.RevokeUserApp(ctx, "ann", "c1"); err != nil {
		t.Fatal(err)
	}
	rec := buf.String()
	for _, w := range []string{"event=app_access_removed", "user_id=1", "client_id=c1", "grants_revoked=1", "grant_ids=f1",
		"consent_forgotten=true", "actor.via=settings_page", "actor.user_id=1", "actor.remote_addr=192.0.2.7"} {
		if !strings.Contains(rec, w) {
			t.Errorf("audit record %q; want it to contain %q", rec, w)
		}
	}
}

// TestUserAppsShowWhatHolds: the Connected apps list shows of a consent
// what still holds under the client's review (data.ConsentHeld): a scope
// taken from the client and given back is not shown, and a consent from
// before a rejection (the client approved again) is not listed at all.
func TestUserAppsShowWhatHolds(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		ctx := t.Context()
		addDev(t, e.svc)
		user, err := e.svc.AddUser(ctx, NewUser{Email: "ann@example.com", Username: "ann", Name: "Ann", Password: "correct horse"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.svc.CreateClient(ctx, NewClient{Owner: "dev@example.com", Name: "App", RedirectURIs: []string{"https://app.example/cb"},
			Scopes: []string{"PROFILE_READ", "BOOKING_READ"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.ApproveClient(ctx, c.ClientID); err != nil {
			t.Fatal(err)
		}
		giveGrant(t, e.store, user.ID, "", c.ClientID, []string{"BOOKING_READ", "PROFILE_READ"}, t0, t0)
		list := func() []AppView {
			apps, err := e.svc.ListUserApps(ctx, "ann@example.com")
			if err != nil {
				t.Fatal(err)
			}
			return apps
		}
		if apps := list(); len(apps) != 1 || !slices.Equal(apps[0].Scopes, []string{"BOOKING_READ", "PROFILE_READ"}) {
			t.Fatalf("apps = %+v; want the app with both scopes", apps)
		}
		for _, scopes := range [][]string{{"PROFILE_READ"}, {"PROFILE_READ", "BOOKING_READ"}} {
			if _, err := e.svc.SetScopes(ctx, c.ClientID, scopes); err != nil {
				t.Fatal(err)
			}
		}
		if apps := list(); len(apps) != 1 || !slices.Equal(apps[0].Scopes, []string{"PROFILE_READ"}) {
			t.Fatalf("apps after BOOKING_READ was taken and given back = %+v; want PROFILE_READ only", apps)
		}
		if _, err := e.svc.RejectClient(ctx, c.ClientID, "abuse"); err != nil {
			t.Fatal(err)
		}
		if apps := list(); len(apps) != 1 || apps[0].Status != AppRejected {
			t.Fatalf("apps after the rejection = %+v; want the app, rejected", apps)
		}
		if _, err := e.svc.ApproveClient(ctx, c.ClientID); err != nil {
			t.Fatal(err)
		}
		if apps := list(); len(apps) != 0 {
			t.Fatalf("apps after the client was approved again = %+v; want none (the consent is from before the rejection)", apps)
		}
	})
}
