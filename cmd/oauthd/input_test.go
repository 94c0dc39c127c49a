package main

import (
	"slices"
	"testing"

	"oauthd/data/password"
)

// TestImportFromStdin: both import commands read "-" as stdin, and name a
// file they cannot read.
func TestImportFromStdin(t *testing.T) {
	c := newCLI(t)
	var ids []string
	oneJSON(t, c.ok(`[{"client_id":"old-1","name":"Old","owner":"old@example.com","redirect_uris":["https://old.example/cb"],"client_secret":"legacy-secret"}]`,
		"clients", "import", "-", "--json"), &ids)
	if !slices.Equal(ids, []string{"old-1"}) {
		t.Errorf("clients import - = %v; want [old-1]", ids)
	}
	hash, err := password.Hash("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	var users []struct {
		Email string `json:"email"`
	}
	oneJSON(t, c.ok(`{"email":"ann@import.example","name":"Ann","password_hash":"`+hash+`"}`+"\n", "users", "import", "-", "--json"), &users)
	if len(users) != 1 || users[0].Email != "ann@import.example" {
		t.Errorf("users import - = %+v; want ann", users)
	}
	c.fails("read /nonexistent/users.csv", "", "users", "import", "/nonexistent/users.csv")
	c.fails("read /nonexistent/clients.json", "", "clients", "import", "/nonexistent/clients.json")
}
