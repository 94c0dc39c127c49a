package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"oauthd/data"
)

// Authorization-code records are stored in a compact binary form, like
// families (families_format.go): a code exchange decodes and re-encodes one inside
// the group commit, where JSON would be a third of the exchange's serial
// work.
// The first byte is the format version (codeV1); a record that starts with
// '{' is the JSON form written by releases before the binary form, which
// still reads.
// Every other first byte is refused.
//
// codeV1 layout, in field order of data.AuthCode:
//
//	Hash               uvarint length+1 (0 = nil), bytes
//	ClientID           uvarint length, bytes
//	UserID             varint
//	RedirectURI        uvarint length, bytes
//	Scopes             uvarint count+1 (0 = nil), then each as a string
//	Unrestricted       one byte, 0 or 1
//	CodeChallenge      uvarint length, bytes
//	CreatedAt, ExpiresAt
//	                   varint Unix seconds, uvarint nanoseconds (read as UTC)
//	Used               one byte, 0 or 1
//	FamilyID           uvarint length, bytes
//
// codeV2 (written only for a code with an OpenID Connect nonce or
// auth_time, so that other codes stay readable by the releases before it)
// appends:
//
//	Nonce              uvarint length, bytes
//	AuthTime           varint Unix seconds, uvarint nanoseconds
//
// codeV3 (written only for a code with RFC 8707 resources) appends, after
// V2's fields (present, possibly empty):
//
//	Resources          uvarint count+1, then each as a string (never nil)
//
// As for families, a code has exactly one encoding: a record with bytes
// left over, cut short, or with a varint longer than its shortest encoding
// is refused.
const (
	codeV1 = 1
	codeV2 = 2
	codeV3 = 3
)

var errCodeRecord = errors.New("malformed authorization code record")

// appendAuthCode appends the codeV1 form of c to b.
func appendAuthCode(b []byte, c *data.AuthCode) []byte {
	v := byte(codeV1)
	if c.Nonce != "" || !c.AuthTime.IsZero() {
		v = codeV2
	}
	if len(c.Resources) > 0 {
		v = codeV3
	}
	b = append(b, v)
	b = appendOptBytes(b, c.Hash)
	b = appendString(b, c.ClientID)
	b = binary.AppendVarint(b, c.UserID)
	b = appendString(b, c.RedirectURI)
	b = appendStrings(b, c.Scopes)
	b = appendBool(b, c.Unrestricted)
	b = appendString(b, c.CodeChallenge)
	b = appendTime(b, c.CreatedAt)
	b = appendTime(b, c.ExpiresAt)
	b = appendBool(b, c.Used)
	b = appendString(b, c.FamilyID)
	if v >= codeV2 {
		b = appendString(b, c.Nonce)
		b = appendTime(b, c.AuthTime)
	}
	if v == codeV3 {
		b = appendStrings(b, c.Resources)
	}
	return b
}

// decodeAuthCode decodes a stored code record, binary or JSON.
func decodeAuthCode(raw []byte, c *data.AuthCode) error {
	if len(raw) > 0 && raw[0] == '{' {
		*c = data.AuthCode{}
		return json.Unmarshal(raw, c)
	}
	if len(raw) == 0 || raw[0] < codeV1 || raw[0] > codeV3 {
		return errCodeRecord
	}
	r := reader{b: raw[1:]}
	var out data.AuthCode
	out.Hash = r.optBytes()
	out.ClientID = r.string()
	out.UserID = r.varint()
	out.RedirectURI = r.string()
	out.Scopes = r.strings()
	out.Unrestricted = r.bool()
	out.CodeChallenge = r.string()
	out.CreatedAt = r.time()
	out.ExpiresAt = r.time()
	out.Used = r.bool()
	out.FamilyID = r.string()
	if raw[0] >= codeV2 {
		out.Nonce = r.string()
		if out.AuthTime = r.time(); raw[0] == codeV2 && out.Nonce == "" && out.AuthTime.IsZero() {
			r.bad = true // V2 is written only with one of them: one encoding
		}
	}
	if raw[0] == codeV3 {
		if out.Resources = r.strings(); len(out.Resources) == 0 {
			r.bad = true // V3 is written only with resources: one encoding
		}
	}
	if r.bad || len(r.b) != 0 {
		return errCodeRecord
	}
	*c = out
	return nil
}

// The field encodings both binary records share.

// appendOptBytes appends p as uvarint length+1 and its bytes, or 0 for nil.
func appendOptBytes(b, p []byte) []byte {
	if p == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(p))+1)
	return append(b, p...)
}

// appendStrings appends ss as uvarint count+1 and each string, or 0 for nil.
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ss))+1)
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendTime appends t as varint Unix seconds and uvarint nanoseconds.
func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func (r *reader) optBytes() []byte {
	if n := r.uvarint(); n > 0 {
		return r.bytes(n - 1)
	}
	return nil
}

func (r *reader) strings() []string {
	n := r.uvarint()
	if n == 0 {
		return nil
	}
	n--
	if n > uint64(len(r.b)) { // each string takes at least one byte
		r.bad = true
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

func (r *reader) bool() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.bad = true
	return false
}

func (r *reader) time() time.Time {
	sec, nsec := r.varint(), r.uvarint()
	if nsec >= 1e9 {
		r.bad = true
	}
	return time.Unix(sec, int64(nsec)).UTC()
}
