package loadgen

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// warmMin is the fewest warm-up requests of a worker.
const warmMin = 20

// driveProxy serves h on a fresh loopback listener and drives it for d
// with workers keep-alive connections, each sending GET GatewayPath with
// the next of toks (worker i starts at token i). Before the clock starts,
// every worker sends each of its tokens once (at least warmMin requests),
// so that every connection is open and every token has been seen once;
// then profile, if set, starts. The client writes prepared request bytes
// on raw connections, like wrk, so that the load generator costs as
// little CPU as it can.
func driveProxy(ctx context.Context, h http.Handler, toks []string, workers int, d time.Duration, profile func() (func(), error)) (GatewayRun, error) {
	addr, stopServer, err := serveLoopback(ctx, h)
	if err != nil {
		return GatewayRun{}, err
	}
	defer stopServer()
	runtime.GC() // the previous run's garbage is not this one's
	r := &proxyRun{ctx: ctx, addr: addr, reqs: gatewayRequests(addr, toks), workers: workers, hist: new(Histogram), measure: make(chan struct{})}
	warmN := max(warmMin, (len(r.reqs)+workers-1)/workers)
	warmStart := time.Now()
	r.warm.Add(workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { r.work(w, warmN) })
	}
	r.warm.Wait()
	warmElapsed := time.Since(warmStart)
	stopProfile := func() {}
	if profile != nil {
		stop, err := profile()
		if err != nil {
			close(r.measure) // deadline is zero: the workers stop at once
			wg.Wait()
			return GatewayRun{}, err
		}
		stopProfile = stop
	}
	cpu0 := processCPU()
	startAt := time.Now()
	r.deadline = startAt.Add(d)
	close(r.measure)
	wg.Wait()
	elapsed := time.Since(startAt)
	cpu := processCPU() - cpu0
	stopProfile()
	total := r.total.Load()
	if total == 0 {
		return GatewayRun{}, errors.New("no request completed")
	}
	return GatewayRun{Requests: total, PerS: float64(total) / elapsed.Seconds(), LatencyMS: r.hist.Latency(),
		Non2xx: r.non2xx.Load(), NetErrors: r.netErrs.Load(), CPUPerReqUS: float64(cpu.Microseconds()) / float64(total), WarmupS: warmElapsed.Seconds(),
		WarmupPerS: float64(warmN*workers) / warmElapsed.Seconds(), WarmupNon2xx: r.warmNon2xx.Load()}, nil
}

// serveLoopback serves h on a fresh loopback listener at addr until stop
// is called (which shuts it down, waiting up to 5 s).
func serveLoopback(ctx context.Context, h http.Handler) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	go srv.Serve(ln)
	return ln.Addr().String(), func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}, nil
}

// gatewayRequests are the request bytes of GET GatewayPath at addr, one
// per token.
func gatewayRequests(addr string, toks []string) [][]byte {
	reqs := make([][]byte, len(toks))
	for i, t := range toks {
		reqs[i] = []byte("GET " + GatewayPath + " HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + t +
			"\r\nUser-Agent: oauthd-bench\r\nAccept: */*\r\n\r\n")
	}
	return reqs
}

// proxyRun is the state the workers of one driveProxy share.
type proxyRun struct {
	ctx     context.Context
	addr    string
	reqs    [][]byte
	workers int
	warm    sync.WaitGroup // done when every worker has warmed up
	measure chan struct{}  // closed when the clock starts
	// deadline is set before measure is closed, and read after.
	deadline time.Time

	total, non2xx, netErrs, warmNon2xx atomic.Int64

	mu   sync.Mutex // guards hist
	hist *Histogram
}

// work is worker w: warmN warm-up requests, then, once the clock starts,
// requests until the deadline; then it adds its latencies to the run's.
func (r *proxyRun) work(w, warmN int) {
	c := &proxyConn{r: r, w: w, next: w % len(r.reqs)}
	defer c.close()
	for range warmN {
		if !c.one(false) {
			break
		}
	}
	r.warm.Done()
	<-r.measure
	for time.Now().Before(r.deadline) && c.one(true) {
	}
	r.mu.Lock()
	r.hist.Merge(&c.hist)
	r.mu.Unlock()
}

// proxyConn is one worker's keep-alive connection and its place in the
// requests.
type proxyConn struct {
	r    *proxyRun
	w    int
	next int
	conn net.Conn
	br   *bufio.Reader
	hist Histogram
}

// one sends the next request (dialling first when the connection is
// closed), counting it as measured or warm-up; false when the run must
// stop.
func (c *proxyConn) one(measured bool) bool {
	r := c.r
	if r.ctx.Err() != nil {
		return false
	}
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
		if err != nil {
			r.netErrs.Add(1)
			time.Sleep(10 * time.Millisecond)
			return true
		}
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	t0 := time.Now()
	c.conn.SetDeadline(t0.Add(RequestTimeout))
	status, keep, err := roundTrip(c.conn, c.br, r.reqs[c.next])
	if err != nil {
		r.netErrs.Add(1)
		c.close()
		return true
	}
	if !keep {
		c.close()
	}
	bad := status < 200 || status > 299
	if measured {
		c.hist.Add(time.Since(t0))
		r.total.Add(1)
		if bad {
			r.non2xx.Add(1)
		}
	} else if bad {
		r.warmNon2xx.Add(1)
	}
	if c.next += r.workers; c.next >= len(r.reqs) {
		c.next = c.w % r.workers % len(r.reqs)
	}
	return true
}

// close closes the connection, if open.
func (c *proxyConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// roundTrip writes req on conn and reads the response: its status, and
// whether the connection stays open.
func roundTrip(conn net.Conn, br *bufio.Reader, req []byte) (status int, keep bool, err error) {
	if _, err := conn.Write(req); err != nil {
		return 0, false, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, false, err
	}
	return resp.StatusCode, !resp.Close, nil
}
