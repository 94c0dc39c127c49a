package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.etcd.io/bbolt"

	"oauthd/data"
	"oauthd/keys/verify/dpoptest"
)

// Item 5 of issue 22: nothing an unauthenticated caller sends is stored.
// The flood below is what anyone can send: a public client's ID is
// public, so token requests in its name with fresh, valid DPoP proofs,
// pushed authorization requests and their request_uris followed without a
// session; and anonymous requests to every other endpoint (login with
// wrong passwords, the consent decision, revocation, introspection, the
// settings pages, logout, /v2/me).

// anonFlood sends the flood to the server at base (its base and app URL)
// for the public client pub, n rounds. It returns the number of requests
// and fails on any 5xx.
func anonFlood(t *testing.T, base, pub string, n int) int {
	t.Helper()
	var (
		mu    sync.Mutex
		count int
		bad   []string
	)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}
	do := func(method, path string, form url.Values, h http.Header) (int, string) {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequest(method, base+path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for k, vs := range h {
			req.Header[k] = vs
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return 0, ""
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		mu.Lock()
		count++
		// A 503 with Retry-After is load shedding (the login's password
		// checks all busy on a loaded machine), not a failure.
		if resp.StatusCode >= 500 && (resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "") {
			bad = append(bad, fmt.Sprintf("%s %s = %d %s", method, path, resp.StatusCode, b))
		}
		mu.Unlock()
		return resp.StatusCode, string(b)
	}
	k := dpoptest.NewES256()
	tokenURL := base + "/v2/auth/oauth2/token"
	verifier := strings.Repeat("v", 43)
	authz := url.Values{"client_id": {pub}, "response_type": {"code"}, "redirect_uri": {e2eRedirect}, "scope": {"PROFILE_READ"},
		"code_challenge": {pkceChallenge(verifier)}, "code_challenge_method": {"S256"}, "state": {"s"}}
	// The login page's CSRF cookie and field, for valid-looking login posts.
	_, page := do("GET", "/auth/login", nil, nil)
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field on the login page:\n%s", page)
	}
	csrf := m[1]

	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			proof := http.Header{"DPoP": {k.Proof("POST", tokenURL, "")}}
			do("POST", "/v2/auth/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {pub},
				"refresh_token": {data.NewSecret(data.PrefixRefreshToken)}}, proof)
			proof = http.Header{"DPoP": {k.Proof("POST", tokenURL, "")}}
			do("POST", "/v2/auth/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "client_id": {pub},
				"code": {data.NewAuthCode(time.Now())}, "redirect_uri": {e2eRedirect}, "code_verifier": {verifier}}, proof)
			if i%4 != 0 {
				return
			}
			// Pushed requests (limited per address after 30) and their
			// request_uris followed without a session.
			if code, body := do("POST", "/v2/auth/oauth2/par", authz, nil); code == http.StatusCreated {
				uri := regexp.MustCompile(`"request_uri":"([^"]+)"`).FindStringSubmatch(body)
				do("GET", "/auth/oauth2/authorize?"+url.Values{"client_id": {pub}, "request_uri": {uri[1]}}.Encode(), nil, nil)
			}
			do("GET", "/auth/oauth2/authorize?"+authz.Encode(), nil, nil)
			do("POST", "/auth/oauth2/authorize", url.Values{"client_id": {pub}, "decision": {"allow"}, "csrf_token": {"x"}}, nil)
			do("POST", "/auth/login", url.Values{"login": {e2eEmail}, "password": {fmt.Sprint("guess", i)}, "csrf_token": {csrf}}, nil)
			do("POST", "/auth/login", url.Values{"login": {fmt.Sprintf("nobody%d@example.com", i)}, "password": {"x"}, "csrf_token": {csrf}}, nil)
			do("POST", "/v2/auth/oauth2/revoke", url.Values{"client_id": {pub}, "token": {data.NewSecret(data.PrefixRefreshToken)}}, nil)
			do("POST", "/v2/auth/oauth2/introspect", url.Values{"client_id": {pub}, "token": {"eyJhbGciOiJFUzI1NiJ9.e30.x"}}, nil)
			do("POST", "/v2/auth/oauth2/introspect", url.Values{"client_id": {fmt.Sprint("c", i)}, "client_secret": {"s"}, "token": {"t"}}, nil)
			do("GET", "/settings/clients", nil, nil)
			do("POST", "/settings/clients/new", url.Values{"name": {"x"}, "csrf_token": {"x"}}, nil)
			do("POST", "/auth/logout", url.Values{"csrf_token": {"x"}},
				http.Header{"Cookie": {"oauthd_session=" + data.NewSecret(data.PrefixSession)}})
			do("GET", "/v2/me", nil, http.Header{"Authorization": {"Bearer eyJhbGciOiJFUzI1NiJ9.e30.x"}})
			do("GET", "/v2/me", nil, nil)
			do("GET", "/.well-known/revoked-grants", nil, nil)
		})
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d server errors, e.g. %s", len(bad), bad[0])
	}
	return count
}

// pkceChallenge is the S256 challenge of verifier.
func pkceChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// boltRecords counts the records of every bucket of the bbolt file.
func boltRecords(t *testing.T, path string) map[string]int {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]int{}
	db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			out[string(name)] = b.Stats().KeyN
			return nil
		})
	})
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestAnonymousFloodStoresNothingBolt: the flood leaves the bbolt file
// exactly as it was: the same size and the same number of records in
// every bucket.
func TestAnonymousFloodStoresNothingBolt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the server twice")
	}
	e := startE2E(t)
	pub, _ := e.client(t, e2eRedirect, []string{"PROFILE_READ"}, "--public")
	stopServe(t, e.server)
	size0, recs0 := fileSize(t, e.db), boltRecords(t, e.db)

	s := startServe(t, e.db)
	start := time.Now()
	n := anonFlood(t, s.base, pub, 400)
	t.Logf("%d anonymous requests in %s", n, time.Since(start).Round(time.Millisecond))
	// The refusals are counted, not stored.
	_, metrics := e2eGet(t, s.base+"/metrics", "", nil)
	for _, ev := range []string{"client_auth_failed", "login_failed", "login_throttled"} {
		if !regexp.MustCompile(`oauthd_audit_events_total\{event="` + ev + `"\} [1-9]`).MatchString(metrics) {
			t.Errorf("/metrics has no count of %s refusals", ev)
		}
	}
	stopServe(t, s)
	size1, recs1 := fileSize(t, e.db), boltRecords(t, e.db)
	if size1 != size0 {
		t.Errorf("the bbolt file grew from %d to %d bytes", size0, size1)
	}
	for b, c := range recs1 {
		if c != recs0[b] {
			t.Errorf("bucket %s: %d records before the flood, %d after", b, recs0[b], c)
		}
	}
}

// pgRowCounts counts the rows of every table of the database.
func pgRowCounts(t *testing.T, dbURL string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, tb := range tables {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{tb}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[tb] = n
	}
	return out
}

// TestAnonymousFloodStoresNothingPostgres: on PostgreSQL, two replicas
// flooded alike leave every table's row count as it was, except the
// shared failure counters (throttle): one row per (key, address) whose
// failures are being counted, bounded by the limits themselves (an address
// stops being charged once its budget is spent) and collected when the
// budget is whole again.
func TestAnonymousFloodStoresNothingPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers on PostgreSQL")
	}
	rs := startReplicas(t, 2)
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, rs.db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	front, _ := rs.e2es(u.ID)
	pub, _ := front.client(t, e2eRedirect, []string{"PROFILE_READ"}, "--public")
	before := pgRowCounts(t, rs.db)
	start := time.Now()
	n := anonFlood(t, rs.front.URL, pub, 400)
	t.Logf("%d anonymous requests in %s", n, time.Since(start).Round(time.Millisecond))
	after := pgRowCounts(t, rs.db)
	for tb, c := range after {
		switch {
		case tb == "throttle":
			// One address (127.0.0.1): its own key, and (name, address)
			// keys while its budget lasted (burst 30 at the token
			// endpoint, 20 at login, plus refills during the flood).
			if c > 200 {
				t.Errorf("throttle: %d rows after the flood from one address; want a few dozen", c)
			}
			t.Logf("throttle: %d rows before, %d after", before[tb], c)
		case c != before[tb]:
			t.Errorf("table %s: %d rows before the flood, %d after", tb, before[tb], c)
		}
	}
}

// TestAnonymousFloodStoresNothingHandover: with the login handed over to
// the platform, browsers that start a login and come back with forged,
// expired or garbage assertions leave the bbolt file as it was.
func TestAnonymousFloodStoresNothingHandover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the server twice")
	}
	h := startHandover(t)
	id, _ := h.client(t, e2eRedirect, []string{"PROFILE_READ"}, "--public")
	stopServe(t, h.server)
	size0, recs0 := fileSize(t, h.db), boltRecords(t, h.db)
	s := startServe(t, h.db, "--login-url", h.p.URL+"/login", "--login-issuer", h.p.iss, "--login-jwks", h.p.URL+"/jwks.json")
	h.p.mu.Lock()
	h.p.aud = s.base
	h.p.mu.Unlock()
	forger, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	authz := url.Values{"client_id": {id}, "response_type": {"code"}, "redirect_uri": {e2eRedirect}, "scope": {"PROFILE_READ"},
		"code_challenge": {pkceChallenge(strings.Repeat("v", 43))}, "code_challenge_method": {"S256"}}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	n := 0
	for i := range 150 {
		jar := newJar(t)
		c := &http.Client{Jar: jar, CheckRedirect: noRedirect, Timeout: 10 * time.Second}
		// Start a login: oauthd sets the handover cookie and sends the
		// browser to the platform with a challenge.
		resp, err := c.Get(s.base + "/auth/oauth2/authorize?" + authz.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for resp.StatusCode == http.StatusSeeOther && strings.HasPrefix(resp.Header.Get("Location"), "/") {
			if resp, err = c.Get(s.base + resp.Header.Get("Location")); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		loc, _ := url.Parse(resp.Header.Get("Location"))
		challenge := loc.Query().Get("challenge")
		claims := h.p.claims(challenge)
		var assertion string
		switch i % 3 {
		case 0:
			h.p.mu.Lock()
			kid := h.p.kid
			h.p.mu.Unlock()
			assertion = signWith(t, forger, kid, claims) // forged
		case 1:
			claims["iat"], claims["exp"] = time.Now().Add(-2*time.Minute).Unix(), time.Now().Add(-70*time.Second).Unix()
			assertion = h.p.sign(claims) // expired
		default:
			assertion = "eyJhbGciOiJFUzI1NiJ9.e30.x" // garbage
		}
		resp, err = c.Get(s.base + "/auth/login/handover?assertion=" + url.QueryEscape(assertion))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		n += 2
		if resp.StatusCode >= 500 || resp.StatusCode < 400 {
			t.Fatalf("assertion %d = %d; want a 4xx refusal", i, resp.StatusCode)
		}
	}
	t.Logf("%d anonymous handover requests", n)
	stopServe(t, s)
	size1, recs1 := fileSize(t, h.db), boltRecords(t, h.db)
	if size1 != size0 {
		t.Errorf("the bbolt file grew from %d to %d bytes", size0, size1)
	}
	for b, c := range recs1 {
		if c != recs0[b] {
			t.Errorf("bucket %s: %d records before the flood, %d after", b, recs0[b], c)
		}
	}
}
