package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jws"
	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
	"oauthd/data"
	"oauthd/data/postgres/pgtest"
)

// rrProxy is a round-robin HTTP proxy in front of the replicas, as a load
// balancer would be. A request whose connection a replica refused (it is
// down: the request never reached it) goes to the next one; any other
// failure is a 502. pin, when set, chooses the replica of a request.
type rrProxy struct {
	mu       sync.Mutex
	backends []string // host:port
	pin      func(*http.Request) int
	next     atomic.Uint64
	tr       *http.Transport
	served   []string // "METHOD /path → i"
}

func newRRProxy() *rrProxy {
	return &rrProxy{tr: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 128}}
}

func (p *rrProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	backends, pin := slices.Clone(p.backends), p.pin
	p.mu.Unlock()
	start := int(p.next.Add(1))
	if pin != nil {
		if i := pin(r); i >= 0 {
			start = i
		}
	}
	for try := range backends {
		i := (start + try) % len(backends)
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host, out.RequestURI = "http", backends[i], ""
		out.Host = r.Host
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp, err := p.tr.RoundTrip(out)
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			continue // this replica is down; the request never reached it
		}
		if err != nil {
			proxyError(w, err.Error())
			return
		}
		p.mu.Lock()
		p.served = append(p.served, fmt.Sprintf("%s %s → %d", r.Method, r.URL.Path, i))
		p.mu.Unlock()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		resp.Body.Close()
		return
	}
	proxyError(w, "no replica answers")
}

// proxyError answers 502 with a JSON body, as a load balancer's error page
// would be (the test client parses every token response as JSON).
func proxyError(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	fmt.Fprintf(w, "{\"error\": \"proxy\", \"error_description\": %q}\n", msg)
}

// replicaSet is n `oauthd serve` processes on one PostgreSQL database
// behind a round-robin proxy whose URL is their base and app URL.
type replicaSet struct {
	db    string
	proxy *rrProxy
	front *httptest.Server
	reps  []*server
	sinks []*logSink // each replica's stderr, when set (else the test log)
}

func (rs *replicaSet) start(t *testing.T, i int) {
	t.Helper()
	var sink *logSink
	if rs.sinks != nil {
		sink = rs.sinks[i]
	}
	s := startServeSink(t, rs.db, sink, "--base-url", rs.front.URL, "--app-url", rs.front.URL)
	u, _ := url.Parse(s.base)
	rs.proxy.mu.Lock()
	rs.reps[i] = s
	rs.proxy.backends[i] = u.Host
	rs.proxy.mu.Unlock()
}

func startReplicas(t *testing.T, n int) *replicaSet {
	t.Helper()
	return startReplicasSinks(t, n, nil)
}

// startReplicasSinks is startReplicas with each replica's stderr in
// sinks[i] (nil: the test log).
func startReplicasSinks(t *testing.T, n int, sinks []*logSink) *replicaSet {
	t.Helper()
	rs := &replicaSet{db: pgtest.New(t), proxy: newRRProxy(), reps: make([]*server, n), sinks: sinks}
	rs.proxy.backends = make([]string, n)
	rs.front = httptest.NewServer(rs.proxy)
	t.Cleanup(rs.front.Close)
	// Started together: they migrate the empty database once, under the
	// advisory lock, and agree on one key set.
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { rs.start(t, i) })
	}
	wg.Wait()
	return rs
}

// each returns an e2e per replica (direct, bypassing the proxy) and one
// for the proxy.
func (rs *replicaSet) e2es(userID int64) (front *e2e, direct []*e2e) {
	front = &e2e{server: &server{base: rs.front.URL, db: rs.db}, userID: userID}
	for _, s := range rs.reps {
		direct = append(direct, &e2e{server: s, userID: userID})
	}
	return front, direct
}

// durations summarizes propagation times.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// awaitAll polls ok on every replica until it holds, and returns how long
// after start each replica took; it fails t after limit.
func awaitAll(t *testing.T, what string, n int, start time.Time, limit time.Duration, ok func(i int) bool) []time.Duration {
	t.Helper()
	took := make([]time.Duration, n)
	var wg sync.WaitGroup
	var failed atomic.Bool
	for i := range n {
		wg.Go(func() {
			for !ok(i) {
				if time.Since(start) > limit {
					failed.Store(true)
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	if failed.Load() {
		t.Fatalf("%s: not seen on every replica within %s (seen after %v)", what, limit, took)
	}
	return took
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 5 * time.Second}

func statusOf(t *testing.T, u string) int {
	resp, err := noRedirect.Get(u)
	if err != nil {
		t.Errorf("GET %s: %v", u, err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestReplicas is the multi-replica end-to-end check: three oauthd serve
// processes on one PostgreSQL database behind a round-robin proxy.
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	ctx := context.Background()
	rs := startReplicas(t, 3)
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, rs.db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	front, direct := rs.e2es(u.ID)
	id, secret := front.client(t, e2eRedirect, []string{"PROFILE_READ", "BOOKING_READ"})

	// Login on one replica, consent on another, code exchange on a third.
	rs.proxy.pin = func(r *http.Request) int {
		switch {
		case strings.HasPrefix(r.URL.Path, "/auth/login"):
			return 0
		case r.URL.Path == "/auth/oauth2/authorize":
			return 1
		case r.URL.Path == "/v2/auth/oauth2/token":
			return 2
		}
		return -1
	}
	verifier, challenge := consenttest.PKCE()
	conf := front.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	code := front.codeFlow(t, ctx, consenttest.New(), conf, oauth2.SetAuthURLParam("code_challenge", challenge), oauth2.SetAuthURLParam("code_challenge_method", "S256"))
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("code exchange on the third replica: %v", err)
	}
	rs.proxy.mu.Lock()
	served := strings.Join(rs.proxy.served, "\n")
	rs.proxy.pin = nil
	rs.proxy.mu.Unlock()
	for _, want := range []string{"POST /auth/login → 0", "POST /auth/oauth2/authorize → 1", "POST /v2/auth/oauth2/token → 2"} {
		if !strings.Contains(served, want) {
			t.Fatalf("the flow did not go %q; served:\n%s", want, served)
		}
	}
	for _, d := range direct {
		d.wantMe(t, tok.AccessToken) // every replica verifies what another signed
	}

	t.Run("refresh race across replicas", func(t *testing.T) {
		for round := range 3 {
			rt := freshGrant(t, ctx, front, id, secret)
			const n = 30
			statuses := make([]int, n)
			errs := make([]string, n)
			tokens := make([]string, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					r := direct[i%3].refresh(t, id, secret, rt)
					statuses[i], errs[i] = r.Status, r.str("error")
					if r.Status == http.StatusOK {
						tokens[i] = r.str("refresh_token")
					}
				})
			}
			close(start)
			wg.Wait()
			won := 0
			for i, s := range statuses {
				switch {
				case s == http.StatusOK:
					won++
				case s == http.StatusBadRequest && errs[i] == "invalid_grant":
				default:
					t.Fatalf("round %d: a racing refresh got %d %q; want 200 or 400 invalid_grant", round, s, errs[i])
				}
			}
			// One rotation wins; serve's reuse grace may let one more
			// racer, presenting what is by then the previous token,
			// rotate once more (a lost response looks the same), which
			// kills the first winner's token: never two live chains.
			if won < 1 || won > 2 {
				t.Fatalf("round %d: %d of %d racing refreshes won; want 1 (or 2 through the reuse grace)", round, won, n)
			}
			live := 0
			for _, tok := range tokens {
				if tok == "" {
					continue
				}
				if r := front.refresh(t, id, secret, tok); r.Status == http.StatusOK {
					live++
				}
			}
			if live > 1 {
				t.Fatalf("round %d: %d winners' refresh tokens still work; want at most one live chain", round, live)
			}
		}
	})

	t.Run("code exchange race across replicas", func(t *testing.T) {
		verifier, challenge := consenttest.PKCE()
		conf := front.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
		code := front.codeFlow(t, ctx, consenttest.New(), conf, oauth2.SetAuthURLParam("code_challenge", challenge), oauth2.SetAuthURLParam("code_challenge_method", "S256"))
		const n = 15
		statuses := make([]int, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				v := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {e2eRedirect},
					"code_verifier": {verifier}, "client_id": {id}, "client_secret": {secret}}
				statuses[i] = e2ePost(t, direct[i%3].tokenURL(), v, "", "").Status
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for _, s := range statuses {
			switch s {
			case http.StatusOK:
				won++
			case http.StatusBadRequest:
			default:
				t.Fatalf("a racing code exchange got %d; want 200 or 400", s)
			}
		}
		if won != 1 {
			t.Fatalf("%d of %d racing exchanges of one code won; want exactly 1 (statuses %v)", won, n, statuses)
		}
	})

	t.Run("propagation", func(t *testing.T) {
		// Client settings: the redirect URIs, changed N times by the
		// CLI; each time, every replica must accept the new URI.
		var all []time.Duration
		for k := range 30 {
			uri := fmt.Sprintf("http://127.0.0.1:9/cb%d", k)
			mustOauthd(t, rs.db, "", "clients", "redirect-uris", "set", id, e2eRedirect, uri)
			start := time.Now()
			q := url.Values{"client_id": {id}, "redirect_uri": {uri}, "scope": {"PROFILE_READ"}, "response_type": {"code"}, "state": {"s"}, "code_challenge": {challenge}}
			took := awaitAll(t, "redirect URI change", 3, start, time.Second, func(i int) bool {
				return statusOf(t, direct[i].base+"/auth/oauth2/authorize?"+q.Encode()) != http.StatusBadRequest
			})
			all = append(all, took...)
		}
		t.Logf("client change propagation over %d observations: p50 %v, p99 %v, max %v", len(all), percentile(all, 0.5), percentile(all, 0.99), slices.Max(all))

		// Secret revocation: a second secret, then the first revoked.
		var gen struct {
			SecretID     string `json:"secret_id"`
			ClientSecret string `json:"client_secret"`
		}
		oneJSON(t, mustOauthd(t, rs.db, "", "clients", "secrets", "generate", id, "--json"), &gen)
		var secrets []struct {
			SecretID string `json:"secret_id"`
		}
		oneJSON(t, mustOauthd(t, rs.db, "", "clients", "secrets", "list", id, "--json"), &secrets)
		oldID := ""
		for _, s := range secrets {
			if s.SecretID != gen.SecretID {
				oldID = s.SecretID
			}
		}
		for _, d := range direct { // the old secret works everywhere first (and is cached)
			if r := e2ePost(t, d.introspectURL(), url.Values{"token": {"x"}}, id, secret); r.Status != http.StatusOK {
				t.Fatalf("introspect with the old secret before revocation = %d", r.Status)
			}
		}
		mustOauthd(t, rs.db, "", "clients", "secrets", "revoke", id, oldID)
		start := time.Now()
		took := awaitAll(t, "secret revocation", 3, start, time.Second, func(i int) bool {
			return e2ePost(t, direct[i].introspectURL(), url.Values{"token": {"x"}}, id, secret).Status == http.StatusUnauthorized
		})
		t.Logf("secret revocation seen by the replicas after %v", took)
		secret = gen.ClientSecret

		// Key rotation: the new next key is published by every replica,
		// and every replica signs with the promoted key.
		before := jwksKIDs(t, direct[0].base)
		var rot struct {
			Active, Next struct{ KID string }
		}
		oneJSON(t, mustOauthd(t, rs.db, "", "keys", "rotate", "--json"), &rot)
		start = time.Now()
		active, next := rot.Active.KID, rot.Next.KID
		took = awaitAll(t, "key rotation", 3, start, time.Second, func(i int) bool {
			return slices.Contains(jwksKIDs(t, direct[i].base), next)
		})
		t.Logf("key rotation published by the replicas after %v", took)
		if slices.Contains(before, next) {
			t.Fatal("the new next key was published before the rotation")
		}
		rt := freshGrant(t, ctx, front, id, secret)
		for i, d := range direct {
			r := d.refresh(t, id, secret, rt)
			if r.Status != http.StatusOK {
				t.Fatalf("refresh on replica %d after the rotation = %d %v", i, r.Status, r.Body)
			}
			rt = r.str("refresh_token")
			front.wantMe(t, r.str("access_token"))
			msg, err := jws.Parse([]byte(r.str("access_token")))
			if err != nil {
				t.Fatal(err)
			}
			if kid := msg.Signatures()[0].ProtectedHeaders().KeyID(); kid != active {
				t.Fatalf("replica %d signed with %s after the rotation; want the new active key %s", i, kid, active)
			}
		}

		// Key revocation: the retired key leaves every replica's JWKS.
		retired := kidIn(keyStates(t, rs.db), "retired")
		mustOauthd(t, rs.db, "", "keys", "revoke", "--", retired)
		start = time.Now()
		took = awaitAll(t, "key revocation", 3, start, time.Second, func(i int) bool {
			return !slices.Contains(jwksKIDs(t, direct[i].base), retired)
		})
		t.Logf("key revocation withdrawn by the replicas after %v", took)

		// Client rejection: every replica refuses the client at once.
		other, otherSecret := front.client(t, e2eRedirect, []string{"PROFILE_READ"})
		ort := freshGrant(t, ctx, front, other, otherSecret)
		_ = ort
		mustOauthd(t, rs.db, "", "clients", "reject", other, "--reason", "abuse")
		start = time.Now()
		took = awaitAll(t, "client rejection", 3, start, time.Second, func(i int) bool {
			return e2ePost(t, direct[i].introspectURL(), url.Values{"token": {"x"}}, other, otherSecret).Status != http.StatusOK
		})
		t.Logf("client rejection seen by the replicas after %v", took)

		// Each replica's metrics count what it heard.
		for i, d := range direct {
			_, body := e2eGet(t, d.base+"/metrics", "", nil)
			m := regexp.MustCompile(`(?m)^oauthd_db_notifications_total (\d+)`).FindStringSubmatch(body)
			if m == nil || m[1] == "0" {
				t.Fatalf("replica %d: oauthd_db_notifications_total = %v; want the notifications it received", i, m)
			}
		}
	})

	t.Run("concurrent keys rotate", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 3)
		outs := make([]string, 3)
		for i := range 3 {
			wg.Go(func() {
				var stderr string
				outs[i], stderr, errs[i] = oauthd(t, rs.db, "", "keys", "rotate", "--json")
				if errs[i] != nil {
					errs[i] = fmt.Errorf("%v: %s", errs[i], stderr)
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("concurrent keys rotate: %v", err)
			}
		}
		states := keyStates(t, rs.db)
		count := map[string]int{}
		for _, s := range states {
			count[s]++
		}
		if count["active"] != 1 || count["next"] != 1 {
			t.Fatalf("after three concurrent rotations: %v; want exactly one active and one next key", states)
		}
		var want []string
		for kid := range states {
			want = append(want, kid)
		}
		slices.Sort(want)
		awaitAll(t, "identical JWKS", 3, time.Now(), time.Second, func(i int) bool {
			return slices.Equal(jwksKIDs(t, direct[i].base), want)
		})
	})

	t.Run("users disable reaches every replica at once", func(t *testing.T) {
		rts := make([]string, 3)
		for i := range rts {
			rts[i] = freshGrant(t, ctx, front, id, secret)
		}
		r := direct[1].refresh(t, id, secret, rts[1])
		if r.Status != http.StatusOK {
			t.Fatalf("refresh before the disable = %d %v", r.Status, r.Body)
		}
		at := r.str("access_token")
		rts[1] = r.str("refresh_token")
		mustOauthd(t, rs.db, "", "users", "disable", e2eEmail)
		// No waiting: nothing of the user is cached by any replica.
		for i, d := range direct {
			if r := d.refresh(t, id, secret, rts[i]); r.Status != http.StatusBadRequest || r.str("error") != "invalid_grant" {
				t.Fatalf("refresh on replica %d after the disable = %d %v; want invalid_grant", i, r.Status, r.Body)
			}
			if status, body := d.me(t, at); status != http.StatusUnauthorized {
				t.Fatalf("/v2/me on replica %d after the disable = %d %s; want 401", i, status, body)
			}
		}
		_, challenge := consenttest.PKCE()
		conf := front.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
		_, err := consenttest.New().Authorize(ctx, conf.AuthCodeURL("st", oauth2.SetAuthURLParam("code_challenge", challenge), oauth2.SetAuthURLParam("code_challenge_method", "S256")), e2eEmail, e2ePassword, true)
		var pe *consenttest.PageError
		if !errors.As(err, &pe) || pe.StatusCode != http.StatusForbidden {
			t.Fatalf("login of the disabled user through the front = %v; want 403", err)
		}
		mustOauthd(t, rs.db, "", "users", "enable", fmt.Sprint(u.ID))
		freshGrant(t, ctx, front, id, secret) // login works again
	})

	t.Run("kill -9 under load, then a full restart", func(t *testing.T) {
		const chains = 6
		last := make([]string, chains)
		for c := range chains {
			last[c] = freshGrant(t, ctx, front, id, secret)
		}
		cut := make([]bool, chains)
		var fiveXX atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for c := range chains {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					r := front.refresh(t, id, secret, last[c])
					switch {
					case r.Status == http.StatusOK:
						last[c] = r.str("refresh_token")
					case r.Status == http.StatusBadGateway:
						// The killed replica had this request: its
						// answer is lost. The chain stops here.
						cut[c] = true
						return
					default:
						if r.Status >= 500 {
							fiveXX.Add(1)
						}
						t.Errorf("chain %d: refresh = %d %v", c, r.Status, r.Body)
						return
					}
				}
			})
		}
		time.Sleep(400 * time.Millisecond)
		rs.reps[2].cmd.Process.Signal(syscall.SIGKILL)
		<-rs.reps[2].done
		time.Sleep(400 * time.Millisecond)
		close(stop)
		wg.Wait()
		if fiveXX.Load() != 0 {
			t.Fatalf("%d responses were 5xx from a replica", fiveXX.Load())
		}
		// A chain cut by the kill: either the killed replica had not
		// committed (the last received token is still the family's
		// current one) or it had, and only its answer was lost (the
		// family moved one step): the reuse grace (serve's default) lets
		// the previous token rotate once more. Either way the last token
		// the client received works.
		lost := 0
		for c := range chains {
			if !cut[c] {
				continue
			}
			famID, _ := data.ParseRefreshToken(last[c])
			var stored []byte
			pgQueryRow(t, rs.db, "SELECT decode(body->>'token_hash', 'base64') FROM families WHERE id = $1", []any{famID}, &stored)
			if !data.Equal(stored, data.Hash(last[c])) {
				lost++
				t.Logf("chain %d: the killed replica committed a rotation whose answer was lost", c)
			}
		}
		check := func(when string) {
			t.Helper()
			for c := range chains {
				r := front.refresh(t, id, secret, last[c])
				if r.Status != http.StatusOK {
					t.Fatalf("%s: chain %d's last received token = %d %v; want 200", when, c, r.Status, r.Body)
				}
				last[c] = r.str("refresh_token")
				front.wantMe(t, r.str("access_token"))
			}
		}
		check("after kill -9 of a replica")

		// All replicas stopped, one restarted: every token still works.
		for i, s := range rs.reps[:2] {
			s.cmd.Process.Signal(syscall.SIGTERM)
			if err := <-s.done; err != nil {
				t.Fatalf("replica %d after SIGTERM: %v", i, err)
			}
		}
		rs.start(t, 1)
		check("after every replica stopped and one restarted")
		nCut := 0
		for _, c := range cut {
			if c {
				nCut++
			}
		}
		t.Logf("%d of %d chains were cut by the kill; %d of them had a rotation committed whose answer was lost, and every chain goes on", nCut, chains, lost)
	})
}

// freshGrant runs a code flow through the front and returns the refresh
// token.
func freshGrant(t *testing.T, ctx context.Context, front *e2e, id, secret string) string {
	t.Helper()
	verifier, challenge := consenttest.PKCE()
	conf := front.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	code := front.codeFlow(t, ctx, consenttest.New(), conf, oauth2.SetAuthURLParam("code_challenge", challenge), oauth2.SetAuthURLParam("code_challenge_method", "S256"))
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("code exchange: %v", err)
	}
	return tok.RefreshToken
}
