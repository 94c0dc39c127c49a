package postgres

import (
	"testing"
	"time"

	"oauthd/data"
)

// benchFamily is a family as a rotation stores it.
func benchFamily() data.Family {
	now := time.Now().UTC()
	return data.Family{ID: "fam_0123456789abcdefghijkl", ClientID: "oauthd_ci_0123456789abcdef", UserID: 42,
		Scopes: []string{"PROFILE_READ", "BOOKING_READ"}, TokenHash: make([]byte, 32), PrevHash: make([]byte, 32),
		Generation: 1234, CreatedAt: now, RotatedAt: now, ExpiresAt: now.Add(time.Hour), AbsoluteExp: now.Add(24 * time.Hour),
		CodeHash: make([]byte, 32), Tagged: true}
}

// What a rotation of a cached family costs to get its record: before, a
// JSON decode of the cached body; now, a copy of the decoded record.
func BenchmarkFamilyDecode(b *testing.B) {
	body := encode(benchFamily())
	for b.Loop() {
		if _, err := decode[data.Family](body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFamilyNormalize(b *testing.B) {
	f := benchFamily()
	for b.Loop() {
		data.Normalize(f)
	}
}
