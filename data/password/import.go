package password

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Limits of a hash brought in by `oauthd users import` ([ImportChecker]):
// one check of it must stay within one password slot's share of the
// machine. A slot is one core ([DefaultSlots]); the [Gate] admits a check
// to a slot for about a second at most.
const (
	// MaxImportThreads bounds argon2id's p (lanes, run as that many
	// threads by one check) of an imported hash.
	MaxImportThreads = 4
	// MaxImportCheck bounds the time one check of an imported hash takes
	// on the importing machine.
	MaxImportCheck = time.Second
)

// ErrTooCostly: a hash's check would take more than a password slot's
// share of the machine. [ImportChecker.Check] wraps it with the measure.
var ErrTooCostly = errors.New("password hash too costly to check")

// ImportChecker checks hashes before they are imported: [Check]'s format
// and bounds, argon2id p at most [MaxImportThreads], and one check at most
// MaxCheck on this machine. The time is measured once per distinct cost
// (format and parameters, see parseCost): a million rows that share their
// parameters are measured once. It is safe for concurrent use; keep one
// for the process so that later imports reuse the measures.
type ImportChecker struct {
	// MaxCheck is the longest one check may take; default MaxImportCheck.
	MaxCheck time.Duration

	mu       sync.Mutex
	measured map[string]time.Duration // by cost string
}

// probe is the password the measure checks (it never matches).
const probe = "oauthd-cost-probe"

// Check returns nil when encoded may be imported, else an error wrapping
// [ErrMalformed] (see [Check]) or [ErrTooCostly] that says which limit it
// breaks.
func (c *ImportChecker) Check(encoded string) error {
	v, cost, err := parseCost(encoded)
	if err != nil {
		return err
	}
	if strings.HasPrefix(cost, "argon2id ") {
		p, _ := parse(encoded)
		if p.threads > MaxImportThreads {
			return fmt.Errorf("%w: argon2id p=%d runs %d threads per check; at most p=%d", ErrTooCostly, p.threads, p.threads, MaxImportThreads)
		}
	}
	limit := c.MaxCheck
	if limit <= 0 {
		limit = MaxImportCheck
	}
	c.mu.Lock()
	defer c.mu.Unlock() // one measure at a time: measures must not compete for the cores
	d, ok := c.measured[cost]
	if !ok {
		d = timeCheck(v)
		if d > limit && d <= 2*limit {
			d = min(d, timeCheck(v)) // a second chance against a load spike, when it was close
		}
		if c.measured == nil {
			c.measured = map[string]time.Duration{}
		}
		c.measured[cost] = d
	}
	if d > limit {
		return fmt.Errorf("%w: one check of this hash (%s) takes %s on this machine; at most %s", ErrTooCostly, cost, d.Round(time.Millisecond), limit)
	}
	return nil
}

// Measured is how many distinct costs c has timed.
func (c *ImportChecker) Measured() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.measured)
}

// timeCheck is how long one check of v takes.
func timeCheck(v verifier) time.Duration {
	start := time.Now()
	v(probe)
	return time.Since(start)
}
