package loadgen

import (
	"io"
	"sync"
	"time"
)

// Slices is how many alternating slices of each kind the comparing runs
// ([Endpoint.CodeVsRefresh], [Verify]) split their duration into, so
// that a change in the machine's load hits both kinds alike.
const Slices = 4

// Progress is where a run reports while it runs: a line to W every Every.
// The zero value reports nothing.
type Progress struct {
	W     io.Writer
	Every time.Duration
}

// on reports whether p prints.
func (p Progress) on() bool { return p.W != nil && p.Every > 0 }

// tick calls line with the time since start every p.Every until stop is
// closed, and returns what waits for its last line.
func (p Progress) tick(start time.Time, stop <-chan struct{}, line func(now time.Time)) *sync.WaitGroup {
	var wg sync.WaitGroup
	if !p.on() {
		return &wg
	}
	wg.Go(func() {
		t := time.NewTicker(p.Every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				line(now)
			}
		}
	})
	return &wg
}
