package admin

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"oauthd/data"
)

// TestAgentHosts: allow (canonical host, scopes parsed), list, allow again
// (the host's stored clients get the new scopes), deny (the clients are
// refused and every grant revoked), over the socket too.
func TestAgentHosts(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		ctx := context.Background()
		h, err := e.svc.AllowAgentHost(ctx, "Claude.Example:443", []string{"PROFILE_READ,BOOKING_READ"})
		if err != nil || h.Host != "claude.example" || !slices.Equal(h.Scopes, []string{"PROFILE_READ", "BOOKING_READ"}) {
			t.Fatalf("allow = %+v, %v", h, err)
		}
		for _, bad := range [][2]string{{"https://claude.example", "PROFILE_READ"}, {"x.example", "NOPE"}, {"x.example", ""}} {
			if _, err := e.svc.AllowAgentHost(ctx, bad[0], []string{bad[1]}); !errors.Is(err, data.ErrInvalid) {
				t.Errorf("allow %q %q: %v; want ErrInvalid", bad[0], bad[1], err)
			}
		}
		// An assistant's client a user consented to, with a grant.
		id := "https://claude.example/oauth/client.json"
		c := data.Client{ID: id, Name: "Claude", Type: data.Public, RedirectURIs: []string{"https://claude.example/cb"},
			Scopes: []string{"PROFILE_READ", "BOOKING_READ"}, Status: data.StatusApproved, MetadataHost: "claude.example", CreatedAt: t0, UpdatedAt: t0}
		if err := e.store.CreateClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		u, err := e.store.CreateUser(ctx, data.User{Email: "ann@example.com", Name: "Ann", CreatedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		code := data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_x"), ClientID: id, UserID: u.ID, RedirectURI: c.RedirectURIs[0],
			Scopes: []string{"PROFILE_READ"}, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)}
		if err := e.store.CreateAuthCode(ctx, code); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.store.ExchangeAuthCode(ctx, code.Hash, func(data.AuthCode) (data.Family, error) {
			now := time.Now()
			return data.Family{ID: data.NewFamilyID(now), ClientID: id, UserID: u.ID, Scopes: []string{"PROFILE_READ"}, TokenHash: data.Hash("rt"),
				CreatedAt: now, RotatedAt: now, ExpiresAt: now.Add(time.Hour), AbsoluteExp: now.Add(time.Hour), Tagged: true}, nil
		}); err != nil {
			t.Fatal(err)
		}

		// users apps and clients list show the assistant with its host.
		apps, err := e.svc.ListUserApps(ctx, "ann@example.com")
		if err != nil || len(apps) != 1 || apps[0].AgentHost != "claude.example" || apps[0].Developer != "AI assistant from claude.example" {
			t.Errorf("users apps = %+v, %v", apps, err)
		}
		if cv, err := e.svc.ShowClient(ctx, id); err != nil || cv.AgentHost != "claude.example" {
			t.Errorf("clients show = %+v, %v", cv, err)
		}
		if _, err := e.svc.AllowAgentHost(ctx, "claude.example", []string{"PROFILE_READ"}); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.store.GetClient(ctx, id); !slices.Equal(got.Scopes, []string{"PROFILE_READ"}) {
			t.Errorf("client scopes after a narrower allow: %v", got.Scopes)
		}
		list, err := e.svc.ListAgentHosts(ctx)
		if err != nil || len(list) != 1 || list[0].Host != "claude.example" || !list[0].AllowedAt.Equal(t0) {
			t.Errorf("list = %+v, %v", list, err)
		}

		d, err := e.svc.DenyAgentHost(ctx, "CLAUDE.example")
		if err != nil || !slices.Equal(d.Clients, []string{id}) || d.GrantsRevoked != 1 {
			t.Fatalf("deny = %+v, %v; want the client and its grant", d, err)
		}
		if got, _ := e.store.GetClient(ctx, id); got.Status != data.StatusRejected {
			t.Errorf("client status after deny: %s", got.Status)
		}
		if fams, _ := e.store.ListFamilies(ctx, id); len(fams) != 0 {
			t.Errorf("%d families left after deny", len(fams))
		}
		if _, err := e.store.GetAgentHost(ctx, "claude.example"); !errors.Is(err, data.ErrNotFound) {
			t.Errorf("review left after deny: %v", err)
		}
		if _, err := e.svc.DenyAgentHost(ctx, "nobody.example"); !errors.Is(err, data.ErrNotFound) {
			t.Errorf("deny of an unknown host: %v; want ErrNotFound", err)
		}
	})
}
