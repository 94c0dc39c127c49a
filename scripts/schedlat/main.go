// Command schedlat reads a Go execution trace (as served by
// /debug/pprof/trace on `oauthd serve --debug-addr`) and reports how long
// goroutines waited for a P after they were made runnable, grouped by what
// woke them, and how busy each P was. It is a diagnostic for
// docs/PERFORMANCE.md, in its own module so that the server does not depend
// on golang.org/x/exp.
//
//	curl -o c16.trace 'http://127.0.0.1:16060/debug/pprof/trace?seconds=2'
//	cd scripts/schedlat && go run . ../../c16.trace
package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// wakers name a wake-up by the first entry whose function is on the waker's
// stack: the order matters (the committer starts the signing workers).
var wakers = []struct{ fn, name string }{
	{"bolt.(*Store).syncer", "syncer (grant durable)"},
	{"issuer.(*Server).startAccessToken", "committer -> signing goroutine"},
	{"bolt.(*Store).commitLoop", "committer"},
	{"bolt.(*Store).send", "submit"},
	{"issuer.(*Server).startAccessToken.func1", "signing goroutine"},
}

func wakerOf(ev trace.Event) string {
	var fns []string
	for f := range ev.Stack().Frames() {
		fns = append(fns, f.Func)
	}
	if len(fns) == 0 {
		return "netpoll or runtime (no stack)"
	}
	for _, w := range wakers {
		for _, fn := range fns {
			if strings.Contains(fn, w.fn) {
				return w.name
			}
		}
	}
	return "other"
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: schedlat TRACE")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "schedlat:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		return err
	}
	type wake struct {
		at   trace.Time
		by   string
		proc trace.ProcID
	}
	pending := map[trace.GoID]wake{}
	waits := map[string][]time.Duration{}
	sameP := map[string]int{}
	busy := map[trace.ProcID]time.Duration{}
	since := map[trace.ProcID]trace.Time{}
	var first, last trace.Time
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if first == 0 {
			first = ev.Time()
		}
		last = ev.Time()
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		switch st.Resource.Kind {
		case trace.ResourceGoroutine:
			id := st.Resource.Goroutine()
			from, to := st.Goroutine()
			switch {
			case to == trace.GoRunnable && from != trace.GoRunning:
				pending[id] = wake{ev.Time(), wakerOf(ev), ev.Proc()}
			case from == trace.GoRunnable && to == trace.GoRunning:
				if w, ok := pending[id]; ok {
					waits[w.by] = append(waits[w.by], ev.Time().Sub(w.at))
					if w.proc == ev.Proc() {
						sameP[w.by]++
					}
					delete(pending, id)
				}
			}
		case trace.ResourceProc:
			id := st.Resource.Proc()
			from, to := st.Proc()
			if to == trace.ProcRunning {
				since[id] = ev.Time()
			} else if from == trace.ProcRunning && since[id] != 0 {
				busy[id] += ev.Time().Sub(since[id])
			}
		}
	}
	span := last.Sub(first)
	fmt.Printf("trace of %v\n", span.Round(time.Millisecond))
	fmt.Printf("%-32s %7s %9s %9s %9s %9s %6s\n", "woken by", "wakes", "mean", "p50", "p90", "p99", "sameP")
	for _, by := range slices.Sorted(maps.Keys(waits)) {
		d := waits[by]
		slices.Sort(d)
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		q := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))].Round(100 * time.Nanosecond) }
		fmt.Printf("%-32s %7d %9v %9v %9v %9v %5.0f%%\n", by, len(d), (sum / time.Duration(len(d))).Round(100*time.Nanosecond),
			q(.5), q(.9), q(.99), 100*float64(sameP[by])/float64(len(d)))
	}
	for _, p := range slices.Sorted(maps.Keys(busy)) {
		fmt.Printf("P%d running %.0f%% of the trace\n", p, 100*busy[p].Seconds()/span.Seconds())
	}
	return nil
}
