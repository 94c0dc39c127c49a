package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Parameters of new hashes: the OWASP Password Storage Cheat Sheet minimum
// for argon2id (19 MiB of memory, 2 iterations, 1 lane).
const (
	Memory  = 19 * 1024 // KiB
	Time    = 2
	Threads = 1
	SaltLen = 16
	KeyLen  = 32
)

// Limits on parameters accepted by [Verify], so that a tampered hash
// cannot make verification allocate unbounded memory or spin for minutes.
const (
	maxMemory  = MaxMemoryKiB
	maxTime    = 16
	maxThreads = 16
	maxKeyLen  = 128
	// MaxLength is the longest password accepted (bytes); longer ones are
	// refused by [Hash] and fail [Verify], bounding the work per attempt.
	MaxLength = 1024
)

// Errors returned by this package.
var (
	// ErrMalformed: the string is not an argon2id PHC string we can verify.
	ErrMalformed = errors.New("malformed password hash")
	// ErrTooLong: the password is longer than MaxLength bytes.
	ErrTooLong = errors.New("password too long")
	// ErrEmpty: the password is empty.
	ErrEmpty = errors.New("password is empty")
)

var b64 = base64.RawStdEncoding

// Hash returns the argon2id PHC string of password with a fresh random salt.
func Hash(password string) (string, error) {
	if password == "" {
		return "", ErrEmpty
	}
	if len(password) > MaxLength {
		return "", ErrTooLong
	}
	salt := make([]byte, SaltLen)
	rand.Read(salt) // never fails (crypto/rand, Go ≥ 1.24)
	key := argon2.IDKey([]byte(password), salt, Time, Memory, Threads, KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, Memory, Time, Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// params is a parsed PHC string.
type params struct {
	memory  uint32
	time    uint32
	threads uint8
	salt    []byte
	key     []byte
}

func parse(encoded string) (params, error) {
	var p params
	parts := strings.Split(encoded, "$")
	// "", "argon2id", "v=19", "m=…,t=…,p=…", salt, hash
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, fmt.Errorf("%w: not an argon2id PHC string", ErrMalformed)
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, fmt.Errorf("%w: unsupported version %q", ErrMalformed, parts[2])
	}
	var seen [3]bool
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, fmt.Errorf("%w: parameter %q", ErrMalformed, kv)
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return p, fmt.Errorf("%w: parameter %q", ErrMalformed, kv)
		}
		switch k {
		case "m":
			if n > maxMemory || seen[0] {
				return p, fmt.Errorf("%w: parameter %q", ErrMalformed, kv)
			}
			p.memory, seen[0] = uint32(n), true
		case "t":
			if n > maxTime || seen[1] {
				return p, fmt.Errorf("%w: parameter %q", ErrMalformed, kv)
			}
			p.time, seen[1] = uint32(n), true
		case "p":
			if n > maxThreads || seen[2] {
				return p, fmt.Errorf("%w: parameter %q", ErrMalformed, kv)
			}
			p.threads, seen[2] = uint8(n), true
		default:
			return p, fmt.Errorf("%w: unknown parameter %q", ErrMalformed, k)
		}
	}
	if !seen[0] || !seen[1] || !seen[2] {
		return p, fmt.Errorf("%w: missing parameter", ErrMalformed)
	}
	if p.memory < 8*uint32(p.threads) {
		return p, fmt.Errorf("%w: memory below 8*p", ErrMalformed)
	}
	var err error
	if p.salt, err = b64.DecodeString(parts[4]); err != nil || len(p.salt) < 8 {
		return p, fmt.Errorf("%w: salt", ErrMalformed)
	}
	if p.key, err = b64.DecodeString(parts[5]); err != nil || len(p.key) < 16 || len(p.key) > maxKeyLen {
		return p, fmt.Errorf("%w: hash", ErrMalformed)
	}
	return p, nil
}

// Verify reports whether password matches encoded: an argon2id PHC
// string, or one of the imported formats (see [Check]), reading the
// parameters from it and comparing in constant time. A malformed encoded
// string, or one in an unknown format, returns false and an error wrapping
// [ErrMalformed].
func Verify(encoded, password string) (bool, error) {
	v, err := parseAny(encoded)
	if err != nil {
		return false, err
	}
	if len(password) > MaxLength {
		return false, nil
	}
	return v(password), nil
}

// verify checks password against the argon2id hash p.
func (p params) verify(password string) bool {
	key := argon2.IDKey([]byte(password), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
	return subtle.ConstantTimeCompare(key, p.key) == 1
}

// dummySalt is a fixed salt for [DummyVerify]; the result is thrown away.
var dummySalt = make([]byte, SaltLen)

// DummyVerify spends the same time as [Verify] of a hash made by [Hash],
// and always fails. Call it when the user does not exist so that the
// response time does not reveal which logins exist.
func DummyVerify(password string) {
	if len(password) > MaxLength {
		password = password[:MaxLength]
	}
	_ = argon2.IDKey([]byte(password), dummySalt, Time, Memory, Threads, KeyLen)
}
