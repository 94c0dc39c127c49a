package scope

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEScopeTable: the README's scope table, which unknown-scope
// errors point to, lists exactly the scheduling API's scopes of this
// package, each with its level, in the same order. The OpenID Connect
// scopes are docs/OIDC.md's (TestOIDCDocScopes).
func TestREADMEScopeTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Scopes\n")
	if !ok {
		t.Fatal(`README.md has no "## Scopes" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| (user|team|organization) \\|")
	rows := row.FindAllStringSubmatch(sec, -1)
	var api []Scope
	for _, s := range all {
		if s.Level != Identity {
			api = append(api, s)
		}
	}
	if len(rows) != len(api) {
		t.Fatalf("README scope table has %d rows; want %d", len(rows), len(api))
	}
	for i, r := range rows {
		if r[1] != api[i].Name || r[2] != api[i].Level.String() {
			t.Errorf("README row %d = %s (%s); want %s (%s)", i+1, r[1], r[2], api[i].Name, api[i].Level)
		}
	}
	if !strings.Contains(sec, "an `ORG_` scope implies the `TEAM_` scope of the same suffix") {
		t.Error("the README's scope section does not state the ORG ⇒ TEAM rule")
	}
}

// TestOIDCDocScopes: docs/OIDC.md names each OpenID Connect scope with
// the claims it releases.
func TestOIDCDocScopes(t *testing.T) {
	b, err := os.ReadFile("../../docs/OIDC.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Level == Identity && !strings.Contains(string(b), "| `"+s.Name+"` |") {
			t.Errorf("docs/OIDC.md has no table row for scope %s", s.Name)
		}
	}
}
