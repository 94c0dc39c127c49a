package issuer

import "time"

// workerIdle is how long a pool worker waits for its next job before it
// exits.
const workerIdle = time.Second

// workerPool runs jobs on goroutines that are kept for a while after their
// job, so that a burst of jobs reuses them. It exists for access-token
// signing: a fresh goroutine grows its stack through the ECDSA code on
// every token (the stack copies cost ~5% of the server's CPU); a kept worker
// has grown it once. A job never waits for a free worker: when none is
// idle a new one starts, so the pool is as large as the concurrency and
// shrinks by itself when idle.
type workerPool struct {
	jobs chan func() // unbuffered: a send succeeds only to an idle worker
}

func newWorkerPool() *workerPool { return &workerPool{jobs: make(chan func())} }

// run runs job on an idle worker, or on a new one.
func (p *workerPool) run(job func()) {
	select {
	case p.jobs <- job:
	default:
		go p.work(job)
	}
}

// work runs job, then each job handed to it, until none comes for
// workerIdle.
func (p *workerPool) work(job func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		job()
		t.Reset(workerIdle)
		select {
		case job = <-p.jobs:
		case <-t.C:
			return
		}
	}
}
