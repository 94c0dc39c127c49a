package postgres

import (
	"slices"
	"sync"

	"oauthd/data"
)

// famCacheMax bounds the families a store remembers (about 500 bytes
// each).
const famCacheMax = 1 << 14

// famCache remembers, per family, the version and record this process last
// wrote, decoded (so a rotation neither reads nor decodes JSON), so that the next rotation of that family here can skip
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
	fam     data.Family // private: stored and handed out as copies (cloneFamily)
}

func (c *famCache) get(id string) (famEntry, bool) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	return e, ok
}

// put remembers a copy of fam as the family's record at version.
func (c *famCache) put(id string, version int64, fam data.Family) {
	fam = cloneFamily(fam)
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
	c.m[id] = famEntry{version: version, fam: fam}
	c.mu.Unlock()
}

func (c *famCache) drop(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// cloneFamily returns a deep copy of f as decode(encode(f)) would return
// it: every time in UTC without a monotonic reading, an empty optional
// hash nil.
func cloneFamily(f data.Family) data.Family {
	f.Scopes = slices.Clone(f.Scopes)
	f.TokenHash = slices.Clone(f.TokenHash)
	f.CodeHash = cloneOptional(f.CodeHash)
	f.PrevHash = cloneOptional(f.PrevHash)
	f.LegacyHash = cloneOptional(f.LegacyHash)
	f.CreatedAt, f.RotatedAt = f.CreatedAt.UTC(), f.RotatedAt.UTC()
	f.ExpiresAt, f.AbsoluteExp = f.ExpiresAt.UTC(), f.AbsoluteExp.UTC()
	f.AuthTime = f.AuthTime.UTC()
	return f
}

// cloneOptional copies a field tagged omitempty: empty is nil.
func cloneOptional(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}
