package datatest

import (
	"testing"
	"time"

	"oauthd/data"
)

// Grants and sessions.

func testGrants(t *testing.T, s data.Store) {
	g := data.Grant{UserID: 1, ClientID: "b", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, UpdatedAt: t0}
	wantErr(t, "PutGrant", s.PutGrant(ctx, g), nil)
	got, err := s.GetGrant(ctx, 1, "b")
	wantErr(t, "GetGrant", err, nil)
	mustEqual(t, "GetGrant", got, g)
	g.Scopes = append(g.Scopes, "PROFILE_READ")
	g.UpdatedAt = t0.Add(time.Hour)
	wantErr(t, "PutGrant (replace)", s.PutGrant(ctx, g), nil)
	got, _ = s.GetGrant(ctx, 1, "b")
	mustEqual(t, "GetGrant after replace", got, g)
	ga := data.Grant{UserID: 1, ClientID: "a", Scopes: []string{"PROFILE_READ"}, CreatedAt: t0, UpdatedAt: t0}
	g2 := data.Grant{UserID: 2, ClientID: "a", Scopes: []string{"PROFILE_READ"}, CreatedAt: t0, UpdatedAt: t0}
	wantErr(t, "PutGrant(1, a)", s.PutGrant(ctx, ga), nil)
	wantErr(t, "PutGrant(2, a)", s.PutGrant(ctx, g2), nil)
	list, err := s.ListGrants(ctx, 1)
	wantErr(t, "ListGrants(1)", err, nil)
	mustEqual(t, "ListGrants(1)", list, []data.Grant{ga, g})
	_, err = s.GetGrant(ctx, 2, "b")
	wantErr(t, "GetGrant(2, b)", err, data.ErrNotFound)
	wantErr(t, "DeleteGrant(1, b)", s.DeleteGrant(ctx, 1, "b"), nil)
	wantErr(t, "DeleteGrant(1, b) again", s.DeleteGrant(ctx, 1, "b"), data.ErrNotFound)
	list, _ = s.ListGrants(ctx, 1)
	mustEqual(t, "ListGrants(1) after delete", list, []data.Grant{ga})
	list, _ = s.ListGrants(ctx, 3)
	if len(list) != 0 {
		t.Fatalf("ListGrants(3) = %v; want none", list)
	}
}
