package datatest

import (
	"encoding/json"
	"testing"

	"oauthd/data"
)

// LegacyIdentity is what a store written before identities by ID (issue
// 22) may hold, for the backends' upgrade tests: users that are one
// identifier under ident.Key but were two under strings.ToLower, and
// clients whose owner is an email (the "owner" of the old record).
type LegacyIdentity struct {
	Users   []data.User
	Clients []LegacyClient
}

// LegacyClient is a client record as the old release stored it: Body is
// its JSON, with "owner" and no owner_id.
type LegacyClient struct {
	ID, Owner string
	Body      json.RawMessage
	Want      int64 // the owner's ID after the upgrade; 0: unclaimed
}

// OldIdentity returns the legacy records. Keys of the old indexes are
// strings.ToLower of the email and username.
func OldIdentity() LegacyIdentity {
	us := []data.User{
		{ID: 1, Email: "sam@plat.test", Username: "sam", Name: "Sam", CreatedAt: t0},
		{ID: 2, Email: "\u017fam@plat.test", Username: "longs", Name: "Long S", CreatedAt: t0},
		{ID: 3, Email: "dan@plat.test", Username: "dan", Name: "Dan", CreatedAt: t0},
		{ID: 4, Email: "wide@plat.test", Username: "\uff44\uff41\uff4e", Name: "Wide", CreatedAt: t0},
	}
	var cs []LegacyClient
	for _, c := range []struct {
		id, owner string
		want      int64
	}{
		{"c-sam", "sam@plat.test", 1},
		{"c-longs", "\u017fam@plat.test", 2}, // exact match wins over the canonical one
		{"c-dan", "Dan@Plat.Test", 3},        // the one canonical match
		{"c-ambiguous", "SAM@plat.test", 0},  // two users match canonically: never guess
		{"c-gone", "gone@plat.test", 0},      // no user
	} {
		rec := newClient(c.id)
		rec.OwnerID = 0
		raw, _ := json.Marshal(rec)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		delete(m, "owner_id")
		m["owner"] = c.owner
		body, _ := json.Marshal(m)
		cs = append(cs, LegacyClient{ID: c.id, Owner: c.owner, Body: body, Want: c.want})
	}
	return LegacyIdentity{Users: us, Clients: cs}
}

// CheckIdentityUpgrade checks a store opened (upgraded) on [OldIdentity]:
// the first user of each clash keeps the identifier, the later one keeps
// its record and can log in with its other identifier, be updated and
// disabled; nothing is merged; new look-alikes are refused; each client
// belongs to its owner's ID or is unclaimed.
func CheckIdentityUpgrade(t *testing.T, s data.Store) {
	t.Helper()
	old := OldIdentity()
	list, err := s.ListUsers(ctx)
	wantErr(t, "ListUsers", err, nil)
	if len(list) != len(old.Users) {
		t.Fatalf("%d users after the upgrade; want %d (none merged or dropped)", len(list), len(old.Users))
	}
	for login, want := range map[string]int64{
		"sam@plat.test": 1, "\u017fam@plat.test": 1, "SAM": 1, "longs": 2,
		"dan": 3, "\uff44\uff41\uff4e": 3, "wide@plat.test": 4,
	} {
		u, err := s.GetUserByLogin(ctx, login)
		if err != nil || u.ID != want {
			t.Errorf("GetUserByLogin(%q) = user %d, %v; want %d", login, u.ID, err, want)
		}
	}
	for _, u := range []data.User{
		{Email: "SAM@plat.test", Username: "new1"},
		{Email: "new2@plat.test", Username: "DAN"},
	} {
		_, err := s.CreateUser(ctx, u)
		wantErr(t, "CreateUser(look-alike after the upgrade)", err, data.ErrExists)
	}
	// The user left out of the email index can still be changed and
	// disabled; given an email of its own, it is found by it.
	_, err = s.UpdateUser(ctx, 2, func(u data.User) (data.User, error) { u.Name = "Long S (renamed)"; return u, nil })
	wantErr(t, "UpdateUser(2, name)", err, nil)
	_, err = s.UpdateUser(ctx, 2, func(u data.User) (data.User, error) { u.Email = "longs@plat.test"; return u, nil })
	wantErr(t, "UpdateUser(2, own email)", err, nil)
	if u, err := s.GetUserByLogin(ctx, "longs@plat.test"); err != nil || u.ID != 2 {
		t.Errorf("GetUserByLogin(longs@plat.test) = %d, %v; want 2", u.ID, err)
	}
	if u, err := s.GetUserByLogin(ctx, "sam@plat.test"); err != nil || u.ID != 1 {
		t.Errorf("after user 2's change, GetUserByLogin(sam@plat.test) = %d, %v; want 1 (the holder keeps it)", u.ID, err)
	}
	_, err = s.UpdateUser(ctx, 4, func(u data.User) (data.User, error) { u.Disabled = true; return u, nil })
	wantErr(t, "UpdateUser(4, disable)", err, nil)
	if u, err := s.GetUser(ctx, 4); err != nil || !u.Disabled || u.Username != "\uff44\uff41\uff4e" {
		t.Errorf("GetUser(4) = %+v, %v; want disabled, its username as stored", u, err)
	}

	for _, lc := range old.Clients {
		c, err := s.GetClient(ctx, lc.ID)
		if err != nil {
			t.Errorf("GetClient(%s): %v", lc.ID, err)
			continue
		}
		switch {
		case lc.Want != 0 && (c.OwnerID != lc.Want || c.UnclaimedOwner != ""):
			t.Errorf("client %s (owner %q): owner %d %q; want user %d", lc.ID, lc.Owner, c.OwnerID, c.UnclaimedOwner, lc.Want)
		case lc.Want == 0 && (c.OwnerID != 0 || c.UnclaimedOwner != lc.Owner):
			t.Errorf("client %s (owner %q): owner %d %q; want unclaimed %q", lc.ID, lc.Owner, c.OwnerID, c.UnclaimedOwner, lc.Owner)
		}
		if err := data.ValidateClient(c); err != nil {
			t.Errorf("client %s after the upgrade: %v", lc.ID, err)
		}
	}
}
