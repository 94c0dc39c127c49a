package data

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"strings"
	"sync"
	"time"
)

// Prefixes of the credentials oauthd hands out, so that secret scanners can
// recognise a leaked one.
const (
	PrefixClientSecret = "oauthd_cs_"
	PrefixRefreshToken = "oauthd_rt_"
	PrefixAuthCode     = "oauthd_ac_"
	PrefixSession      = "oauthd_ss_"
)

// secretBytes is the entropy of every credential: 256 bits.
const secretBytes = 32

// NewSecret returns prefix followed by 256 random bits, base64url-encoded
// without padding (43 characters).
func NewSecret(prefix string) string {
	return prefix + randomString(secretBytes)
}

// NewAuthCode returns a new authorization code made at now: the prefix, 7
// characters of now in milliseconds (in an order-preserving alphabet, as
// in [NewFamilyID]), then 256 random bits (43 characters). Store it under
// [AuthCodeKey].
func NewAuthCode(now time.Time) string {
	var t [timeChars]byte
	putTimeChars(t[:], now)
	return PrefixAuthCode + string(t[:]) + randomString(secretBytes)
}

// AuthCodeKey returns the key a code is stored and looked up under: its 7
// time characters, then the SHA-256 of the whole code. Codes made later get
// greater keys, so a store appends new codes at the end of its index and
// the codes being exchanged (the recent ones) sit together; the time part
// is not secret, and the code itself is kept only as a hash. A string that
// is not a code gets a key too, which matches nothing.
func AuthCodeKey(code string) []byte { return codeKey(PrefixAuthCode, code) }

// codeKey is the key of a code of prefix: its time characters then its
// SHA-256 ([AuthCodeKey], [DeviceCodeKey]).
func codeKey(prefix, code string) []byte {
	t, _ := strings.CutPrefix(code, prefix)
	t = t[:min(len(t), timeChars)]
	h := sha256.Sum256([]byte(code))
	return append([]byte(t), h[:]...)
}

// NewID returns prefix followed by n random bytes, base64url-encoded. It is
// for public identifiers (client IDs, secret IDs, family IDs), not secrets.
// An ID never starts with '-': operators pass IDs as command-line
// arguments, where a leading '-' reads as a flag.
func NewID(prefix string, n int) string {
	for {
		if id := prefix + randomString(n); id != "" && id[0] != '-' {
			return id
		}
	}
}

func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never returns an error (crypto/rand, Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Hash returns the SHA-256 of a credential: the only form in which client
// secrets, codes, refresh tokens and session IDs are stored. A fast hash is
// right for values of 256 bits of entropy; a slow one would only cost CPU.
func Hash(credential string) []byte {
	h := sha256.Sum256([]byte(credential))
	return h[:]
}

// Equal compares two hashes in constant time. An empty hash equals nothing,
// not even another empty one, so that a missing hash never matches.
func Equal(a, b []byte) bool {
	return len(a) > 0 && subtle.ConstantTimeCompare(a, b) == 1
}

// familyIDBytes is the size of a refresh-token family ID.
const familyIDBytes = 16

// NewFamilyID returns a new refresh-token family ID: 22 base64url
// characters, of which the first 7 encode now in milliseconds
// in an order-preserving alphabet and the other 15 are random (88 bits).
// IDs made later sort after earlier ones, so a store keyed by family ID
// appends each new family at the end of its index instead of at a random
// place: a batch of code exchanges dirties one or two pages, not one per
// grant, and the families in use (the recent ones) sit together. The
// creation time it reveals is the client's own grant's. Older, wholly random
// IDs have the same form and stay valid.
func NewFamilyID(now time.Time) string { return newFamilyID(now) }

// sortedAlphabet is the base64url alphabet in ASCII order.
const sortedAlphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// timeChars is how many characters of a family ID or a code carry the time:
// 42 bits of milliseconds, enough until the year 2109.
const timeChars = 7

// putTimeChars writes now in milliseconds (42 bits) to dst's 7 characters,
// most significant first, in sortedAlphabet: later times sort after.
func putTimeChars(dst []byte, now time.Time) {
	ms := uint64(now.UnixMilli()) & (1<<(6*timeChars) - 1)
	for i := timeChars - 1; i >= 0; i-- {
		dst[i] = sortedAlphabet[ms&63]
		ms >>= 6
	}
}

func newFamilyID(now time.Time) string {
	var id [22]byte // base64.RawURLEncoding.EncodedLen(familyIDBytes)
	putTimeChars(id[:timeChars], now)
	var r [11]byte // 15 characters of base64url
	rand.Read(r[:])
	base64.RawURLEncoding.Encode(id[timeChars:], r[:])
	return string(id[:])
}

// RefreshKeySize is the size of the key that tags refresh tokens.
const RefreshKeySize = 32

// tagBytes is the size of a refresh token's tag: 128 bits of HMAC-SHA256.
const tagBytes = 16

// tagChars is the length of the tag in base64url.
const tagChars = 22 // base64.RawURLEncoding.EncodedLen(tagBytes)

// NewRefreshToken returns the refresh token of the family's given
// generation, tagged with key (of [RefreshKeySize] bytes): the prefix, the
// family ID, a dot, the secret (32 bytes in base64url: 8 bytes that mark
// it as carrying a generation, the generation, 128 random bits), a dot,
// and the tag, HMAC-SHA256(key, everything before the second dot) cut to
// 128 bits. The family ID lets the server find the family with one
// lookup; the tag lets it tell, without storing anything more, a token it
// issued for that family from one made up around a known family ID (see
// [CheckRefreshTag]); the generation, which only the server can put in a
// token that carries its tag, lets it recognise a token it issued after
// the state the store holds (a restored backup: docs/SECURITY.md "Refresh
// tokens after a restore"; [RefreshGeneration]). The form is the one of
// the releases before generations, which check its tag as their own: a
// release of either kind accepts the other's tokens (replicas upgraded
// one by one). A server tags many tokens with one key: [RefreshTagger]
// does the same without setting up the HMAC each time.
func NewRefreshToken(familyID string, generation uint64, key []byte) string {
	return NewRefreshTagger(key).NewToken(familyID, generation)
}

// genMark starts the secret of a refresh token that carries a generation.
// A token of the releases before generations has 256 random bits there:
// one starts so with probability 2⁻⁶⁴, and only the server can make a
// tagged one (the tag covers the secret).
var genMark = [8]byte{'o', 'a', 'u', 't', 'h', 'd', 'g', '1'}

// genRandomBytes is the random part of a secret that carries a
// generation: 128 bits, and the tag adds 128 bits that only the server
// can compute (RFC 6749 §10.10 asks for a guess probability of 2⁻¹²⁸ at
// most).
const genRandomBytes = secretBytes - len(genMark) - 8

// TagCheck is what [CheckRefreshTag] finds in a refresh token.
type TagCheck int

const (
	// Untagged: the token has the form issued before refresh tokens
	// carried a tag (prefix, family ID, a dot, 256 random bits). Only the
	// family's stored hashes can tell whether it was issued.
	Untagged TagCheck = iota
	// TagValid: the tag is the server's for this family ID and secret
	// (with the generation it may carry): the server issued this token
	// for this family.
	TagValid
	// TagInvalid: the token has the tagged form but the tag is not the
	// server's: nobody was ever given this token.
	TagInvalid
)

// CheckRefreshTag checks the tag of a token that [ParseRefreshToken]
// accepted, in constant time.
func CheckRefreshTag(token string, key []byte) TagCheck {
	return NewRefreshTagger(key).Check(token)
}

// RefreshTagger makes and checks refresh-token tags under one key. It is
// safe for concurrent use and keeps keyed HMAC states for reuse (the token
// endpoint is a hot path).
type RefreshTagger struct {
	key  []byte
	pool sync.Pool // *tagState
}

type tagState struct {
	mac hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

// NewRefreshTagger returns a tagger for key (copied).
func NewRefreshTagger(key []byte) *RefreshTagger {
	t := &RefreshTagger{key: bytes.Clone(key)}
	t.pool.New = func() any { return &tagState{mac: hmac.New(sha256.New, t.key), buf: make([]byte, 0, 128)} }
	return t
}

// sum returns HMAC-SHA256(key, body) cut to tagBytes.
func (t *RefreshTagger) sum(body []byte) [tagBytes]byte {
	st := t.pool.Get().(*tagState)
	st.mac.Reset()
	st.mac.Write(body)
	var tag [tagBytes]byte
	copy(tag[:], st.mac.Sum(st.sum[:0]))
	t.pool.Put(st)
	return tag
}

// NewToken is [NewRefreshToken] under the tagger's key.
func (t *RefreshTagger) NewToken(familyID string, generation uint64) string {
	var b [len(PrefixRefreshToken) + 22 + 1 + 43 + 1 + tagChars]byte
	out := append(b[:0], PrefixRefreshToken...)
	out = append(out, familyID...)
	out = append(out, '.')
	var r [secretBytes]byte
	copy(r[:], genMark[:])
	binary.BigEndian.PutUint64(r[len(genMark):], generation)
	rand.Read(r[secretBytes-genRandomBytes:])
	out = base64.RawURLEncoding.AppendEncode(out, r[:])
	tag := t.sum(out)
	out = append(out, '.')
	out = base64.RawURLEncoding.AppendEncode(out, tag[:])
	return string(out)
}

// Check is [CheckRefreshTag] under the tagger's key.
func (t *RefreshTagger) Check(token string) TagCheck {
	if strings.Count(token, ".") != 2 {
		return Untagged
	}
	dot := strings.LastIndexByte(token, '.')
	enc := token[dot+1:]
	var got [tagBytes]byte
	if len(enc) != tagChars {
		return TagInvalid
	}
	var encb [tagChars]byte
	copy(encb[:], enc)
	if n, err := base64.RawURLEncoding.Strict().Decode(got[:], encb[:]); err != nil || n != tagBytes {
		return TagInvalid
	}
	st := t.pool.Get().(*tagState)
	st.buf = append(st.buf[:0], token[:dot]...)
	want := t.sumLocked(st)
	t.pool.Put(st)
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return TagInvalid
	}
	return TagValid
}

// sumLocked is sum of st.buf on a state already taken from the pool.
func (t *RefreshTagger) sumLocked(st *tagState) [tagBytes]byte {
	st.mac.Reset()
	st.mac.Write(st.buf)
	var tag [tagBytes]byte
	copy(tag[:], st.mac.Sum(st.sum[:0]))
	return tag
}

// ParseRefreshToken returns the family ID carried by a refresh token, or
// false when the token is not of our form. Both forms are accepted: the
// tagged one of [NewRefreshToken] (and of the releases before
// generations) and the untagged one of earlier releases;
// [CheckRefreshTag] tells them apart.
func ParseRefreshToken(token string) (familyID string, ok bool) {
	id, _, ok := parseRefresh(token)
	return id, ok
}

// RefreshGeneration returns the generation a refresh token of the tagged
// form carries, or false for one without (issued before generations, the
// untagged form, or not a refresh token). Only a token whose tag
// [CheckRefreshTag] finds valid was given that generation by the server.
func RefreshGeneration(token string) (generation uint64, ok bool) {
	_, secret, ok := parseRefresh(token)
	if !ok || strings.Count(token, ".") != 2 {
		return 0, false
	}
	var r [secretBytes]byte
	if n, err := base64.RawURLEncoding.Strict().Decode(r[:], []byte(secret)); err != nil || n != secretBytes ||
		!bytes.Equal(r[:len(genMark)], genMark[:]) {
		return 0, false
	}
	return binary.BigEndian.Uint64(r[len(genMark):]), true
}

// parseRefresh returns a refresh token's family ID and secret (its random
// part, 43 base64url characters).
func parseRefresh(token string) (familyID, secret string, ok bool) {
	rest, ok := strings.CutPrefix(token, PrefixRefreshToken)
	if !ok {
		return "", "", false
	}
	id, secret, ok := strings.Cut(rest, ".")
	if !ok {
		return "", "", false
	}
	if random, tag, tagged := strings.Cut(secret, "."); tagged {
		if len(tag) != tagChars || !isBase64URL(tag) {
			return "", "", false
		}
		secret = random
	}
	if len(id) != base64.RawURLEncoding.EncodedLen(familyIDBytes) ||
		len(secret) != base64.RawURLEncoding.EncodedLen(secretBytes) ||
		!isBase64URL(id) || !isBase64URL(secret) {
		return "", "", false
	}
	return id, secret, true
}

// IsBase64URL reports whether s uses only the base64url alphabet (RFC 4648
// §5, no padding); the empty string does.
func IsBase64URL(s string) bool { return isBase64URL(s) }

// isBase64URL reports whether s uses only the base64url alphabet (RFC 4648 §5).
func isBase64URL(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}
