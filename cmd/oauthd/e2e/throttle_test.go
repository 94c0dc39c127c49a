package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"oauthd/consent/consenttest"
)

// The throttles over the real server, from two loopback source addresses
// (Linux routes all of 127.0.0.0/8 to the loopback interface): a flood of
// wrong secrets or passwords from one must not stop correct credentials
// from the other.
const (
	attackerAddr = "127.0.0.2"
	legitAddr    = "127.0.0.3"
)

// fromAddr is an HTTP client whose connections leave from the loopback
// address local, keeping up to conns of them.
func fromAddr(local string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 10 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = d.DialContext
	tr.MaxIdleConnsPerHost = conns
	tr.MaxConnsPerHost = conns
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// browserFrom is a consenttest.Browser whose requests leave from local.
func browserFrom(local string) *consenttest.Browser {
	b := consenttest.New()
	b.Client.Transport = fromAddr(local, 4).Transport
	return b
}

var csrfFieldRE = regexp.MustCompile(`name="csrf_token" value="([^"]*)"`)

// loginSession is the login form's CSRF cookie and token, fetched once and
// then posted with many logins (the double-submit token stays valid).
type loginSession struct {
	cookie *http.Cookie
	token  string
}

func getLoginForm(t *testing.T, hc *http.Client, base string) loginSession {
	t.Helper()
	resp, err := hc.Get(base + "/auth/login")
	if err != nil {
		t.Fatalf("GET /auth/login: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := csrfFieldRE.FindSubmatch(body)
	var ls loginSession
	for _, c := range resp.Cookies() {
		if strings.HasSuffix(c.Name, "oauthd_csrf") {
			ls.cookie = c
		}
	}
	if m == nil || ls.cookie == nil {
		t.Fatalf("GET /auth/login = %d without a CSRF cookie and field", resp.StatusCode)
	}
	ls.token = string(m[1])
	return ls
}

// postLogin sends one login and returns the status.
func postLogin(ctx context.Context, hc *http.Client, base string, ls loginSession, login, pw string) (int, error) {
	return postLoginXFF(ctx, hc, base, ls, login, pw, "")
}

// postLoginXFF is postLogin with an X-Forwarded-For header (when xff is
// not empty).
func postLoginXFF(ctx context.Context, hc *http.Client, base string, ls loginSession, login, pw, xff string) (int, error) {
	form := url.Values{"login": {login}, "password": {pw}, "csrf_token": {ls.token}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/auth/login", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(ls.cookie)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// statusCounts counts answers by status; safe for concurrent use.
type statusCounts struct {
	mu sync.Mutex
	m  map[int]int
}

func (s *statusCounts) add(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[int]int{}
	}
	s.m[code]++
}

func (s *statusCounts) get(code int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[code]
}

func (s *statusCounts) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.m)
}

// floodLogins sends n wrong-password logins at once from local, for the
// logins named (round robin), and counts the answers. Every answer must
// be 401, 429 or 503.
func floodLogins(t *testing.T, base, local string, n int, logins []string, counts *statusCounts) {
	t.Helper()
	sendLogins(t, base, local, n, n, logins, counts)
}

// sendLogins is floodLogins with at most conc logins in flight.
func sendLogins(t *testing.T, base, local string, n, conc int, logins []string, counts *statusCounts) {
	t.Helper()
	hc := fromAddr(local, conc)
	ls := getLoginForm(t, hc, base)
	var wg sync.WaitGroup
	start := make(chan struct{})
	sem := make(chan struct{}, conc)
	for i := range n {
		wg.Go(func() {
			<-start
			sem <- struct{}{}
			defer func() { <-sem }()
			code, err := postLogin(t.Context(), hc, base, ls, logins[i%len(logins)], fmt.Sprintf("wrong password %d", i))
			if err != nil {
				t.Errorf("login from %s: %v", local, err)
				return
			}
			switch code {
			case http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusServiceUnavailable:
			default:
				t.Errorf("wrong login from %s = %d; want 401, 429 or 503", local, code)
			}
			counts.add(code)
		})
	}
	close(start)
	wg.Wait()
	hc.CloseIdleConnections()
}

// TestThrottleTokenFloodOtherAddress: 200 wrong secrets for a client from
// 127.0.0.2 over 16 connections run at most the (client, address) budget
// of 10 secret checks, plus the requests already in flight when the
// budget ran out (failures are counted when they happen: a secret check
// costs next to nothing); the client's right secret from 127.0.0.3 still
// works, from 127.0.0.2 it waits (429, no oracle).
func TestThrottleTokenFloodOtherAddress(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	cl := newTestClient(t, db, "victim")
	first := initialTokens(t, s.base, cl, 1)[0]

	const conns = 16
	attacker := fromAddr(attackerAddr, conns)
	wrong := cl
	wrong.Secret = "oauthd_cs_" + strings.Repeat("A", 43)
	var counts statusCounts
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			r, err := refresh(t.Context(), attacker, s.base, wrong, first.RefreshToken, nil)
			if err != nil {
				t.Error(err)
				return
			}
			counts.add(r.Status)
		})
	}
	wg.Wait()
	t.Logf("200 wrong secrets from %s: %s", attackerAddr, &counts)
	if n := counts.get(http.StatusUnauthorized); n < 10 || n > 10+conns {
		t.Errorf("%d wrong secrets were checked (401); want the (client, address) budget of 10, plus at most the %d in flight", n, conns)
	}
	if n := counts.get(http.StatusUnauthorized) + counts.get(http.StatusTooManyRequests); n != 200 {
		t.Errorf("answers %s; want only 401 and 429", &counts)
	}
	r, err := refresh(t.Context(), attacker, s.base, cl, first.RefreshToken, nil)
	if err != nil || r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Errorf("right secret from the flooding address = %d %v; want 429 with Retry-After", r.Status, err)
	}
	legit := fromAddr(legitAddr, 1)
	r, err = refresh(t.Context(), legit, s.base, cl, first.RefreshToken, nil)
	if err != nil || r.Status != http.StatusOK || r.RefreshToken == "" {
		t.Fatalf("right secret from %s during the flood = %d %s %v; want 200 and tokens", legitAddr, r.Status, r.Body, err)
	}
}

// TestThrottleLoginFloodOtherAddress: 200 wrong passwords sent at once for
// one user from 127.0.0.2 (by email and username, any case) run at most
// the (account, address) budget of password checks; the user signs in
// from 127.0.0.3 through the real authorization flow, and from 127.0.0.2
// waits (429).
func TestThrottleLoginFloodOtherAddress(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	cl := newTestClient(t, db, "victim")

	var counts statusCounts
	floodLogins(t, s.base, attackerAddr, 200, []string{"victim", "VICTIM@example.com", "Victim"}, &counts)
	t.Logf("200 wrong passwords from %s: %s", attackerAddr, &counts)
	if n := counts.get(http.StatusUnauthorized); n < 1 || n > 5 {
		t.Errorf("%d wrong passwords were checked (401); want 1..5, the (account, address) budget", n)
	}

	hc := fromAddr(attackerAddr, 1)
	if code, err := postLogin(t.Context(), hc, s.base, getLoginForm(t, hc, s.base), "victim", testPassword); err != nil || code != http.StatusTooManyRequests {
		t.Errorf("right password from the flooding address = %d %v; want 429", code, err)
	}
	code, verifier := authorizeCode(t, browserFrom(legitAddr), s.base, cl)
	if r, err := exchangeCode(t.Context(), fromAddr(legitAddr, 1), s.base, cl, code, verifier); err != nil || r.Status != http.StatusOK {
		t.Fatalf("code exchange after signing in from %s = %d %v", legitAddr, r.Status, err)
	}
}

// TestThrottleConcurrentSuccesses: right credentials sent at once from one
// address never refuse each other: 60 token requests (over the client's
// budget of 10) and 6 logins of one account (over its budget of 5) on a
// server with 6 password check slots, so that all 6 try to reserve at once.
func TestThrottleConcurrentSuccesses(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db, "--password-slots", "6")
	cl := newTestClient(t, db, "busy")
	hc := fromAddr("127.0.0.6", 60)
	var tokens, logins statusCounts
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() {
			r, err := postForm(t.Context(), hc, introspectURL(s.base), url.Values{"token": {"oauthd_rt_x"}}, cl.ID, cl.Secret, nil)
			if err != nil {
				t.Error(err)
				return
			}
			tokens.add(r.Status)
		})
	}
	wg.Wait()
	if n := tokens.get(http.StatusOK); n != 60 {
		t.Errorf("60 concurrent introspections with the right secret: %s; want 60 × 200", &tokens)
	}
	lc := fromAddr("127.0.0.6", 6)
	ls := getLoginForm(t, lc, s.base)
	for range 6 {
		wg.Go(func() {
			code, err := postLogin(t.Context(), lc, s.base, ls, "busy", testPassword)
			if err != nil {
				t.Error(err)
				return
			}
			logins.add(code)
		})
	}
	wg.Wait()
	if n := logins.get(http.StatusOK); n != 6 {
		t.Errorf("6 concurrent logins with the right password: %s; want 6 × 200", &logins)
	}
}

// TestThrottleLoginSprayOneAddress: wrong passwords spread over many
// logins (known and unknown) from one address stop at the address's
// ceiling of 20 password checks. Four at a time, so that the password
// check queue (503) is not what stops them.
func TestThrottleLoginSprayOneAddress(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	newTestClient(t, db, "victim")
	var logins []string
	for i := range 50 {
		logins = append(logins, fmt.Sprintf("user%d@example.com", i))
	}
	logins = append(logins, "victim")
	var counts statusCounts
	sendLogins(t, s.base, attackerAddr, 200, 4, logins, &counts)
	t.Logf("200 wrong passwords over 51 logins from %s: %s", attackerAddr, &counts)
	if n := counts.get(http.StatusUnauthorized); n < 20 || n > 21 {
		t.Errorf("%d password checks ran (401); want the address's ceiling of 20 (21 if one was regained)", n)
	}
	hc := fromAddr(legitAddr, 1)
	if code, err := postLogin(t.Context(), hc, s.base, getLoginForm(t, hc, s.base), "victim", testPassword); err != nil || code != http.StatusOK {
		t.Errorf("right password from %s = %d %v; want 200", legitAddr, code, err)
	}
}

// TestThrottleTrustedProxy: X-Forwarded-For names the source address
// only when the TCP peer is a configured proxy. Behind the proxy
// (127.0.0.5), a flood from one client does not stop another; from an
// untrusted peer, a forged X-Forwarded-For changes nothing.
func TestThrottleTrustedProxy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db, "--trusted-proxy", "127.0.0.5/32")
	newTestClient(t, db, "victim")
	ctx := t.Context()
	burst := 5
	proxy := fromAddr("127.0.0.5", 1)
	pls := getLoginForm(t, proxy, s.base)
	var last int
	for range burst + 1 {
		last, _ = postLoginXFF(ctx, proxy, s.base, pls, "victim", "wrong", "203.0.113.9, 198.51.100.1")
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("wrong password %d from 198.51.100.1 via the proxy = %d; want 429", burst+1, last)
	}
	if code, err := postLoginXFF(ctx, proxy, s.base, pls, "victim", testPassword, "198.51.100.2"); err != nil || code != http.StatusOK {
		t.Errorf("right password from 198.51.100.2 via the proxy = %d %v; want 200", code, err)
	}
	direct := fromAddr(attackerAddr, 1)
	dls := getLoginForm(t, direct, s.base)
	for i := range burst + 1 {
		last, _ = postLoginXFF(ctx, direct, s.base, dls, "victim", "wrong", fmt.Sprintf("198.51.100.%d", 100+i))
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("wrong password %d from an untrusted peer with forged X-Forwarded-For = %d; want 429", burst+1, last)
	}
}

// peakRSS reads the peak resident set size (VmHWM) of process pid.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// loginPeakRSS is the bound docs/LIMITS.md states for a server whose password
// checks run on loginTestSlots slots, with loginTestConns connections open at
// once (see TestLoginLoadBoundedMemory): 96 MiB + 32 MiB per slot, plus
// 21 KiB per open connection.
const (
	loginTestSlots = 2
	loginTestConns = 300
	loginPeakRSS   = 96<<20 + loginTestSlots*32<<20 + loginTestConns*21<<10
)

// TestLoginLoadBoundedMemory is the load test of the password checks: 300
// wrong-password logins sent at once from one address, then 300 from 100
// addresses (127.0.0.10–127.0.0.109), against a server with 2 password
// check slots. The server's peak RSS stays under docs/LIMITS.md's bound, no
// answer is a 5xx other than 503, and afterwards the user signs in from
// another address.
func TestLoginLoadBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db, "--password-slots", strconv.Itoa(loginTestSlots))
	cl := newTestClient(t, db, "victim")
	pid := s.cmd.Process.Pid
	idle := peakRSS(t, pid)

	var one statusCounts
	var logins []string
	for i := range 30 {
		logins = append(logins, fmt.Sprintf("user%d@example.com", i))
	}
	logins = append(logins, "victim", "VICTIM@example.com")
	floodLogins(t, s.base, attackerAddr, loginTestConns, logins, &one)
	t.Logf("300 logins at once from %s: %s; peak RSS %d MiB", attackerAddr, &one, peakRSS(t, pid)>>20)
	if n := one.get(http.StatusUnauthorized); n > 20 {
		t.Errorf("%d password checks ran for one address; want at most its ceiling of 20", n)
	}

	var spread statusCounts
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			floodLogins(t, s.base, fmt.Sprintf("127.0.0.%d", 10+i), 3, []string{"victim"}, &spread)
		})
	}
	wg.Wait()
	peak := peakRSS(t, pid)
	t.Logf("300 logins at once from 100 addresses: %s", &spread)
	t.Logf("peak RSS: %d MiB idle, %d MiB after the load (bound %d MiB)", idle>>20, peak>>20, loginPeakRSS>>20)
	if peak > loginPeakRSS {
		t.Errorf("peak RSS %d MiB; want at most the stated %d MiB", peak>>20, loginPeakRSS>>20)
	}
	b := browserFrom(legitAddr)
	code, verifier := authorizeCode(t, b, s.base, cl)
	if r, err := exchangeCode(t.Context(), fromAddr(legitAddr, 1), s.base, cl, code, verifier); err != nil || r.Status != http.StatusOK {
		t.Fatalf("code exchange after the load = %d %v", r.Status, err)
	}
}
