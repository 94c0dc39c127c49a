package password

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// phc is an argon2id string with the given parameters and a random salt
// and hash (it parses; no password matches it).
func phc(m, tm, p int) string {
	salt, key := make([]byte, 16), make([]byte, 32)
	rand.Read(salt)
	rand.Read(key)
	return fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", m, tm, p, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// TestImportCheckerThreads: an imported argon2id hash runs at most
// MaxImportThreads lanes per check; Verify still reads up to 16 (a stored
// hash keeps working until its login upgrades it).
func TestImportCheckerThreads(t *testing.T) {
	tests := []struct {
		name string
		hash string
		want error
	}{
		{"p=1", phc(64, 1, 1), nil},
		{"p=4", phc(64, 1, 4), nil},
		{"p=5", phc(64, 1, 5), ErrTooCostly},
		{"p=16", phc(256, 1, 16), ErrTooCostly},
		{"malformed", "$argon2id$v=19$m=64,t=1$x$y", ErrMalformed},
	}
	var c ImportChecker
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Check(tc.hash)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Check(%s) = %v; want %v", tc.name, err, tc.want)
			}
		})
	}
	if err := Check(phc(256, 1, 16)); err != nil {
		t.Fatalf("Check (what Verify reads) of p=16 = %v; want nil", err)
	}
}

// TestImportCheckerTime: a hash whose one check takes longer than
// MaxCheck on this machine is refused, saying how long it took; a cheap
// one passes. (argon2id at m=64 KiB, t=1 takes microseconds;
// PBKDF2-SHA256 at 200,000 iterations about 60 ms, seconds under -race;
// the limit sits between them with room for a loaded machine.)
func TestImportCheckerTime(t *testing.T) {
	cheap := phc(64, 1, 1)
	costly := "$pbkdf2-sha256$200000$c2FsdHNhbHQ$" + b64.EncodeToString(make([]byte, 32))
	c := ImportChecker{MaxCheck: 15 * time.Millisecond}
	if err := c.Check(cheap); err != nil {
		t.Fatalf("argon2id m=64,t=1: %v; want nil", err)
	}
	err := c.Check(costly)
	if !errors.Is(err, ErrTooCostly) || !strings.Contains(err.Error(), "on this machine; at most 15ms") {
		t.Fatalf("200,000 PBKDF2 iterations with a 15ms limit: %v; want ErrTooCostly naming the measure", err)
	}
}

// TestImportCheckerMeasuresOncePerCost: hashes that share their format
// and parameters are timed once, whatever their salts; each other cost is
// timed once more.
func TestImportCheckerMeasuresOncePerCost(t *testing.T) {
	var c ImportChecker
	for range 2000 {
		if err := c.Check(phc(64, 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Measured(); got != 1 {
		t.Fatalf("after 2000 hashes of one cost: %d measures; want 1", got)
	}
	bc, _ := bcrypt.GenerateFromPassword([]byte("pw"), 4)
	bc2, _ := bcrypt.GenerateFromPassword([]byte("other"), 4)
	for _, h := range []string{phc(64, 2, 1), phc(128, 1, 1), string(bc), string(bc2), phc(64, 2, 1),
		"$pbkdf2-sha256$1000$c2FsdHNhbHQ$" + b64.EncodeToString(make([]byte, 32)),
		"$pbkdf2-sha256$1001$c2FsdHNhbHQ$" + b64.EncodeToString(make([]byte, 32)),
		"pbkdf2_sha256$1000$saltsalt$" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="} {
		if err := c.Check(h); err != nil {
			t.Fatalf("Check(%s): %v", h, err)
		}
	}
	if got := c.Measured(); got != 7 {
		t.Fatalf("%d measures; want 7 (argon2id ×3, bcrypt 4, passlib PBKDF2 ×2, Django PBKDF2)", got)
	}
}

// TestNeedsUpgradeAnyOtherParameters: at the first login, a hash whose
// parameters differ from today's in any way, weaker or costlier, is
// replaced.
func TestNeedsUpgradeAnyOtherParameters(t *testing.T) {
	tests := []struct {
		name string
		hash string
		want bool
	}{
		{"today's", phc(Memory, Time, Threads), false},
		{"less memory", phc(Memory/2, Time, Threads), true},
		{"more memory", phc(Memory*2, Time, Threads), true},
		{"more time", phc(Memory, Time+1, Threads), true},
		{"less time", phc(Memory, 1, Threads), true},
		{"more threads", phc(Memory, Time, 4), true},
		{"longer hash", phc(Memory, Time, Threads) + "AAAAAAAA", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsUpgrade(tc.hash); got != tc.want {
				t.Fatalf("NeedsUpgrade(%s) = %v; want %v", tc.hash, got, tc.want)
			}
		})
	}
}
