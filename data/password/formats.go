package password

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/scrypt"
)

// Formats of password hashes [Verify] accepts, besides argon2id, for users
// imported with their existing hashes (`oauthd users import`):
//
//	bcrypt          $2a$ / $2b$ / $2y$ (modular crypt), cost ≤ MaxBcryptCost
//	scrypt          $scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt>$<hash>  (PHC, passlib; unpadded standard base64)
//	pbkdf2-sha256   $pbkdf2-sha256$<iterations>$<salt>$<hash>     (passlib; adapted base64, "." for "+")
//	pbkdf2_sha256   pbkdf2_sha256$<iterations>$<salt>$<hash>      (Django; salt as text, padded base64 hash)
//
// Each format's cost parameters are bounded (see the Max constants): a
// hash's parameters decide the memory and CPU of every login against it,
// and the [Gate] that bounds the checks running at once assumes each
// takes at most [MaxMemoryKiB].
const (
	// MaxMemoryKiB bounds the memory of one verification (argon2id m,
	// scrypt 128·r·N): 64 MiB.
	MaxMemoryKiB = 64 * 1024
	// MaxBcryptCost bounds bcrypt's cost (2^14 rounds, about a second).
	MaxBcryptCost = 14
	// MaxPBKDF2Iterations bounds PBKDF2-SHA256's iterations.
	MaxPBKDF2Iterations = 2_000_000
	// minPBKDF2Iterations refuses hashes too weak to be worth keeping.
	minPBKDF2Iterations = 1000
)

// Check reports whether encoded is a hash [Verify] can check, with
// parameters within the bounds; the error says what is wrong. It does not
// run the hash function (except that bcrypt's own parser runs, cheaply).
func Check(encoded string) error {
	_, err := parseAny(encoded)
	return err
}

// NeedsUpgrade reports whether encoded differs from what [Hash] makes
// today: any format but argon2id, or argon2id with other parameters,
// weaker or costlier (a costlier hash makes every login against it take
// more than its share of a password slot). After a successful login,
// such a hash is replaced by [Hash] of the password.
func NeedsUpgrade(encoded string) bool {
	p, err := parse(encoded)
	if err != nil {
		return true
	}
	return p.memory != Memory || p.time != Time || p.threads != Threads || len(p.key) != KeyLen
}

// Upgradable reports whether encoded should be replaced by [Hash] of
// password, which has just verified against it: [NeedsUpgrade], except
// for a bcrypt hash and a password longer than 72 bytes. bcrypt reads only
// the first 72 bytes, so such a password verified by its prefix; hashing
// the whole of it could record a variant typed by someone who knows the
// prefix, and lock out the user who types the real one.
func Upgradable(encoded, password string) bool {
	if len(password) > 72 && strings.HasPrefix(encoded, "$2") {
		return false
	}
	return NeedsUpgrade(encoded)
}

// verifier checks one password against a parsed hash.
type verifier func(password string) bool

// parseAny parses encoded in any supported format.
func parseAny(encoded string) (verifier, error) {
	v, _, err := parseCost(encoded)
	return v, err
}

// parseCost parses encoded in any supported format and returns, besides
// its verifier, its cost: the format and every parameter that decides
// what one check costs (never the salt or the hash), so that two hashes
// with the same cost have the same cost string.
func parseCost(encoded string) (verifier, string, error) {
	var (
		v   verifier
		err error
	)
	switch {
	case strings.HasPrefix(encoded, "$argon2id$"):
		p, err := parse(encoded)
		if err != nil {
			return nil, "", err
		}
		return func(pw string) bool { return p.verify(pw) }, fmt.Sprintf("argon2id m=%d,t=%d,p=%d,len=%d", p.memory, p.time, p.threads, len(p.key)), nil
	case strings.HasPrefix(encoded, "$2a$"), strings.HasPrefix(encoded, "$2b$"), strings.HasPrefix(encoded, "$2y$"):
		v, err = parseBcrypt(encoded)
	case strings.HasPrefix(encoded, "$scrypt$"):
		v, err = parseScrypt(encoded)
	case strings.HasPrefix(encoded, "$pbkdf2-sha256$"):
		v, err = parsePBKDF2(encoded, "$pbkdf2-sha256$", abDecode)
	case strings.HasPrefix(encoded, "pbkdf2_sha256$"):
		v, err = parsePBKDF2(encoded, "pbkdf2_sha256$", nil)
	default:
		return nil, "", fmt.Errorf("%w: unknown format; expected argon2id, bcrypt ($2a$/$2b$/$2y$), scrypt or pbkdf2-sha256", ErrMalformed)
	}
	if err != nil {
		return nil, "", err
	}
	return v, costOf(encoded), nil
}

// costOf is the cost string of a hash other than argon2id that parsed:
// its format and parameters, and its hash's length (PBKDF2 computes one
// block per 32 bytes of it).
func costOf(encoded string) string {
	parts := strings.Split(encoded, "$")
	switch {
	case strings.HasPrefix(encoded, "$2"): // "", "2b", "12", salt+hash
		return "bcrypt " + parts[2]
	case strings.HasPrefix(encoded, "$scrypt$"): // "", "scrypt", "ln=…,r=…,p=…", salt, hash
		return fmt.Sprintf("scrypt %s,len=%d", parts[2], len(parts[4]))
	default: // pbkdf2: prefix and iterations, salt, hash
		return fmt.Sprintf("%s,len=%d", strings.Join(parts[:len(parts)-2], "$"), len(parts[len(parts)-1]))
	}
}

func parseBcrypt(encoded string) (verifier, error) {
	cost, err := bcrypt.Cost([]byte(encoded))
	if err != nil {
		return nil, fmt.Errorf("%w: bcrypt: %v", ErrMalformed, err)
	}
	if cost > MaxBcryptCost {
		return nil, fmt.Errorf("%w: bcrypt cost %d is above %d", ErrMalformed, cost, MaxBcryptCost)
	}
	if len(encoded) != 60 {
		return nil, fmt.Errorf("%w: bcrypt: a hash is 60 characters", ErrMalformed)
	}
	// $2y$ (PHP) is the same algorithm as $2b$; x/crypto/bcrypt reads $2a$/$2b$.
	h := []byte(encoded)
	if h[2] == 'y' {
		h[2] = 'b'
	}
	return func(pw string) bool { return bcrypt.CompareHashAndPassword(h, []byte(pw)) == nil }, nil
}

// kvParams parses "k=v,k=v" into the named uint fields.
func kvParams(s string, names ...string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if !ok || err != nil || n == 0 {
			return nil, fmt.Errorf("%w: parameter %q", ErrMalformed, kv)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%w: parameter %q twice", ErrMalformed, k)
		}
		out[k] = n
	}
	for _, k := range names {
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("%w: missing parameter %q", ErrMalformed, k)
		}
	}
	if len(out) != len(names) {
		return nil, fmt.Errorf("%w: unknown parameter in %q", ErrMalformed, s)
	}
	return out, nil
}

func parseScrypt(encoded string) (verifier, error) {
	parts := strings.Split(encoded, "$")
	// "", "scrypt", "ln=…,r=…,p=…", salt, hash
	if len(parts) != 5 {
		return nil, fmt.Errorf("%w: scrypt: expected $scrypt$ln=…,r=…,p=…$salt$hash", ErrMalformed)
	}
	kv, err := kvParams(parts[2], "ln", "r", "p")
	if err != nil {
		return nil, err
	}
	ln, r, p := kv["ln"], kv["r"], kv["p"]
	if ln > 30 || r > 64 || p > 16 || (128*r<<ln)/1024 > MaxMemoryKiB {
		return nil, fmt.Errorf("%w: scrypt parameters ln=%d,r=%d,p=%d need more than %d MiB or are out of range",
			ErrMalformed, ln, r, p, MaxMemoryKiB/1024)
	}
	salt, err1 := b64.DecodeString(parts[3])
	key, err2 := b64.DecodeString(parts[4])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 || len(key) > maxKeyLen {
		return nil, fmt.Errorf("%w: scrypt salt or hash", ErrMalformed)
	}
	return func(pw string) bool {
		got, err := scrypt.Key([]byte(pw), salt, 1<<ln, int(r), int(p), len(key))
		return err == nil && subtle.ConstantTimeCompare(got, key) == 1
	}, nil
}

// abDecode decodes passlib's "adapted base64": standard base64 without
// padding, with "." for "+".
func abDecode(s string) ([]byte, error) {
	return b64.DecodeString(strings.ReplaceAll(s, ".", "+"))
}

// parsePBKDF2 parses passlib's form (decode = abDecode: salt and hash in
// adapted base64) or Django's (decode = nil: the salt is used as text, the
// hash is padded standard base64).
func parsePBKDF2(encoded, prefix string, decode func(string) ([]byte, error)) (verifier, error) {
	parts := strings.Split(strings.TrimPrefix(encoded, prefix), "$")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: pbkdf2-sha256: expected %s<iterations>$<salt>$<hash>", ErrMalformed, prefix)
	}
	iter, err := strconv.ParseUint(parts[0], 10, 32)
	if err != nil || iter < minPBKDF2Iterations || iter > MaxPBKDF2Iterations {
		return nil, fmt.Errorf("%w: pbkdf2-sha256 iterations %q must be %d to %d", ErrMalformed, parts[0], minPBKDF2Iterations, MaxPBKDF2Iterations)
	}
	var salt, key []byte
	if decode != nil {
		salt, err = decode(parts[1])
		if err == nil {
			key, err = decode(parts[2])
		}
	} else {
		salt = []byte(parts[1])
		key, err = base64.StdEncoding.DecodeString(parts[2])
	}
	if err != nil || len(salt) < 8 || len(key) < 16 || len(key) > maxKeyLen {
		return nil, fmt.Errorf("%w: pbkdf2-sha256 salt or hash", ErrMalformed)
	}
	return func(pw string) bool {
		got, err := pbkdf2.Key(sha256.New, pw, salt, int(iter), len(key))
		return err == nil && subtle.ConstantTimeCompare(got, key) == 1
	}, nil
}
