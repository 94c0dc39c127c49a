package scope

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestScopeTableDoc: docs/SCOPES.md's table, which unknown-scope errors
// point to, lists exactly the scopes of this package, each with its
// level, in the same order, and states the ORG ⇒ TEAM rule.
func TestScopeTableDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/SCOPES.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z_]+)` \\| (identity|user|team|organization) \\|")
	rows := row.FindAllStringSubmatch(doc, -1)
	if len(rows) != len(all) {
		t.Fatalf("docs/SCOPES.md's table has %d rows; want %d", len(rows), len(all))
	}
	for i, r := range rows {
		if r[1] != all[i].Name || r[2] != all[i].Level.String() {
			t.Errorf("docs/SCOPES.md row %d = %s (%s); want %s (%s)", i+1, r[1], r[2], all[i].Name, all[i].Level)
		}
	}
	if !strings.Contains(doc, "an `ORG_` scope implies the `TEAM_` scope of the same suffix") {
		t.Error("docs/SCOPES.md does not state the ORG ⇒ TEAM rule")
	}
}
