package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/postgres/pgtest"
)

// outcome counts the answers of one endpoint during the restart test.
type outcomes struct {
	mu  sync.Mutex
	by  map[string]int // "endpoint status"
	bad []string       // 5xx other than a proper 503
}

func (o *outcomes) add(endpoint string, resp *http.Response, body []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.by[fmt.Sprintf("%s %d", endpoint, resp.StatusCode)]++
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		var b struct {
			Error string `json:"error"`
		}
		json.Unmarshal(body, &b)
		if resp.Header.Get("Retry-After") == "" || b.Error != "temporarily_unavailable" {
			o.bad = append(o.bad, fmt.Sprintf("%s: 503 without Retry-After or temporarily_unavailable: %q %s", endpoint, resp.Header.Get("Retry-After"), body))
		}
	case resp.StatusCode >= 500:
		o.bad = append(o.bad, fmt.Sprintf("%s: %d %s", endpoint, resp.StatusCode, body))
	}
}

func (o *outcomes) count(status int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for k, c := range o.by {
		if strings.HasSuffix(k, fmt.Sprintf(" %d", status)) {
			n += c
		}
	}
	return n
}

// TestPostgresRestartUnderLoad (item 7 of issue 22): PostgreSQL is
// stopped (sessions terminated with admin_shutdown) and started again
// while clients hammer two replicas with refreshes, code exchanges,
// introspection and /v2/me. No answer is a 500: while the database is
// unreachable every one of them is 503 temporarily_unavailable with
// Retry-After; each replica logs the outage once when it starts and
// once when it ends; afterwards every refresh chain goes on.
func TestPostgresRestartUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts PostgreSQL under load")
	}
	pgtest.CanRestart(t)
	ctx := context.Background()
	sinks := []*logSink{{}, {}}
	rs := startReplicasSinks(t, 2, sinks)
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, rs.db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	front, _ := rs.e2es(u.ID)
	id, secret := front.client(t, e2eRedirect, []string{"PROFILE_READ"})
	const chains = 4
	rts := make([]string, chains)
	for i := range rts {
		rts[i] = freshGrant(t, ctx, front, id, secret)
	}
	var at atomic.Value // an access token of chain 0
	at.Store("")

	out := &outcomes{by: map[string]int{}}
	hc := &http.Client{Timeout: 20 * time.Second}
	post := func(endpoint, path string, form url.Values) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", front.base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, secret)
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("%s: %v", endpoint, err)
			return nil, nil
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out.add(endpoint, resp, b)
		return resp, b
	}
	stop := make(chan struct{})
	var dead atomic.Int64
	var wg sync.WaitGroup
	for i := range chains {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, b := post("refresh", "/v2/auth/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rts[i]}})
				switch {
				case resp == nil:
					return
				case resp.StatusCode == http.StatusOK:
					var tok struct{ AccessToken, RefreshToken string }
					var raw map[string]string
					json.Unmarshal(b, &raw)
					tok.AccessToken, tok.RefreshToken = raw["access_token"], raw["refresh_token"]
					rts[i] = tok.RefreshToken
					if i == 0 {
						at.Store(tok.AccessToken)
					}
				case resp.StatusCode == http.StatusServiceUnavailable:
					time.Sleep(20 * time.Millisecond) // and retry the same token
				default:
					dead.Add(1)
					t.Logf("chain %d ended: %d %s", i, resp.StatusCode, b)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			post("code", "/v2/auth/oauth2/token", url.Values{"grant_type": {"authorization_code"},
				"code": {data.NewAuthCode(time.Now())}, "redirect_uri": {e2eRedirect}})
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if tok := at.Load().(string); tok != "" {
				post("introspect", "/v2/auth/oauth2/introspect", url.Values{"token": {tok}})
				req, _ := http.NewRequest("GET", front.base+"/v2/me", nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				if resp, err := hc.Do(req); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					out.add("me", resp, b)
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	})

	time.Sleep(time.Second)
	t0 := time.Now()
	pgtest.Restart(t, time.Second)
	t.Logf("PostgreSQL down and up again in %s", time.Since(t0).Round(time.Millisecond))
	for _, s := range rs.reps {
		waitStatus(t, s.base+"/readyz", http.StatusOK, 15*time.Second)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()

	keys := make([]string, 0, len(out.by))
	for k := range out.by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-16s %d", k, out.by[k])
	}
	for _, b := range out.bad {
		t.Error(b)
	}
	if out.count(http.StatusServiceUnavailable) == 0 {
		t.Error("no request was answered 503: the load did not meet the outage")
	}
	if n := dead.Load(); n > 0 {
		t.Errorf("%d of %d refresh chains ended during the restart", n, chains)
	}
	for i, sink := range sinks {
		down, up := len(sink.grep("database unavailable")), len(sink.grep("database available again"))
		t.Logf("replica %d: %d outage lines, %d recovery lines", i, down, up)
		if down < 1 || down > 3 || up != down {
			t.Errorf("replica %d logged %d outage starts and %d ends; want one (or a very few) of each, in pairs:\n%s", i, down, up,
				strings.Join(sink.grep("database"), "\n"))
		}
		// Nothing is logged per request during the outage: every warning
		// or error line is one of a few (the outage's two, the change
		// listener's reconnections, a background loop's failure).
		msgs := map[string]int{}
		for _, lvl := range []string{"level=WARN", "level=ERROR"} {
			for _, l := range sink.grep(lvl) {
				m := regexp.MustCompile(`msg=("[^"]*"|\S+)`).FindStringSubmatch(l)
				if m != nil {
					msgs[m[1]]++
				}
			}
		}
		t.Logf("replica %d warnings and errors: %v", i, msgs)
		for m, c := range msgs {
			if c > 10 {
				t.Errorf("replica %d logged %q %d times during the outage; want a few lines, not one per request", i, m, c)
			}
		}
		if n := len(sink.grep(`msg="server error"`)); n > 0 {
			t.Errorf("replica %d logged %d server errors, e.g. %s", i, n, sink.grep(`msg="server error"`)[0])
		}
	}
	// Every chain goes on.
	for i := range chains {
		if r := e2ePost(t, front.tokenURL(), url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rts[i]}}, id, secret); r.Status != http.StatusOK {
			t.Errorf("chain %d after the restart: %d %v", i, r.Status, r.Body)
		}
	}
}
