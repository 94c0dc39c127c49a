package postgres

import "sync"

// famCacheMax bounds the families a store remembers (about 600 bytes
// each).
const famCacheMax = 1 << 14

// famCache remembers, per family, the version and body this process last
// wrote or read, so that the next rotation of that family here can skip
// the read and go straight to the conditional write. It is only a guess:
// the write is conditional on the version, so a stale entry (another
// replica rotated, revoked or collected the family) makes the write match
// no row, and the rotation then reads the family from the database and
// decides again. It never decides an outcome on its own.
type famCache struct {
	mu sync.Mutex
	m  map[string]famEntry
}

type famEntry struct {
	version int64
	body    []byte // immutable once stored
}

func (c *famCache) get(id string) (famEntry, bool) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	return e, ok
}

func (c *famCache) put(id string, version int64, body []byte) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]famEntry)
	}
	if _, ok := c.m[id]; !ok && len(c.m) >= famCacheMax {
		// Forget about half, chosen by the map's random order.
		n := 0
		for k := range c.m {
			delete(c.m, k)
			if n++; n >= famCacheMax/2 {
				break
			}
		}
	}
	c.m[id] = famEntry{version: version, body: body}
	c.mu.Unlock()
}

func (c *famCache) drop(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}
