package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"oauthd/consent/consenttest"
)

// Issue 5's races, through the real binary on a real bbolt file: the same
// refresh token or code sent N times at once, and CLI processes racing on
// the secrets and keys of one database.

// logSink collects a process's stderr lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

// text returns everything logged so far.
func (l *logSink) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// grep returns the lines that contain every one of subs.
func (l *logSink) grep(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// await returns the lines that contain every one of subs once there are
// at least n of them, waiting up to timeout: a server writes its log line
// around its answer, not before it, so a test that just got the answer may
// be a moment ahead of the line.
func (l *logSink) await(n int, timeout time.Duration, subs ...string) []string {
	deadline := time.Now().Add(timeout)
	for {
		got := l.grep(subs...)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// raceN is how many requests or processes each race sends at once.
const raceN = 16

// together runs fn(i) for i in [0, n) in n goroutines released at once.
func together(n int, fn func(i int)) {
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	for i := range n {
		wg.Go(func() {
			ready.Done()
			<-start
			fn(i)
		})
	}
	ready.Wait()
	close(start)
	wg.Wait()
}

// tally counts the answers by status and error code.
func tally(t *testing.T, rs []tokenResult, errs []error) (ok []tokenResult, invalidGrant int) {
	t.Helper()
	for i, r := range rs {
		switch {
		case errs[i] != nil:
			t.Errorf("request %d: %v", i, errs[i])
		case r.Status == http.StatusOK:
			ok = append(ok, r)
		case r.Status == http.StatusBadRequest && r.Error == "invalid_grant":
			invalidGrant++
		default:
			t.Errorf("request %d = %d %s; want 200 or invalid_grant", i, r.Status, r.Body)
		}
	}
	return ok, invalidGrant
}

// TestRaceRefreshSameToken: N concurrent refreshes of one refresh token,
// without the reuse grace (--refresh-reuse-grace 0). Exactly one gets 200,
// the others invalid_grant. The documented outcome for the family (RFC 9700
// §4.14.2, docs/DESIGN.md): the first loser is a reuse of a rotated token,
// so the whole family is revoked, including the winner's new refresh token,
// and the winner's access token is refused by introspection at once. The
// reuse is audited.
func TestRaceRefreshSameToken(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s, logs := startServeLogged(t, db, "--refresh-reuse-grace", "0")
	cl := newTestClient(t, db, "racer")
	first := initialTokens(t, s.base, cl, 1)[0]
	hc := newHTTPClient(raceN)

	rs, errs := make([]tokenResult, raceN), make([]error, raceN)
	together(raceN, func(i int) {
		rs[i], errs[i] = refresh(context.Background(), hc, s.base, cl, first.RefreshToken, nil)
	})
	ok, bad := tally(t, rs, errs)
	if len(ok) != 1 || bad != raceN-1 {
		t.Fatalf("%d concurrent refreshes of one token: %d × 200, %d × invalid_grant; want exactly one 200", raceN, len(ok), bad)
	}
	winner := ok[0]
	r, err := refresh(t.Context(), hc, s.base, cl, winner.RefreshToken, nil)
	if err != nil || r.Status != http.StatusBadRequest || r.Error != "invalid_grant" {
		t.Errorf("the winner's new refresh token after the reuse = %+v, %v; want invalid_grant (family revoked)", r, err)
	}
	if introspectActive(t, hc, s.base, cl, winner.AccessToken) {
		t.Error("the winner's access token is still active at introspection after its family was revoked")
	}
	if introspectActive(t, hc, s.base, cl, winner.RefreshToken) {
		t.Error("introspection says the winner's refresh token is active after the family was revoked")
	}
	if got := logs.grep("event=refresh_token_reuse", "client_id="+cl.ID); len(got) == 0 {
		t.Errorf("no refresh_token_reuse audit record for %s in the log", cl.ID)
	}
}

// TestRaceRefreshSameTokenGrace: the same race with the default reuse
// grace. The token may be presented once more within the grace, so at most
// two requests get 200; never two live chains: every further presentation
// is a reuse, so the family ends revoked and no returned refresh token
// works.
func TestRaceRefreshSameTokenGrace(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	cl := newTestClient(t, db, "racer")
	first := initialTokens(t, s.base, cl, 1)[0]
	hc := newHTTPClient(raceN)

	rs, errs := make([]tokenResult, raceN), make([]error, raceN)
	together(raceN, func(i int) {
		rs[i], errs[i] = refresh(context.Background(), hc, s.base, cl, first.RefreshToken, nil)
	})
	ok, bad := tally(t, rs, errs)
	if len(ok) < 1 || len(ok) > 2 || len(ok)+bad != raceN {
		t.Fatalf("%d concurrent refreshes of one token: %d × 200, %d × invalid_grant; want one or two 200", raceN, len(ok), bad)
	}
	for i, w := range ok {
		r, err := refresh(t.Context(), hc, s.base, cl, w.RefreshToken, nil)
		if err != nil || r.Status != http.StatusBadRequest || r.Error != "invalid_grant" {
			t.Errorf("winner %d's refresh token after the race = %+v, %v; want invalid_grant (one live chain at most, and the reuses revoked it)", i, r, err)
		}
	}
}

// TestRaceCodeExchange: N concurrent exchanges of one code: exactly one
// succeeds. The others are a replay of a used code by its own client
// (RFC 6749 §4.1.2), so the family the winner got is revoked.
func TestRaceCodeExchange(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s, logs := startServeLogged(t, db)
	cl := newTestClient(t, db, "coder")
	hc := newHTTPClient(raceN)
	code, verifier := authorizeCode(t, consenttest.New(), s.base, cl)

	rs, errs := make([]tokenResult, raceN), make([]error, raceN)
	together(raceN, func(i int) {
		rs[i], errs[i] = exchangeCode(context.Background(), hc, s.base, cl, code, verifier)
	})
	ok, bad := tally(t, rs, errs)
	if len(ok) != 1 || bad != raceN-1 {
		t.Fatalf("%d concurrent exchanges of one code: %d × 200, %d × invalid_grant; want exactly one 200", raceN, len(ok), bad)
	}
	r, err := refresh(t.Context(), hc, s.base, cl, ok[0].RefreshToken, nil)
	if err != nil || r.Status != http.StatusBadRequest || r.Error != "invalid_grant" {
		t.Errorf("the winner's refresh token after the code replay = %+v, %v; want invalid_grant (family revoked)", r, err)
	}
	if got := logs.grep("event=code_replay", "client_id="+cl.ID); len(got) == 0 {
		t.Errorf("no code_replay audit record for %s in the log", cl.ID)
	}
}

// runConcurrently runs n CLI processes with args at once and returns how
// many succeeded and the stderr of the failures.
func runConcurrently(t *testing.T, db string, n int, args ...string) (okCount int, failures []string) {
	t.Helper()
	outs, errOuts, errs := make([]string, n), make([]string, n), make([]error, n)
	together(n, func(i int) {
		outs[i], errOuts[i], errs[i] = oauthd(t, db, "", args...)
	})
	for i := range n {
		if errs[i] == nil {
			okCount++
		} else {
			failures = append(failures, strings.TrimSpace(errOuts[i]))
		}
	}
	return okCount, failures
}

func activeSecrets(t *testing.T, db, clientID string) int {
	t.Helper()
	var secrets []map[string]any
	oneJSON(t, mustOauthd(t, db, "", "clients", "secrets", "list", clientID, "--json"), &secrets)
	return len(secrets)
}

// TestRaceSecretsGenerate: concurrent `clients secrets generate` never
// leaves more than 2 active secrets, with serve running (the CLI goes
// through the admin socket) and without (each process opens the file).
func TestRaceSecretsGenerate(t *testing.T) {
	const procs = 6
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	cl := newTestClient(t, db, "rotator") // one secret

	okCount, failures := runConcurrently(t, db, procs, "clients", "secrets", "generate", cl.ID, "--json")
	if okCount != 1 {
		t.Errorf("with serve: %d of %d concurrent generates succeeded; want exactly 1 (the client had 1 secret)", okCount, procs)
	}
	for _, f := range failures {
		if !strings.Contains(f, "already has 2 active secrets") {
			t.Errorf("with serve: a refused generate says %q; want the 2-secret limit", f)
		}
	}
	if n := activeSecrets(t, db, cl.ID); n != 2 {
		t.Errorf("with serve: %d active secrets; want 2", n)
	}

	// Make room for one, stop serve, and race again on the file itself.
	var secrets []struct {
		SecretID string `json:"secret_id"`
	}
	oneJSON(t, mustOauthd(t, db, "", "clients", "secrets", "list", cl.ID, "--json"), &secrets)
	mustOauthd(t, db, "", "clients", "secrets", "revoke", cl.ID, secrets[0].SecretID)
	stopServe(t, s)
	okCount, failures = runConcurrently(t, db, procs, "clients", "secrets", "generate", cl.ID, "--json")
	t.Logf("without serve: %d of %d generates succeeded, refusals: %q", okCount, procs, failures)
	if okCount > 1 {
		t.Errorf("without serve: %d of %d concurrent generates succeeded; want at most 1", okCount, procs)
	}
	for _, f := range failures {
		if !strings.Contains(f, "already has 2 active secrets") && !strings.Contains(f, "in use by another process") {
			t.Errorf("without serve: a refused generate says %q; want the 2-secret limit or the lock", f)
		}
	}
	if n := activeSecrets(t, db, cl.ID); n > 2 || n < 1 {
		t.Errorf("without serve: %d active secrets; want 1 or 2", n)
	}
}

// stopServe sends SIGTERM and waits for a clean exit.
func stopServe(t *testing.T, s *server) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(t, s); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
}

func keyStateCounts(t *testing.T, db string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, st := range keyStates(t, db) {
		m[st]++
	}
	return m
}

// TestRaceKeysRotate: concurrent `keys rotate` leaves exactly one active
// and one next key, with serve running and without.
func TestRaceKeysRotate(t *testing.T) {
	const procs = 5
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)

	okCount, failures := runConcurrently(t, db, procs, "keys", "rotate")
	if okCount != procs {
		t.Errorf("with serve: %d of %d rotations succeeded (%q); each should, one after the other", okCount, procs, failures)
	}
	c := keyStateCounts(t, db)
	if c["active"] != 1 || c["next"] != 1 || c["retired"] != okCount {
		t.Errorf("with serve: key states %v after %d rotations; want 1 active, 1 next, %d retired", c, okCount, okCount)
	}
	states := keyStates(t, db)
	if kids := jwksKIDs(t, s.base); len(kids) != len(states) {
		t.Errorf("JWKS = %v; want every listed key %v", kids, states)
	}

	stopServe(t, s)
	okCount, failures = runConcurrently(t, db, procs, "keys", "rotate")
	t.Logf("without serve: %d of %d rotations succeeded, failures: %q", okCount, procs, failures)
	if okCount < 1 {
		t.Errorf("without serve: no rotation succeeded: %q", failures)
	}
	for _, f := range failures {
		if !strings.Contains(f, "in use by another process") {
			t.Errorf("without serve: a rotation failed with %q; want only the lock", f)
		}
	}
	if c := keyStateCounts(t, db); c["active"] != 1 || c["next"] != 1 {
		t.Errorf("without serve: key states %v; want 1 active, 1 next", c)
	}
}
