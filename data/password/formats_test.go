package password

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/scrypt"
)

// Hashes made by the standard libraries of each format, as another system
// would have stored them.

func bcryptHash(t *testing.T, pw string, cost int, prefix string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), cost)
	if err != nil {
		t.Fatal(err)
	}
	return prefix + string(h[3:])
}

func scryptHash(t *testing.T, pw string, ln, r, p int) string {
	t.Helper()
	salt := make([]byte, 16)
	rand.Read(salt)
	key, err := scrypt.Key([]byte(pw), salt, 1<<ln, r, p, 32)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("$scrypt$ln=%d,r=%d,p=%d$%s$%s", ln, r, p, b64.EncodeToString(salt), b64.EncodeToString(key))
}

func passlibPBKDF2(t *testing.T, pw string, iter int) string {
	t.Helper()
	salt := make([]byte, 16)
	rand.Read(salt)
	key, err := pbkdf2.Key(sha256.New, pw, salt, iter, 32)
	if err != nil {
		t.Fatal(err)
	}
	ab := func(b []byte) string { return strings.ReplaceAll(b64.EncodeToString(b), "+", ".") }
	return fmt.Sprintf("$pbkdf2-sha256$%d$%s$%s", iter, ab(salt), ab(key))
}

func djangoPBKDF2(t *testing.T, pw string, iter int) string {
	t.Helper()
	salt := "q8Sx0XkU4bV2nW7m1aPz"
	key, err := pbkdf2.Key(sha256.New, pw, []byte(salt), iter, 32)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("pbkdf2_sha256$%d$%s$%s", iter, salt, base64.StdEncoding.EncodeToString(key))
}

func argon2Hash(pw string, m, tm uint32) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	key := argon2.IDKey([]byte(pw), salt, tm, m, 1, 32)
	return fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=1$%s$%s", m, tm, b64.EncodeToString(salt), b64.EncodeToString(key))
}

func TestVerifyImportedFormats(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a hash of every imported format at its real cost")
	}
	const pw = "correct horse battery"
	tests := []struct {
		name    string
		hash    string
		upgrade bool
	}{
		{"bcrypt 2a", bcryptHash(t, pw, bcrypt.MinCost, "$2a"), true},
		{"bcrypt 2b", bcryptHash(t, pw, 5, "$2b"), true},
		{"bcrypt 2y", bcryptHash(t, pw, bcrypt.MinCost, "$2y"), true},
		{"scrypt", scryptHash(t, pw, 14, 8, 1), true},
		{"pbkdf2-sha256 passlib", passlibPBKDF2(t, pw, 29000), true},
		{"pbkdf2_sha256 django", djangoPBKDF2(t, pw, 10000), true},
		{"argon2id weaker", argon2Hash(pw, 4096, 1), true},
		{"argon2id current", mustHash(t, pw), false},
		{"argon2id costlier", argon2Hash(pw, 32*1024, 3), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Check(tc.hash); err != nil {
				t.Fatalf("Check = %v; want nil", err)
			}
			if ok, err := Verify(tc.hash, pw); !ok || err != nil {
				t.Fatalf("Verify(right) = %v, %v; want true, nil", ok, err)
			}
			if ok, err := Verify(tc.hash, pw+"!"); ok || err != nil {
				t.Fatalf("Verify(wrong) = %v, %v; want false, nil", ok, err)
			}
			if got := NeedsUpgrade(tc.hash); got != tc.upgrade {
				t.Fatalf("NeedsUpgrade = %v; want %v", got, tc.upgrade)
			}
		})
	}
}

func mustHash(t *testing.T, pw string) string {
	t.Helper()
	h, err := Hash(pw)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestUpgradableBcryptLongPassword: bcrypt reads 72 bytes; a longer
// password that verified is not used to replace the hash.
func TestUpgradableBcryptLongPassword(t *testing.T) {
	long := strings.Repeat("p", 72)
	h := bcryptHash(t, long, bcrypt.MinCost, "$2b")
	if ok, _ := Verify(h, long+"-typed-by-someone-else"); !ok {
		t.Fatal("bcrypt no longer truncates at 72 bytes; revisit Upgradable")
	}
	if Upgradable(h, long+"-typed-by-someone-else") {
		t.Fatal("Upgradable(bcrypt, 90-byte password) = true; want false")
	}
	if !Upgradable(h, long) {
		t.Fatal("Upgradable(bcrypt, 72-byte password) = false; want true")
	}
}

// TestCheckRefusesCostlyOrBroken: parameters that would make a login a
// denial of service, and broken strings, are refused before any hashing.
func TestCheckRefusesCostlyOrBroken(t *testing.T) {
	bc := bcryptHash(t, "pw-pw-pw-pw", bcrypt.MinCost, "$2b")
	tests := []struct{ name, hash string }{
		{"unknown", "$md5$abc"},
		{"plain text", "hunter2hunter2"},
		{"bcrypt cost 15", strings.Replace(bc, "$04$", "$15$", 1)},
		{"bcrypt cut", bc[:50]},
		{"scrypt 128 MiB", "$scrypt$ln=17,r=8,p=1$c2FsdHNhbHRzYWx0$" + b64.EncodeToString(make([]byte, 32))},
		{"scrypt no p", "$scrypt$ln=14,r=8$c2FsdHNhbHRzYWx0$" + b64.EncodeToString(make([]byte, 32))},
		{"scrypt bad salt", "$scrypt$ln=14,r=8,p=1$!!$" + b64.EncodeToString(make([]byte, 32))},
		{"argon2id 1 GiB", "$argon2id$v=19$m=1048576,t=2,p=1$c2FsdHNhbHRzYWx0$" + b64.EncodeToString(make([]byte, 32))},
		{"pbkdf2 10M iterations", "pbkdf2_sha256$10000000$salt1234salt$" + base64.StdEncoding.EncodeToString(make([]byte, 32))},
		{"pbkdf2 10 iterations", "pbkdf2_sha256$10$salt1234salt$" + base64.StdEncoding.EncodeToString(make([]byte, 32))},
		{"pbkdf2 short hash", "$pbkdf2-sha256$29000$c2FsdHNhbHRzYWx0$AAAA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Check(tc.hash); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Check(%q) = %v; want ErrMalformed", tc.hash, err)
			}
			if ok, err := Verify(tc.hash, "pw-pw-pw-pw"); ok || !errors.Is(err, ErrMalformed) {
				t.Fatalf("Verify = %v, %v; want false, ErrMalformed", ok, err)
			}
		})
	}
}

// BenchmarkVerifyFormats measures one verification per format at the costs that
// systems commonly store (and at the import bounds for scrypt), to size
// the Gate's slots for imported users.
func BenchmarkVerifyFormats(b *testing.B) {
	const pw = "correct horse battery"
	t := &testing.T{}
	cases := []struct{ name, hash string }{
		{"argon2id-m19MiB-t2", mustHashB(b, pw)},
		{"bcrypt-cost10", bcryptHash(t, pw, 10, "$2b")},
		{"scrypt-ln15-r8-32MiB", scryptHash(t, pw, 15, 8, 1)},
		{"scrypt-ln16-r8-64MiB", scryptHash(t, pw, 16, 8, 1)},
		{"pbkdf2-sha256-600k", djangoPBKDF2(t, pw, 600000)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if ok, err := Verify(c.hash, pw); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

func mustHashB(b *testing.B, pw string) string {
	h, err := Hash(pw)
	if err != nil {
		b.Fatal(err)
	}
	return h
}
