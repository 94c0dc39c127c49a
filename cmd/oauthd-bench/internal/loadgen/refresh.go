package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RefreshReport is the result of a refresh run (`oauthd-bench --json`,
// mode refresh).
type RefreshReport struct {
	Mode        string           `json:"mode"`
	Target      string           `json:"target"`
	Concurrency int              `json:"concurrency"`
	DurationS   float64          `json:"duration_s"`
	Requests    int64            `json:"requests"`
	OK          int64            `json:"ok"`
	GrantsPerS  float64          `json:"grants_per_s"`
	LatencyMS   LatencyMS        `json:"latency_ms"`
	ByStatus    map[string]int64 `json:"by_status"` // by HTTP status, "net" for transport errors
	Errors      int64            `json:"errors"`
	ChainsAlive int              `json:"chains_alive"`
	Chains      int              `json:"chains"`
	ChainsUsed  int              `json:"chains_used"`       // chains that sent at least one request: all of them
	RSSMiB      float64          `json:"rss_mib,omitempty"` // in-process runs: the whole process (server and load)
}

// WriteText prints r for a person.
func (r RefreshReport) WriteText(w io.Writer) error {
	codes := make([]string, 0, len(r.ByStatus))
	for k := range r.ByStatus {
		codes = append(codes, k)
	}
	sort.Strings(codes)
	var by []string
	for _, k := range codes {
		by = append(by, fmt.Sprintf("%s=%d", k, r.ByStatus[k]))
	}
	fmt.Fprintf(w, "target       %s  workers=%d  measured=%.1fs\n", r.Target, r.Concurrency, r.DurationS)
	fmt.Fprintf(w, "grants/s     %.0f  (ok %d of %d requests)\n", r.GrantsPerS, r.OK, r.Requests)
	fmt.Fprintf(w, "latency ms   p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", r.LatencyMS.P50, r.LatencyMS.P90, r.LatencyMS.P99, r.LatencyMS.Max)
	fmt.Fprintf(w, "by status    %s  (errors %d)\n", strings.Join(by, " "), r.Errors)
	fmt.Fprintf(w, "chains alive %d of %d  (used %d)\n", r.ChainsAlive, r.Chains, r.ChainsUsed)
	if r.RSSMiB > 0 {
		fmt.Fprintf(w, "process RSS  %.1f MiB (server and load generator)\n", r.RSSMiB)
	}
	return nil
}

// retryPause is how long a chain waits before it sends its token again
// after a 429, a 5xx or a transport error.
const retryPause = 10 * time.Millisecond

// Refresh runs one refresh-token chain per token for d on workers
// concurrent workers (at most one per chain; workers < 1: one per chain),
// each with its own connection. A worker takes the chain that has been
// idle longest, sends its newest refresh token, keeps the one it gets
// back and puts the chain back at the end of the queue: a chain is never
// in two requests at once, and with more chains than workers the load
// rotates over all of them (many distinct families: a large database's
// cache misses) instead of a hot few. 429 and 5xx (and transport errors)
// put the chain back after a pause with the same token; any other error
// ends the chain. Every chain sends at least one request, however short
// d (the run is longer than d when the workers cannot reach every chain
// in d); the run ends at d, or when ctx is done, once every chain has
// been sent. Requests in flight then are completed, not cancelled, so no
// rotated token is lost. It returns the report (Target not set), the
// newest token of every live chain (in the order of tokens) and the
// latencies.
func (e Endpoint) Refresh(ctx context.Context, tokens []string, workers int, d time.Duration, p Progress) (RefreshReport, []string, *Histogram) {
	n := len(tokens)
	if workers < 1 || workers > n {
		workers = n
	}
	r := newRefreshRun(ctx, tokens)
	prefix := e.clientPrefix("refresh_token") + "&refresh_token="
	start := time.Now()
	r.deadline = start.Add(d)
	// Requests are not cancelled at the deadline (see above): they get
	// their own bounded context.
	reqCtx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { r.work(e.poster(reqCtx, prefix)) })
	}
	stop := make(chan struct{})
	var last int64
	pwg := p.tick(start, stop, func(now time.Time) {
		cur := r.ok.Load()
		fmt.Fprintf(p.W, "bench: %5.1fs  ok %d (%.0f/s now)  errors %d  chains alive %d/%d\n",
			now.Sub(start).Seconds(), cur, float64(cur-last)/p.Every.Seconds(), r.fails.Load(), r.alive.Load(), n)
		last = cur
	})
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	pwg.Wait()

	var live []string
	used := 0
	for i, t := range r.newest {
		if r.sent[i] {
			used++
		}
		if !r.dead[i] {
			live = append(live, t)
		}
	}
	return RefreshReport{
		Mode: "refresh", Concurrency: workers, DurationS: elapsed.Seconds(),
		Requests: r.reqs.Load(), OK: r.ok.Load(), GrantsPerS: float64(r.ok.Load()) / elapsed.Seconds(),
		LatencyMS: r.hist.Latency(),
		ByStatus:  r.byStatus, Errors: r.fails.Load(), ChainsAlive: int(r.alive.Load()), Chains: n, ChainsUsed: used,
	}, live, r.hist
}

// refreshRun is the state the workers of one [Endpoint.Refresh] share.
type refreshRun struct {
	ctx             context.Context
	deadline        time.Time
	ok, reqs, fails atomic.Int64
	alive, unsent   atomic.Int64
	idle            chan int // the chains no worker holds, longest idle first
	// A chain's entries are read and written only by the worker holding
	// it (taken from idle).
	newest     []string
	dead, sent []bool

	mu       sync.Mutex // guards the merged results below
	byStatus map[string]int64
	hist     *Histogram
}

// newRefreshRun is the run of one chain per token, every chain idle and
// unsent.
func newRefreshRun(ctx context.Context, tokens []string) *refreshRun {
	n := len(tokens)
	r := &refreshRun{ctx: ctx, idle: make(chan int, n), newest: slices.Clone(tokens), dead: make([]bool, n), sent: make([]bool, n),
		byStatus: map[string]int64{}, hist: new(Histogram)}
	for i := range n {
		r.idle <- i
	}
	r.alive.Store(int64(n))
	r.unsent.Store(int64(n))
	return r
}

// work is one worker: it takes the chain idle longest, refreshes it once
// and puts it back, until the run ends ([Endpoint.Refresh]); then it adds
// its latencies and statuses to the run's.
func (r *refreshRun) work(post *chainPoster) {
	defer post.close()
	var h Histogram
	local := map[string]int64{}
run:
	for r.unsent.Load() > 0 || (time.Now().Before(r.deadline) && r.ctx.Err() == nil) {
		var i int
		select {
		case i = <-r.idle:
		default:
			// Every live chain is in another worker's hands
			// (fewer live chains than workers): this one is not needed.
			break run
		}
		switch {
		case !r.sent[i]:
			r.sent[i] = true
			r.unsent.Add(-1)
		case !time.Now().Before(r.deadline) || r.ctx.Err() != nil:
			// Past the deadline only the chains never sent are
			// refreshed (one each): this one waits for the next run.
			r.idle <- i
			runtime.Gosched()
			continue
		}
		if r.refresh(post, i, &h, local) {
			r.idle <- i
		}
	}
	r.mu.Lock()
	r.hist.Merge(&h)
	for k, v := range local {
		r.byStatus[k] += v
	}
	r.mu.Unlock()
}

// refresh sends chain i's newest refresh token once, counting the answer
// in h and local, and reports whether the chain goes on: after a 200 with
// the new token, or after a pause when the answer was a 429, a 5xx or a
// transport error (the same token is sent again); any other answer ends
// it.
func (r *refreshRun) refresh(post *chainPoster, i int, h *Histogram, local map[string]int64) bool {
	t0 := time.Now()
	status, tr, err := post.post(r.newest[i])
	h.Add(time.Since(t0))
	r.reqs.Add(1)
	local[statusKey(status)]++
	switch {
	case status == http.StatusOK && err == nil:
		r.ok.Add(1)
		r.newest[i] = tr.RefreshToken
	case status == 0 || status == http.StatusTooManyRequests || status >= 500:
		r.fails.Add(1)
		time.Sleep(retryPause)
	default:
		r.fails.Add(1)
		r.dead[i] = true
		r.alive.Add(-1)
		return false
	}
	return true
}

// chainPoster sends one chain's refresh requests: form prefix + the
// escaped token.
type chainPoster struct {
	e      Endpoint
	ctx    context.Context
	prefix string
	lean   *leanClient // nil: net/http's client (e.HTTP)
	form   []byte
}

// poster returns the poster of one chain: the lean client for an http://
// URL, net/http's client otherwise (https) or when e.netHTTP says so.
func (e Endpoint) poster(ctx context.Context, prefix string) *chainPoster {
	p := &chainPoster{e: e, ctx: ctx, prefix: prefix}
	if !e.netHTTP {
		if lc, err := newLeanClient(e.TokenURL); err == nil {
			p.lean = lc
		}
	}
	return p
}

// post sends tok and returns as [Endpoint.Post] does.
func (p *chainPoster) post(tok string) (int, TokenReply, error) {
	if p.lean == nil {
		return p.e.Post(p.ctx, p.prefix+url.QueryEscape(tok))
	}
	p.form = append(append(p.form[:0], p.prefix...), url.QueryEscape(tok)...)
	status, b, err := p.lean.post(p.form)
	if err != nil {
		return 0, TokenReply{}, err
	}
	if status == http.StatusOK {
		if tok, ok := refreshTokenOf(b); ok {
			return status, TokenReply{RefreshToken: tok}, nil
		}
	}
	tr, err := parseReply(status, b)
	return status, tr, err
}

// refreshTokenMember is how a token response names the refresh token.
var refreshTokenMember = []byte(`"refresh_token":"`)

// refreshTokenOf finds the refresh token in a 200's body without decoding
// the rest (the access token is most of it): the member's string up to
// its closing quote. A body where that is not certain (no such member,
// white space around the colon, an escape in the string, or the member
// twice) gives false, and the caller decodes it as JSON instead.
func refreshTokenOf(b []byte) (string, bool) {
	i := bytes.Index(b, refreshTokenMember)
	if i < 0 {
		return "", false
	}
	rest := b[i+len(refreshTokenMember):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 || bytes.IndexByte(rest[:j], '\\') >= 0 || bytes.Contains(rest[j:], refreshTokenMember) {
		return "", false
	}
	return string(rest[:j]), true
}

// close drops the lean client's connection.
func (p *chainPoster) close() {
	if p.lean != nil {
		p.lean.close()
	}
}
