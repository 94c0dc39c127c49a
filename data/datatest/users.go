package datatest

import (
	"fmt"
	"testing"

	"oauthd/data"
)

// Users.

func testUsers(t *testing.T, s data.Store) {
	alice, err := s.CreateUser(ctx, data.User{Email: "Alice@Example.com", Username: "Alice", Name: "Alice A", TimeZone: "Europe/Berlin", PasswordHash: "$argon2id$x", CreatedAt: t0})
	wantErr(t, "CreateUser(alice)", err, nil)
	bob, err := s.CreateUser(ctx, data.User{Email: "bob@example.com", Username: "bob", CreatedAt: t0})
	wantErr(t, "CreateUser(bob)", err, nil)
	if alice.ID != 1 || bob.ID != 2 {
		t.Fatalf("IDs = %d, %d; want 1, 2", alice.ID, bob.ID)
	}
	for _, u := range []data.User{
		{Email: "ALICE@example.COM", Username: "other"},
		{Email: "new@example.com", Username: "aLiCe"},
		{Email: "BOB@EXAMPLE.COM", Username: "bobby"},
	} {
		_, err := s.CreateUser(ctx, u)
		wantErr(t, fmt.Sprintf("CreateUser(%q, %q)", u.Email, u.Username), err, data.ErrExists)
	}
	got, err := s.GetUser(ctx, 1)
	wantErr(t, "GetUser(1)", err, nil)
	mustEqual(t, "GetUser(1)", got, alice)
	for _, login := range []string{"alice@example.com", "ALICE", "Alice@Example.com"} {
		got, err := s.GetUserByLogin(ctx, login)
		wantErr(t, "GetUserByLogin("+login+")", err, nil)
		if got.ID != 1 {
			t.Fatalf("GetUserByLogin(%q).ID = %d; want 1", login, got.ID)
		}
	}
	_, err = s.GetUserByLogin(ctx, "carol")
	wantErr(t, "GetUserByLogin(carol)", err, data.ErrNotFound)
	_, err = s.GetUserByLogin(ctx, "")
	wantErr(t, "GetUserByLogin(empty)", err, data.ErrNotFound)
	_, err = s.GetUser(ctx, 3)
	wantErr(t, "GetUser(3)", err, data.ErrNotFound)
	// A failed create does not use up an ID.
	carol, err := s.CreateUser(ctx, data.User{Email: "carol@example.com", Username: "carol", CreatedAt: t0})
	wantErr(t, "CreateUser(carol)", err, nil)
	if carol.ID != 3 {
		t.Fatalf("carol.ID = %d; want 3", carol.ID)
	}
	list, err := s.ListUsers(ctx)
	wantErr(t, "ListUsers", err, nil)
	mustEqual(t, "ListUsers", list, []data.User{alice, bob, carol})
}
