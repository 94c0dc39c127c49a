package bolt_test

import (
	"testing"

	"oauthd/data"
	"oauthd/data/datatest"
)

// TestSeedFamilies: what the benchmark-only SeedFamilies writes reads back
// as what the code exchange writes (datatest.RunSeedFamiliesTest): the
// families, their indexes, the codes' tombstones, a rotation and a sweep
// (which finds both through the expiry index).
func TestSeedFamilies(t *testing.T) {
	datatest.RunSeedFamiliesTest(t, func(t *testing.T) data.Store { return openTemp(t) })
}
