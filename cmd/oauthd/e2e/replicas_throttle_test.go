package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// storeOps sums oauthd_throttle_store_ops_total (the shared limiters'
// round trips to the database) over the replicas.
func storeOps(t *testing.T, rs *replicaSet) int {
	t.Helper()
	return sumMetric(t, rs, `oauthd_throttle_store_ops_total{`)
}

// sumMetric sums over the replicas the samples whose line starts with
// prefix (a metric name, with as many of its labels as wanted).
func sumMetric(t *testing.T, rs *replicaSet, prefix string) int {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prefix) + `[^ ]* (\d+)`)
	n := 0
	for _, s := range rs.reps {
		_, body := e2eGet(t, s.base+"/metrics", "", nil)
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			v, _ := strconv.Atoi(m[1])
			n += v
		}
	}
	return n
}

// TestReplicasThrottle: the failure limits hold across three replicas on
// one database. Wrong secrets and wrong passwords from one address, spread
// round robin over the replicas (a layer-4 balancer keeps the source
// address), are checked only as many times as one budget allows in total,
// not once per replica; correct credentials from another address get
// through on every replica, and their path costs the database nothing.
func TestReplicasThrottle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	rs := startReplicas(t, 3)
	cl := newTestClient(t, rs.db, "victim")
	rt := initialTokens(t, rs.front.URL, cl, 1)[0].RefreshToken
	attacker, legit := fromAddr(attackerAddr, 3), fromAddr(legitAddr, 3)
	ctx := t.Context()

	// Client authentication: 10 failures per (client, address), then one
	// each 6 s.
	wrong := cl
	wrong.Secret = "oauthd_cs_" + strings.Repeat("A", 43)
	var counts statusCounts
	start := time.Now()
	for i := range 60 {
		r, err := refresh(ctx, attacker, rs.reps[i%3].base, wrong, rt, nil)
		if err != nil {
			t.Fatal(err)
		}
		counts.add(r.Status)
	}
	refill := int(time.Since(start) / (6 * time.Second))
	t.Logf("60 wrong secrets from %s over 3 replicas: %s", attackerAddr, &counts)
	if n := counts.get(http.StatusUnauthorized); n < 10 || n > 10+refill {
		t.Errorf("%d wrong secrets were checked (401); want the one (client, address) budget of 10 (+%d refilled), not 10 per replica", n, refill)
	}
	if n := counts.get(http.StatusUnauthorized) + counts.get(http.StatusTooManyRequests); n != 60 {
		t.Errorf("answers %s; want only 401 and 429", &counts)
	}
	for i, s := range rs.reps {
		if r, err := refresh(ctx, attacker, s.base, cl, rt, nil); err != nil || r.Status != http.StatusTooManyRequests {
			t.Errorf("replica %d: the right secret from the flooding address = %d %v; want 429", i, r.Status, err)
		}
	}

	// Logins: 5 failures per (account, address), then one a minute.
	var logins statusCounts
	forms := make([]loginSession, 3)
	for i, s := range rs.reps {
		forms[i] = getLoginForm(t, attacker, s.base)
	}
	for i := range 30 {
		code, err := postLogin(ctx, attacker, rs.reps[i%3].base, forms[i%3], []string{"victim", "VICTIM@example.com"}[i%2], fmt.Sprintf("wrong %d", i))
		if err != nil {
			t.Fatal(err)
		}
		logins.add(code)
	}
	t.Logf("30 wrong passwords from %s over 3 replicas: %s", attackerAddr, &logins)
	if n := logins.get(http.StatusUnauthorized); n != 5 {
		t.Errorf("%d wrong passwords were checked (401); want the one (account, address) budget of 5, not 5 per replica", n)
	}
	if n := logins.get(http.StatusTooManyRequests); n != 25 {
		t.Errorf("answers %s; want 5 × 401 and 25 × 429", &logins)
	}
	for i, s := range rs.reps {
		if code, err := postLogin(ctx, attacker, s.base, forms[i], "victim", testPassword); err != nil || code != http.StatusTooManyRequests {
			t.Errorf("replica %d: the right password from the flooding address = %d %v; want 429", i, code, err)
		}
	}

	// From another address the right credentials pass everywhere, and
	// neither limiter goes to the database for them (their keys have no
	// failures).
	before := storeOps(t, rs)
	for round := range 3 {
		for i, s := range rs.reps {
			r, err := refresh(ctx, legit, s.base, cl, rt, nil)
			if err != nil || r.Status != http.StatusOK {
				t.Fatalf("round %d, replica %d: refresh with the right secret from %s = %d %s %v; want 200", round, i, legitAddr, r.Status, r.Body, err)
			}
			rt = r.RefreshToken
			ls := getLoginForm(t, legit, s.base)
			if code, err := postLogin(ctx, legit, s.base, ls, "victim", testPassword); err != nil || code != http.StatusOK {
				t.Fatalf("round %d, replica %d: the right password from %s = %d %v; want 200", round, i, legitAddr, code, err)
			}
		}
	}
	if after := storeOps(t, rs); after != before {
		t.Errorf("9 right secrets and 9 right passwords made %d round trips of the limiters to the database; want none", after-before)
	}

	// The counters are rows of the database, one per key, shared.
	var rows int
	pgQueryRow(t, rs.db, "SELECT count(*) FROM throttle", nil, &rows)
	if rows != 6 {
		t.Errorf("%d throttle rows; want 6 (token: client and address; login: account and address; "+
			"authorize, the consent's approval: user and (user, client))", rows)
	}
}

// TestReplicasThrottleConcurrent: the same floods sent at once, over 24
// connections spread on the replicas. Secret checks are counted when they
// fail, so the requests in flight when the budget runs out overshoot it,
// as on one server. A password check runs uncharged only when its
// replica knows of no failure and has no other check in flight under its
// keys (once per replica); every other one is charged in the database
// before it runs: at most the budget plus one check per replica.
func TestReplicasThrottleConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	rs := startReplicas(t, 3)
	cl := newTestClient(t, rs.db, "victim")
	rt := initialTokens(t, rs.front.URL, cl, 1)[0].RefreshToken
	const conns = 24
	attacker := fromAddr(attackerAddr, conns)
	ctx := t.Context()
	wrong := cl
	wrong.Secret = "oauthd_cs_" + strings.Repeat("B", 43)
	var counts statusCounts
	var wg sync.WaitGroup
	sem := make(chan struct{}, conns)
	for i := range 300 {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r, err := refresh(ctx, attacker, rs.reps[i%3].base, wrong, rt, nil)
			if err != nil {
				t.Error(err)
				return
			}
			counts.add(r.Status)
		})
	}
	wg.Wait()
	t.Logf("300 wrong secrets at once from %s over 3 replicas: %s", attackerAddr, &counts)
	if n := counts.get(http.StatusUnauthorized); n < 10 || n > 10+conns {
		t.Errorf("%d wrong secrets were checked (401); want the budget of 10 plus at most the %d in flight", n, conns)
	}

	// Per replica, password checks run at most --password-slots at once.
	_, body := e2eGet(t, rs.reps[0].base+"/metrics", "", nil)
	m := regexp.MustCompile(`(?m)^oauthd_password_check_slots (\d+)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no oauthd_password_check_slots in /metrics")
	}
	slots, _ := strconv.Atoi(m[1])
	var logins statusCounts
	for _, s := range rs.reps {
		wg.Go(func() { sendLogins(t, s.base, attackerAddr, 20, 8, []string{"victim"}, &logins) })
	}
	wg.Wait()
	limit := 5 + 3
	t.Logf("60 wrong passwords at once, 20 per replica, 8 at a time each, from %s: %s (%d password slots per replica)", attackerAddr, &logins, slots)
	if n := logins.get(http.StatusUnauthorized); n < 5 || n > limit {
		t.Errorf("%d wrong passwords were checked (401); want the budget of 5, plus at most one uncharged check per replica (%d)", n, limit)
	}
	legit := fromAddr(legitAddr, 1)
	for i, s := range rs.reps {
		if code, err := postLogin(ctx, legit, s.base, getLoginForm(t, legit, s.base), "victim", testPassword); err != nil || code != http.StatusOK {
			t.Errorf("replica %d: the right password from %s = %d %v; want 200", i, legitAddr, code, err)
		}
	}
}
