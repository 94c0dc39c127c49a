package scope

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEScopeTable: the README's scope table, which unknown-scope
// errors point to, lists exactly the scopes of this package, each with its
// level, in the same order.
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
	if len(rows) != len(all) {
		t.Fatalf("README scope table has %d rows; want %d", len(rows), len(all))
	}
	for i, r := range rows {
		if r[1] != all[i].Name || r[2] != all[i].Level.String() {
			t.Errorf("README row %d = %s (%s); want %s (%s)", i+1, r[1], r[2], all[i].Name, all[i].Level)
		}
	}
	if !strings.Contains(sec, "an `ORG_` scope implies the `TEAM_` scope of the same suffix") {
		t.Error("the README's scope section does not state the ORG ⇒ TEAM rule")
	}
}
