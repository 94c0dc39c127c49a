package admin

import (
	"errors"
	"strings"
	"testing"

	"oauthd/data"
)

// TestImportClientsHostileRecords: a legacy clients file is operator input
// that came from another system; what it names becomes a client ID shown
// in URLs, on the consent and Connected apps pages and in the CLI, and a
// name the user reads before allowing. The attack: a client ID with a
// newline, a bidi override, a fullwidth letter or 5000 bytes (which the
// Connected apps page can then never remove), a name with a bidi override
// (which clients create refuses), and an owner "1" that means the legacy
// system's user 1, not oauthd's user ID 1.
func TestImportClientsHostileRecords(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		dev := addDev(t, e.svc)
		rec := func(id, name, owner string) LegacyClient {
			return LegacyClient{ClientID: id, Name: name, Owner: owner, RedirectURIs: []string{"https://l.example/cb"}, ClientSecret: "s-legacy"}
		}
		for _, tc := range []struct {
			what string
			in   LegacyClient
			want string
		}{
			{"newline in the ID", rec("x\ny", "Legacy", "dev@example.com"), "client_id"},
			{"bidi override in the ID", rec("x\u202ey", "Legacy", "dev@example.com"), "client_id"},
			{"non-ASCII ID", rec("ｘ", "Legacy", "dev@example.com"), "client_id"},
			{"ID with a space", rec("a b", "Legacy", "dev@example.com"), "client_id"},
			{"ID of 5000 bytes", rec(strings.Repeat("a", 5000), "Legacy", "dev@example.com"), "client_id"},
			{"bidi override in the name", rec("legacy1", "Pay\u202egnikooB\u202c", "dev@example.com"), "name"},
			{"escape sequence in the name", rec("legacy2", "Pay\x1b[8m", "dev@example.com"), "name"},
		} {
			_, err := e.svc.ImportClients(t.Context(), []LegacyClient{tc.in})
			if !errors.Is(err, data.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: ImportClients = %v; want ErrInvalid about %s", tc.what, err, tc.want)
			}
		}
		// A numeric owner is the legacy system's, never our user ID: the
		// client is unclaimed, not the developer's (user ID 1).
		if dev.ID != 1 {
			t.Fatalf("dev is user %d; the test needs user 1", dev.ID)
		}
		if _, err := e.svc.ImportClients(t.Context(), []LegacyClient{rec("numowner", "Legacy", "1")}); err != nil {
			t.Fatalf("ImportClients(owner 1) = %v", err)
		}
		if v, _ := e.svc.ShowClient(t.Context(), "numowner"); v.OwnerID != 0 || v.UnclaimedOwner != "1" {
			t.Errorf("owner \"1\" in the file: owner ID %d, unclaimed %q; want unclaimed \"1\", not user ID 1", v.OwnerID, v.UnclaimedOwner)
		}
		// Printable ASCII IDs as other systems make them still import.
		if _, err := e.svc.ImportClients(t.Context(), []LegacyClient{rec("legacy-App.1_x~/:@", "Legacy", "dev@example.com")}); err != nil {
			t.Errorf("ImportClients(printable ID) = %v", err)
		}
	})
}

// TestEmailLongerThanTheLoginForm: the login form takes at most 254 bytes
// (RFC 5321's longest address). The attack: `users add` and `users
// import` took a 312-byte email, so a user imported without a username
// (who logs in with the email) could never sign in.
func TestEmailLongerThanTheLoginForm(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		long := strings.Repeat("a", 255-len("@example.com")) + "@example.com"
		if _, err := e.svc.AddUser(t.Context(), NewUser{Email: long, Username: "longmail", Name: "Long", Password: "correct horse"}); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("AddUser(255-byte email) = %v; want ErrInvalid", err)
		}
		_, err := e.svc.ImportUsers(t.Context(), []ImportUser{{Line: 1, Email: long, Name: "Long",
			PasswordHash: "$2b$04$abcdefghijklmnopqrstuu5e8yHn7wQwCUr0tq1kkT0b6nJ1mVEyS"}})
		if !errors.Is(err, data.ErrInvalid) || !strings.Contains(err.Error(), "254") {
			t.Errorf("ImportUsers(255-byte email) = %v; want refused, saying 254", err)
		}
		ok := long[1:] // 254 bytes
		if _, err := e.svc.AddUser(t.Context(), NewUser{Email: ok, Username: "longmail", Name: "Long", Password: "correct horse"}); err != nil {
			t.Errorf("AddUser(254-byte email) = %v", err)
		}
	})
}
