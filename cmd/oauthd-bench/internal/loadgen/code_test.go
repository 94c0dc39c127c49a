package loadgen

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestExchange: each code is good once, with its verifier and the
// registered redirect URI; the run ends when the codes run out.
func TestExchange(t *testing.T) {
	f, srv := newFakeAS(t)
	codes := f.mint(3)
	codes = append(codes, codes[0], Code{Code: codes[1].Code + "x", Verifier: codes[1].Verifier}) // a replay, an unknown code
	wrongVerifier := f.mint(1)[0]
	wrongVerifier.Verifier += "x"
	codes = append(codes, wrongVerifier)
	failures := map[string]int64{}
	x := f.endpoint(srv).Exchange(t.Context(), codes, f.redirectURI, 2, time.Hour, failures)
	if x.OK != 3 || x.Errors != 3 || x.Latency.Count() != 6 {
		t.Errorf("ok %d, errors %d, %d latencies; want 3, 3, 6", x.OK, x.Errors, x.Latency.Count())
	}
	if want := map[string]int64{"400 invalid_grant": 3}; !maps.Equal(failures, want) {
		t.Errorf("failures %v; want %v", failures, want)
	}

	// Another redirect URI: every exchange fails.
	failures = map[string]int64{}
	x = f.endpoint(srv).Exchange(t.Context(), f.mint(2), "http://127.0.0.1:9/other", 1, time.Hour, failures)
	if x.OK != 0 || failures["400 invalid_grant"] != 2 {
		t.Errorf("ok %d, failures %v; want none ok, 2 invalid_grant", x.OK, failures)
	}
}

// TestCodeVsRefresh runs with a zero duration, so that every slice is
// exactly one refresh per chain and one exchange per worker: each of the
// 4 slices mints one code per worker (none could have been used in no
// time), and the report's counts and ratio follow.
func TestCodeVsRefresh(t *testing.T) {
	f, srv := newFakeAS(t, "a", "b", "c")
	var minted []int
	rep, err := f.endpoint(srv).CodeVsRefresh(t.Context(), CodeRun{
		Tokens: []string{"a.0", "b.0", "c.0"}, Workers: 2, Duration: 0, RedirectURI: f.redirectURI,
		Mint: func(_ context.Context, n int) ([]Code, error) {
			minted = append(minted, n)
			return f.mint(n), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(minted, []int{2, 2, 2, 2}) {
		t.Errorf("minted %v; want %d slices of 2", minted, Slices)
	}
	if rep.Mode != "code" || rep.CodeOK != 2*Slices || rep.CodeErrors != 0 || rep.RefreshOK != 3*Slices || rep.RefreshErrors != 0 {
		t.Errorf("report %+v; want %d exchanges and %d refreshes, no errors", rep, 2*Slices, 3*Slices)
	}
	if f.token("a") != "a.4" {
		t.Errorf("chain a at %s; want a.4 (the newest token carried from slice to slice)", f.token("a"))
	}
	if got := 100 * rep.CodesPerS / rep.GrantsPerS; rep.CodeToRefresh != got || got <= 0 {
		t.Errorf("ratio %v; want %v", rep.CodeToRefresh, got)
	}
}

// TestCodeVsRefreshChainDies: a chain lost in a refresh slice ends the
// run with an error that says so.
func TestCodeVsRefreshChainDies(t *testing.T) {
	f, srv := newFakeAS(t, "a", "dead")
	_, err := f.endpoint(srv).CodeVsRefresh(t.Context(), CodeRun{
		Tokens: []string{"a.0", "dead.0"}, Workers: 1, RedirectURI: f.redirectURI,
		Mint: func(_ context.Context, n int) ([]Code, error) { return f.mint(n), nil },
	})
	if err == nil || !strings.Contains(err.Error(), "refresh slice 1: 1 of 2 chains died") {
		t.Errorf("err = %v; want refresh slice 1: 1 of 2 chains died", err)
	}
}
