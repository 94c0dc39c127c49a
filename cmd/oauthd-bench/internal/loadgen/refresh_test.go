package loadgen

import (
	"context"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRefreshChains drives three chains against a server that rotates
// tokens: "ok" always rotates, "flaky" gets a 503 every third request
// and must resend the same token, "dead" is refused at once. The run
// ends when flaky has rotated six times (the server cancels ctx), not at
// a time: every count below is exact.
func TestRefreshChains(t *testing.T) {
	for _, netHTTP := range []bool{false, true} {
		t.Run(clientName(netHTTP), func(t *testing.T) { testRefreshChains(t, netHTTP) })
	}
}

// clientName names the client a refresh run uses.
func clientName(netHTTP bool) string {
	if netHTTP {
		return "net/http"
	}
	return "lean"
}

func testRefreshChains(t *testing.T, netHTTP bool) {
	f, srv := newFakeAS(t, "ok", "flaky", "dead")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.onOK = func(chain string, n int) {
		if chain == "flaky" && n == 6 {
			cancel()
		}
	}
	e := f.endpoint(srv)
	e.netHTTP = netHTTP
	rep, live, hist := e.Refresh(ctx, []string{"ok.0", "flaky.0", "dead.0"}, 0, time.Hour, Progress{})

	if rep.Mode != "refresh" || rep.Chains != 3 || rep.ChainsAlive != 2 || rep.Concurrency != 3 {
		t.Errorf("mode %q, chains %d alive %d, concurrency %d; want refresh, 2 alive of 3", rep.Mode, rep.Chains, rep.ChainsAlive, rep.Concurrency)
	}
	// The newest token of each live chain, in the order given, is the
	// server's current one: requests in flight at the end completed.
	if want := []string{f.token("ok"), f.token("flaky")}; !slices.Equal(live, want) {
		t.Errorf("live = %q; want %q", live, want)
	}
	// flaky: 6 rotations, each of the 503s before them retried.
	if got := f.okCount("flaky"); got != 6 {
		t.Errorf("flaky rotated %d times; want 6", got)
	}
	ok, unavailable := f.sent(200), f.sent(503)
	if unavailable < 3 {
		t.Errorf("the server sent %d 503s; want at least 3 (flaky's 1st, 4th and 7th request)", unavailable)
	}
	want := map[string]int64{"200": ok, "503": unavailable, "400": 1}
	if !maps.Equal(rep.ByStatus, want) {
		t.Errorf("by status %v; want %v", rep.ByStatus, want)
	}
	if rep.OK != ok || rep.Errors != unavailable+1 || rep.Requests != ok+unavailable+1 {
		t.Errorf("ok %d, errors %d, requests %d; want %d, %d, %d", rep.OK, rep.Errors, rep.Requests, ok, unavailable+1, ok+unavailable+1)
	}
	if hist.Count() != uint64(rep.Requests) {
		t.Errorf("histogram holds %d samples; want one per request (%d)", hist.Count(), rep.Requests)
	}
	if l := rep.LatencyMS; l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max || l.Max <= 0 {
		t.Errorf("latency %+v not ordered", l)
	}
}

// TestRefreshEachChainOnce: however short the duration, every chain sends
// one request; a transport error counts as "net" and keeps the chain.
func TestRefreshEachChainOnce(t *testing.T) {
	f, srv := newFakeAS(t, "a", "b")
	rep, live, _ := f.endpoint(srv).Refresh(t.Context(), []string{"a.0", "b.0"}, 2, 0, Progress{})
	if rep.Requests != 2 || rep.OK != 2 || rep.ChainsAlive != 2 || !slices.Equal(live, []string{"a.1", "b.1"}) {
		t.Errorf("report %+v, live %q; want one rotation per chain", rep, live)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := Endpoint{HTTP: NewHTTPClient(1), TokenURL: "http://" + ln.Addr().String() + "/token"}
	ln.Close()
	rep, live, _ = e.Refresh(t.Context(), []string{"x.0"}, 1, 0, Progress{})
	if !maps.Equal(rep.ByStatus, map[string]int64{"net": 1}) || rep.Errors != 1 || rep.ChainsAlive != 1 || !slices.Equal(live, []string{"x.0"}) {
		t.Errorf("report %+v, live %q; want one net error, the chain alive with its token", rep, live)
	}
}

// TestRefreshWrongClient: a 401 ends every chain.
func TestRefreshWrongClient(t *testing.T) {
	f, srv := newFakeAS(t, "a", "b")
	e := f.endpoint(srv)
	e.ClientSecret = "wrong"
	rep, live, _ := e.Refresh(t.Context(), []string{"a.0", "b.0"}, 0, time.Hour, Progress{})
	if rep.ChainsAlive != 0 || len(live) != 0 || !maps.Equal(rep.ByStatus, map[string]int64{"401": 2}) {
		t.Errorf("report %+v, live %q; want both chains dead by 401", rep, live)
	}
}

// TestRefreshManyChains: 40 chains on 4 workers. However short the run,
// every chain sends once (and, with d = 0, exactly once); over a longer
// run no chain is ever in two requests at once (a server that sees it
// fails the test, and would have refused the second request's stale
// token), the load rotates evenly over all of them, and the newest token
// returned for every chain is the server's current one.
func TestRefreshManyChains(t *testing.T) {
	chains := make([]string, 40)
	for i := range chains {
		chains[i] = "c" + strconv.Itoa(i)
	}
	f, _ := newFakeAS(t, chains...)
	var mu sync.Mutex
	inFlight := map[string]bool{}
	var overlaps, maxInFlight int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chain, _, _ := strings.Cut(r.PostFormValue("refresh_token"), ".")
		mu.Lock()
		if inFlight[chain] {
			overlaps++
		}
		inFlight[chain] = true
		maxInFlight = max(maxInFlight, len(inFlight))
		mu.Unlock()
		time.Sleep(time.Millisecond) // widen the window a second use would hit
		f.ServeHTTP(w, r)
		mu.Lock()
		delete(inFlight, chain)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	e := f.endpoint(srv)
	toks := make([]string, len(chains))
	for i, c := range chains {
		toks[i] = c + ".0"
	}

	rep, live, _ := e.Refresh(t.Context(), toks, 4, 0, Progress{})
	if rep.Requests != 40 || rep.OK != 40 || rep.ChainsUsed != 40 || rep.ChainsAlive != 40 || rep.Concurrency != 4 {
		t.Fatalf("d=0: %+v; want one request per chain, on 4 workers", rep)
	}
	for _, c := range chains {
		if n := f.okCount(c); n != 1 {
			t.Errorf("d=0: chain %s rotated %d times; want 1", c, n)
		}
	}

	// A second long enough for every chain to send a few times even on a
	// loaded machine under -race (300 ms was not, in CI).
	rep, live, _ = e.Refresh(t.Context(), live, 4, time.Second, Progress{})
	if rep.ChainsAlive != 40 || rep.ChainsUsed != 40 || rep.Errors != 0 || len(live) != 40 {
		t.Fatalf("report %+v, %d live; want every chain used and alive, no errors", rep, len(live))
	}
	lo, hi := math.MaxInt, 0
	for i, c := range chains {
		if live[i] != f.token(c) {
			t.Errorf("chain %s: newest token %q; the server's is %q", c, live[i], f.token(c))
		}
		lo, hi = min(lo, f.okCount(c)), max(hi, f.okCount(c))
	}
	mu.Lock()
	defer mu.Unlock()
	if overlaps != 0 || maxInFlight > 4 {
		t.Errorf("%d requests of a chain already in flight, up to %d chains in flight; want none and at most 4", overlaps, maxInFlight)
	}
	// First in, first out: between two requests of a chain every other
	// chain sends at most once.
	if hi-lo > 2 || lo < 3 {
		t.Errorf("rotations per chain from %d to %d; want an even rotation (at most 2 apart, and a few each)", lo, hi)
	}
}
