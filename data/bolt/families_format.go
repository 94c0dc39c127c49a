package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"oauthd/data"
)

// Family records are stored in a compact binary form: every refresh
// rotation decodes and re-encodes one inside the group commit, whose
// serial work bounds the rotations per second, and JSON would be the bulk
// of it. The first byte is the format version (familyV2, written;
// familyV1, still read, with the fields V2 added zero); a record that
// starts with '{' is the JSON form written by releases before the binary
// form, which still reads. Every other first byte is refused.
//
// familyV1 layout, in field order of data.Family (uvarint/varint are
// encoding/binary's); familyV2 appends Tagged, PrevHash and LegacyHash;
// familyV3 (written only for a DPoP-bound family, so that a family without
// a binding stays readable by the releases before it) appends JKT:
//
//	ID, ClientID       uvarint length, bytes
//	UserID             varint
//	Scopes             uvarint count+1 (0 = nil), then each as a string
//	Unrestricted       one byte, 0 or 1
//	TokenHash          uvarint length+1 (0 = nil), bytes
//	Generation         uvarint
//	CreatedAt, RotatedAt, ExpiresAt, AbsoluteExp
//	                   varint Unix seconds, uvarint nanoseconds (read as UTC)
//	CodeHash           uvarint length (0 = nil, as JSON's omitempty), bytes
//	Tagged             (V2) one byte, 0 or 1
//	PrevHash, LegacyHash
//	                   (V2) each uvarint length (0 = nil), bytes
//	JKT                (V3, V4) uvarint length, bytes
//	AuthTime           (V4) varint Unix seconds, uvarint nanoseconds
//
// familyV4 is written only for a family with an OpenID Connect auth_time
// (a grant with openid); its JKT may be empty. familyV5 is written only
// for a family with RFC 8707 resources: V4's fields (JKT and AuthTime
// possibly empty), then
//
//	Resources          (V5) uvarint count+1, then each as a string (never nil)
//
// A record with bytes left over, cut short, or with a varint longer than
// its shortest encoding is refused: a family has exactly one encoding.
const (
	familyV1 = 1
	familyV2 = 2
	familyV3 = 3
	familyV4 = 4
	familyV5 = 5
)

var errFamilyRecord = errors.New("malformed family record")

// appendFamily appends the binary form of f to b (V2 to V5, see above).
func appendFamily(b []byte, f *data.Family) []byte {
	v := byte(familyV2)
	if f.JKT != "" {
		v = familyV3
	}
	if !f.AuthTime.IsZero() {
		v = familyV4
	}
	if len(f.Resources) > 0 {
		v = familyV5
	}
	b = append(b, v)
	b = appendString(b, f.ID)
	b = appendString(b, f.ClientID)
	b = binary.AppendVarint(b, f.UserID)
	b = appendStrings(b, f.Scopes)
	b = appendBool(b, f.Unrestricted)
	b = appendOptBytes(b, f.TokenHash)
	b = binary.AppendUvarint(b, f.Generation)
	for _, t := range [...]time.Time{f.CreatedAt, f.RotatedAt, f.ExpiresAt, f.AbsoluteExp} {
		b = appendTime(b, t)
	}
	b = appendLenBytes(b, f.CodeHash)
	b = appendBool(b, f.Tagged)
	b = appendLenBytes(b, f.PrevHash)
	b = appendLenBytes(b, f.LegacyHash)
	if v >= familyV3 {
		b = appendString(b, f.JKT)
	}
	if v >= familyV4 {
		b = appendTime(b, f.AuthTime)
	}
	if v == familyV5 {
		b = appendStrings(b, f.Resources)
	}
	return b
}

// appendLenBytes appends p as uvarint length and its bytes (an empty p
// reads back as nil).
func appendLenBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeFamily decodes a stored family record, binary or JSON.
func decodeFamily(raw []byte, f *data.Family) error {
	if len(raw) > 0 && raw[0] == '{' {
		*f = data.Family{}
		return json.Unmarshal(raw, f)
	}
	if len(raw) == 0 || raw[0] < familyV1 || raw[0] > familyV5 {
		return errFamilyRecord
	}
	r := reader{b: raw[1:]}
	var out data.Family
	out.ID = r.string()
	out.ClientID = r.string()
	out.UserID = r.varint()
	out.Scopes = r.strings()
	out.Unrestricted = r.bool()
	out.TokenHash = r.optBytes()
	out.Generation = r.uvarint()
	for _, t := range [...]*time.Time{&out.CreatedAt, &out.RotatedAt, &out.ExpiresAt, &out.AbsoluteExp} {
		*t = r.time()
	}
	out.CodeHash = r.lenBytes()
	if raw[0] >= familyV2 {
		out.Tagged = r.bool()
		out.PrevHash = r.lenBytes()
		out.LegacyHash = r.lenBytes()
	}
	if raw[0] == familyV3 {
		if out.JKT = r.string(); out.JKT == "" {
			r.bad = true // V3 is written only with a binding: one encoding
		}
	}
	if raw[0] >= familyV4 {
		out.JKT = r.string()
		if out.AuthTime = r.time(); raw[0] == familyV4 && out.AuthTime.IsZero() {
			r.bad = true // V4 is written only with an auth_time: one encoding
		}
	}
	if raw[0] == familyV5 {
		if out.Resources = r.strings(); len(out.Resources) == 0 {
			r.bad = true // V5 is written only with resources: one encoding
		}
	}
	if r.bad || len(r.b) != 0 {
		return errFamilyRecord
	}
	*f = out
	return nil
}

// reader reads a binary record (familyV1, codeV1); bad is set by any read past the end or
// any malformed varint, and every later read returns zero.
type reader struct {
	b       []byte
	bad     bool
	scratch [binary.MaxVarintLen64]byte
}

// uvarintLen is the length of the shortest uvarint encoding of v.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func (r *reader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n != uvarintLen(v) { // only the shortest encoding
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.bad {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 || n != len(binary.AppendVarint(r.scratch[:0], v)) {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if r.bad || len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// bytes returns a copy of the next n bytes: the record's memory belongs to
// bbolt and is valid only inside the transaction.
func (r *reader) bytes(n uint64) []byte {
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	out := make([]byte, n)
	copy(out, r.b)
	r.b = r.b[n:]
	return out
}

// lenBytes reads what appendLenBytes wrote; length 0 is nil.
func (r *reader) lenBytes() []byte {
	if n := r.uvarint(); n > 0 {
		return r.bytes(n)
	}
	return nil
}

func (r *reader) string() string {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
