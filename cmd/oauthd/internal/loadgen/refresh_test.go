package loadgen

import (
	"context"
	"maps"
	"net"
	"slices"
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
	rep, live, hist := e.Refresh(ctx, []string{"ok.0", "flaky.0", "dead.0"}, time.Hour, Progress{})

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
	rep, live, _ := f.endpoint(srv).Refresh(t.Context(), []string{"a.0", "b.0"}, 0, Progress{})
	if rep.Requests != 2 || rep.OK != 2 || rep.ChainsAlive != 2 || !slices.Equal(live, []string{"a.1", "b.1"}) {
		t.Errorf("report %+v, live %q; want one rotation per chain", rep, live)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := Endpoint{HTTP: NewHTTPClient(1), TokenURL: "http://" + ln.Addr().String() + "/token"}
	ln.Close()
	rep, live, _ = e.Refresh(t.Context(), []string{"x.0"}, 0, Progress{})
	if !maps.Equal(rep.ByStatus, map[string]int64{"net": 1}) || rep.Errors != 1 || rep.ChainsAlive != 1 || !slices.Equal(live, []string{"x.0"}) {
		t.Errorf("report %+v, live %q; want one net error, the chain alive with its token", rep, live)
	}
}

// TestRefreshWrongClient: a 401 ends every chain.
func TestRefreshWrongClient(t *testing.T) {
	f, srv := newFakeAS(t, "a", "b")
	e := f.endpoint(srv)
	e.ClientSecret = "wrong"
	rep, live, _ := e.Refresh(t.Context(), []string{"a.0", "b.0"}, time.Hour, Progress{})
	if rep.ChainsAlive != 0 || len(live) != 0 || !maps.Equal(rep.ByStatus, map[string]int64{"401": 2}) {
		t.Errorf("report %+v, live %q; want both chains dead by 401", rep, live)
	}
}
