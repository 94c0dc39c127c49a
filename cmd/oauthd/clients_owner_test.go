package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIOwner: clients create --owner takes an ID, an email in any
// spelling or a username; clients show and list print the owner's current
// email; clients import leaves an owner that names no user unclaimed (said
// on stderr), listed by clients list --owner unclaimed until clients set
// --owner gives it one.
func TestCLIOwner(t *testing.T) {
	c := newCLI(t)
	addUser(c) // dev@example.com, dev: user 1
	type view struct {
		ID             string `json:"client_id"`
		OwnerID        int64  `json:"owner_id"`
		Owner          string `json:"owner"`
		UnclaimedOwner string `json:"unclaimed_owner"`
	}
	for _, ref := range []string{"1", "dev", "DEV@EXAMPLE.COM", "\uff44\uff45\uff56@example.com"} {
		var created view
		oneJSON(t, c.ok("", "clients", "create", "--owner", ref, "--name", "A", "--redirect-uri", "https://a.example/cb", "--scope", "PROFILE_READ", "--json"), &created)
		var shown view
		oneJSON(t, c.ok("", "clients", "show", created.ID, "--json"), &shown)
		if shown.OwnerID != 1 || shown.Owner != "dev@example.com" {
			t.Errorf("--owner %q: clients show owner %d %q; want 1 dev@example.com", ref, shown.OwnerID, shown.Owner)
		}
	}
	if out := c.ok("", "clients", "list"); !strings.Contains(out, "dev@example.com (user 1)") {
		t.Errorf("clients list does not show the owner as its email and ID:\n%s", out)
	}
	file := filepath.Join(t.TempDir(), "legacy.json")
	if err := os.WriteFile(file, []byte(`[{"client_id":"old-1","name":"Old","owner":"gone@example.com","redirect_uris":["https://old.example/cb"],"client_secret":"legacy-secret"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := c.run("", "clients", "import", file)
	if err != nil || !strings.Contains(errOut, `client old-1 is unclaimed: its owner "gone@example.com" names no user`) {
		t.Errorf("clients import: %v, stderr %q; want the unclaimed client named", err, errOut)
	}
	var unclaimed []view
	oneJSON(t, c.ok("", "clients", "list", "--owner", "unclaimed", "--json"), &unclaimed)
	if len(unclaimed) != 1 || unclaimed[0].ID != "old-1" || unclaimed[0].UnclaimedOwner != "gone@example.com" {
		t.Errorf("clients list --owner unclaimed = %+v; want old-1", unclaimed)
	}
	if out := c.ok("", "clients", "show", "old-1"); !strings.Contains(out, "unclaimed (was gone@example.com)") {
		t.Errorf("clients show of an unclaimed client:\n%s", out)
	}
	c.fails(`--owner "someone": give a user ID`, "", "clients", "list", "--owner", "someone")
	c.ok("", "clients", "set", "old-1", "--owner", "dev")
	oneJSON(t, c.ok("", "clients", "list", "--owner", "unclaimed", "--json"), &unclaimed)
	var mine []view
	oneJSON(t, c.ok("", "clients", "list", "--owner", "1", "--json"), &mine)
	if len(unclaimed) != 0 || len(mine) != 5 {
		t.Errorf("after clients set --owner dev: %d unclaimed, %d of user 1's; want 0, 5", len(unclaimed), len(mine))
	}
}
