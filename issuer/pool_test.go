package issuer

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWorkerPoolRunsEveryJob(t *testing.T) {
	p := newWorkerPool()
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 1000 {
		wg.Add(1)
		p.run(func() { n.Add(1); wg.Done() })
	}
	wg.Wait()
	if got := n.Load(); got != 1000 {
		t.Fatalf("ran %d jobs, want 1000", got)
	}
}

func TestWorkerPoolNeverQueuesBehindABusyWorker(t *testing.T) {
	p := newWorkerPool()
	block := make(chan struct{})
	started := make(chan struct{})
	p.run(func() { close(started); <-block })
	<-started
	done := make(chan struct{})
	p.run(func() { close(done) }) // the only worker is busy: a new one must start
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("second job waited for the busy worker")
	}
	close(block)
}

func TestWorkerPoolReusesAnIdleWorker(t *testing.T) {
	p := newWorkerPool()
	ids := make(chan uint64, 2)
	done := make(chan struct{}, 2)
	job := func() { ids <- goid(); done <- struct{}{} }
	p.run(job)
	<-done
	// The worker is now idle in its select; wait until it is parked there.
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case p.jobs <- job:
			<-done
			if a, b := <-ids, <-ids; a != b {
				t.Fatalf("second job ran on goroutine %d, the first on %d: the idle worker was not reused", b, a)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker never became idle")
		}
		runtime.Gosched()
	}
}

// goid returns the current goroutine's ID, parsed from its stack header.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	var id uint64
	for _, c := range b[len("goroutine "):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
