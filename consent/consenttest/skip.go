package consenttest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// browserTests are the tests that drive Chromium ([Chrome]), by package
// directory. [FindChromium] refuses a test that is not listed, so that the
// line [Main] prints names them all.
var browserTests = []struct{ dir, test string }{
	{"./cmd/oauthd/e2e", "TestBrowser"},
	{"./cmd/oauthd/e2e", "TestBrowserCORS"},
	{"./cmd/oauthd/e2e", "TestHandoverBrowser"},
	{"./cmd/oauthd/e2e", "TestReviewWidening"},
	{"./consent", "TestBrowserFlow"},
	{"./consent/settings", "TestSettingsBrowser"},
	{"./consent/settings", "TestAppsBrowser"},
}

// HowToRunBrowserTests is what the skip line tells the reader to do.
const HowToRunBrowserTests = "apt-get install chromium (or set OAUTHD_CHROMIUM to a Chromium or Chrome binary) and run go test ./... again"

var (
	skippedMu sync.Mutex
	skipped   []string // this process's tests skipped for want of Chromium
)

// listed fails t unless its top-level test is in browserTests.
func listed(t testing.TB) {
	t.Helper()
	top, _, _ := strings.Cut(t.Name(), "/")
	if !slices.ContainsFunc(browserTests, func(b struct{ dir, test string }) bool { return b.test == top }) {
		t.Fatalf("%s drives Chromium but is not in consenttest's browserTests: add it there", top)
	}
}

// skipBrowser records t as skipped for want of Chromium and skips it.
func skipBrowser(t testing.TB) {
	t.Helper()
	top, _, _ := strings.Cut(t.Name(), "/")
	skippedMu.Lock()
	skipped = append(skipped, top)
	skippedMu.Unlock()
	t.Skip("chromium not found: skipping the real-browser test; to run it: " + HowToRunBrowserTests)
}

// SkipLine is the line [Main] prints when browser tests were skipped.
func SkipLine() string {
	var parts []string
	for i, b := range browserTests {
		if i > 0 && browserTests[i-1].dir == b.dir {
			parts[len(parts)-1] += ", " + b.test
			continue
		}
		parts = append(parts, b.dir+" "+b.test)
	}
	return "oauthd: chromium not found, so the browser tests were skipped (" + strings.Join(parts, "; ") + "); to run them: " + HowToRunBrowserTests
}

// Main runs the package's tests; a package with browser tests calls it from
// TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(consenttest.Main(m)) }
//
// When a browser test was skipped for want of Chromium, it prints
// [SkipLine] once per `go test` run, however many packages skipped one,
// where it is seen without -v: `go test ./...` shows nothing of a passing
// package but its "ok" line, so the line goes to the go command's own
// standard error when it can (Linux; see skipNoticeTarget), and to this
// process's otherwise.
func Main(m *testing.M) int {
	code := m.Run()
	skippedMu.Lock()
	n := len(skipped)
	skippedMu.Unlock()
	if n > 0 && firstInRun() {
		w, closeW := skipNoticeTarget()
		fmt.Fprintln(w, SkipLine())
		closeW()
	}
	return code
}

// Notice prints line once where a `go test` run shows it even when the
// package passes without -v (see skipNoticeTarget). The end-to-end suites
// (cmd/oauthd/e2e) say with it that -short skipped them.
func Notice(line string) {
	w, closeW := skipNoticeTarget()
	fmt.Fprintln(w, line)
	closeW()
}

// goParent returns the pid of the go command that runs this test binary, or
// 0 when the parent is something else (or this is not Linux).
func goParent() int {
	if runtime.GOOS != "linux" {
		return 0
	}
	ppid := os.Getppid()
	exe, err := os.Readlink("/proc/" + strconv.Itoa(ppid) + "/exe")
	if err != nil || filepath.Base(exe) != "go" {
		return 0
	}
	return ppid
}

// firstInRun reports whether this process is the first of its `go test`
// run to print the skip line: a marker file named after the go command's
// pid and start time, created exclusively, says so. Markers of finished
// runs are removed. Without a go parent every process prints.
func firstInRun() bool {
	ppid := goParent()
	if ppid == 0 {
		return true
	}
	start := procStart(ppid)
	if start == "" {
		return true
	}
	prefix := filepath.Join(os.TempDir(), "oauthd-browser-skip-")
	if old, _ := filepath.Glob(prefix + "*"); len(old) > 0 {
		for _, f := range old {
			pid, st, ok := strings.Cut(strings.TrimPrefix(f, prefix), "-")
			if n, err := strconv.Atoi(pid); ok && err == nil && procStart(n) != st {
				os.Remove(f)
			}
		}
	}
	f, err := os.OpenFile(prefix+strconv.Itoa(ppid)+"-"+start, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return !os.IsExist(err) // another process printed it; any other error: print
	}
	f.Close()
	return true
}

// procStart is the start time of process pid (field 22 of /proc/PID/stat),
// "" when there is no such process.
func procStart(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(raw[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fields[19] // field 22: fields 3.. start at index 0
}

// skipNoticeTarget returns where the skip line is seen. The go command
// captures a test binary's output and drops it when the package passes
// (unless -v), so the line goes to the go command's standard error,
// reopened through /proc, when:
//   - the parent is the go command and this process's standard error is
//     not already the same file (then go streams the output: local
//     directory mode);
//   - and appending there cannot be overwritten by the go command's next
//     write: its standard error is a terminal, a pipe or a socket, or a
//     file opened for appending, or a file that is not also its standard
//     output.
//
// Otherwise it is this process's standard error (shown with -v).
func skipNoticeTarget() (w *os.File, closeW func()) {
	fallback := func() (*os.File, func()) { return os.Stderr, func() {} }
	ppid := goParent()
	if ppid == 0 {
		return fallback()
	}
	fd := "/proc/" + strconv.Itoa(ppid) + "/fd/"
	parentErr, err := os.Stat(fd + "2")
	if err != nil {
		return fallback()
	}
	if own, err := os.Stderr.Stat(); err == nil && os.SameFile(own, parentErr) {
		return fallback()
	}
	if parentErr.Mode().IsRegular() && !appending(ppid, 2) {
		if parentOut, err := os.Stat(fd + "1"); err != nil || os.SameFile(parentOut, parentErr) {
			return fallback()
		}
	}
	f, err := os.OpenFile(fd+"2", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fallback()
	}
	return f, func() { f.Close() }
}

// appending reports whether process pid's file descriptor fd was opened
// with O_APPEND (its flags in /proc/PID/fdinfo, in octal).
func appending(pid, fd int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&uint64(os.O_APPEND) != 0
		}
	}
	return false
}
