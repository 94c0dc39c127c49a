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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return GatewayRun{}, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	go srv.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	addr := ln.Addr().String()
	reqs := make([][]byte, len(toks))
	for i, t := range toks {
		reqs[i] = []byte("GET " + GatewayPath + " HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + t +
			"\r\nUser-Agent: oauthd-bench\r\nAccept: */*\r\n\r\n")
	}
	runtime.GC() // the previous run's garbage is not this one's
	var (
		total, non2xx, netErrs atomic.Int64
		warmNon2xx             atomic.Int64
		mu                     sync.Mutex
		hist                   = new(Histogram)
		wg, warm               sync.WaitGroup
		measure                = make(chan struct{})
		startAt, deadline      time.Time
	)
	warmN := max(warmMin, (len(reqs)+workers-1)/workers)
	warmStart := time.Now()
	warm.Add(workers)
	for w := range workers {
		wg.Go(func() {
			var hl Histogram
			var conn net.Conn
			var br *bufio.Reader
			defer func() {
				if conn != nil {
					conn.Close()
				}
			}()
			next := w % len(reqs)
			// one sends the next request; false when the run must stop.
			one := func(measured bool) bool {
				if ctx.Err() != nil {
					return false
				}
				if conn == nil {
					c, err := net.DialTimeout("tcp", addr, 5*time.Second)
					if err != nil {
						netErrs.Add(1)
						time.Sleep(10 * time.Millisecond)
						return true
					}
					conn, br = c, bufio.NewReaderSize(c, 16<<10)
				}
				t0 := time.Now()
				conn.SetDeadline(t0.Add(RequestTimeout))
				status, keep, err := roundTrip(conn, br, reqs[next])
				if err != nil {
					netErrs.Add(1)
					conn.Close()
					conn = nil
					return true
				}
				if !keep {
					conn.Close()
					conn = nil
				}
				bad := status < 200 || status > 299
				if measured {
					hl.Add(time.Since(t0))
					total.Add(1)
					if bad {
						non2xx.Add(1)
					}
				} else if bad {
					warmNon2xx.Add(1)
				}
				if next += workers; next >= len(reqs) {
					next = w % workers % len(reqs)
				}
				return true
			}
			for range warmN {
				if !one(false) {
					break
				}
			}
			warm.Done()
			<-measure
			for time.Now().Before(deadline) && one(true) {
			}
			mu.Lock()
			hist.Merge(&hl)
			mu.Unlock()
		})
	}
	warm.Wait()
	warmElapsed := time.Since(warmStart)
	stopProfile := func() {}
	if profile != nil {
		stop, err := profile()
		if err != nil {
			close(measure) // deadline is zero: the workers stop at once
			wg.Wait()
			return GatewayRun{}, err
		}
		stopProfile = stop
	}
	cpu0 := processCPU()
	startAt = time.Now()
	deadline = startAt.Add(d)
	close(measure)
	wg.Wait()
	elapsed := time.Since(startAt)
	cpu := processCPU() - cpu0
	stopProfile()
	if total.Load() == 0 {
		return GatewayRun{}, errors.New("no request completed")
	}
	return GatewayRun{Requests: total.Load(), PerS: float64(total.Load()) / elapsed.Seconds(), LatencyMS: hist.Latency(),
		Non2xx: non2xx.Load(), NetErrors: netErrs.Load(), CPUPerReqUS: float64(cpu.Microseconds()) / float64(total.Load()), WarmupS: warmElapsed.Seconds(),
		WarmupPerS: float64(warmN*workers) / warmElapsed.Seconds(), WarmupNon2xx: warmNon2xx.Load()}, nil
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
