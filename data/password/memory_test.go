package password_test

import (
	"testing"

	"oauthd/data/password"
)

func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name  string
		base  int64
		slots int
		want  int64
	}{
		{"no slots", 64 * mib, 0, 64 * mib},
		{"one slot", 64 * mib, 1, 96 * mib},
		{"two slots", 64 * mib, 2, 128 * mib},
		{"eight slots", 64 * mib, 8, 320 * mib},
		{"negative slots count as none", 64 * mib, -3, 64 * mib},
	}
	for _, tc := range tests {
		if got := password.MemoryLimit(tc.base, tc.slots); got != tc.want {
			t.Errorf("%s: MemoryLimit(%d MiB, %d) = %d MiB; want %d MiB", tc.name, tc.base/mib, tc.slots, got/mib, tc.want/mib)
		}
	}
}

// TestSlotMemoryHoldsACheck: a slot's allowance covers the buffer of one
// check of a hash made by Hash, so raising the argon2id memory parameter
// without raising SlotMemory fails here.
func TestSlotMemoryHoldsACheck(t *testing.T) {
	if check := int64(password.Memory) * 1024; password.SlotMemory <= check {
		t.Errorf("SlotMemory %d MiB; want more than a check's %d MiB", password.SlotMemory>>20, check>>20)
	}
}
