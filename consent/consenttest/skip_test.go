package consenttest

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestSkipLineOnce runs `go test` on the packages with browser tests, as a
// developer without Chromium would (OAUTHD_CHROMIUM=none), and checks that
// its output, without -v, holds the skip line exactly once.
func TestSkipLineOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test in a subprocess")
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("the line reaches the go command's output through /proc (Linux)")
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OAUTHD_CHROMIUM=") || strings.HasPrefix(kv, "CI=")
	})
	cmd := exec.Command("go", "test", "-count=1", "-run", "^(TestBrowser|TestBrowserFlow|TestSettingsBrowser)$", "oauthd/consent", "oauthd/consent/settings", "oauthd/cmd/oauthd/e2e")
	cmd.Env = append(env, "OAUTHD_CHROMIUM=none")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), SkipLine()); n != 1 {
		t.Errorf("the skip line appears %d times in go test's output; want once:\n%s", n, out)
	}
	for _, b := range browserTests {
		if !strings.Contains(SkipLine(), b.test) {
			t.Errorf("the skip line does not name %s", b.test)
		}
	}
}
