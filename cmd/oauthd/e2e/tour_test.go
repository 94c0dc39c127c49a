package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestTour runs scripts/tour.sh: the README's install line and five-minute
// tour on a fresh clone of the committed tree, each step checked by its
// output. It first checks that every command the README's tour shows
// ("    $ …" lines) is one the script runs, word for word, so that the
// README cannot drift from what is tried. Locally it skips, with one line,
// when git or curl is missing; in CI (CI=true) it fails instead.
func TestTour(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../../../scripts/tour.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, tour, ok := strings.Cut(string(readme), "\n## Install\n")
	tour, _, ok2 := strings.Cut(tour, "\n## Where your users log in\n")
	if !ok || !ok2 {
		t.Fatal(`README.md lost its "## Install" or "## Where your users log in" heading`)
	}
	cmds := 0
	for line := range strings.Lines(tour) {
		cmd, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "    $ ")
		if !ok {
			continue
		}
		cmds++
		if !strings.Contains(string(script), cmd) {
			t.Errorf("the README's tour shows `%s`, which scripts/tour.sh does not run word for word", cmd)
		}
	}
	if cmds < 10 {
		t.Fatalf("found %d commands in the README's tour; want the install line and the tour's commands", cmds)
	}
	for _, tool := range []string{"git", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing; the tour needs it", tool)
			}
			t.Skipf("skipping the tour: %s is not installed", tool)
		}
	}
	if err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the tour clones the repository, which is not a git checkout here: %v", err)
		}
		t.Skipf("skipping the tour: not a git checkout (%v)", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../../../scripts/tour.sh")
	cmd.Env = cleanEnv()
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/tour.sh: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "every step of the README's tour worked") {
		t.Fatalf("scripts/tour.sh ended without its last line:\n%s", out)
	}
	t.Logf("the tour, as run on a fresh clone (the committed tree; uncommitted changes are not in it):\n%s", out)
}
