package data

import (
	"crypto/rand"
	"errors"
	"strings"
	"time"
)

// ErrTooManyDeviceCodes: the client already has as many outstanding
// (unexpired) device codes as [Store.CreateDeviceCode] allows.
var ErrTooManyDeviceCodes = errors.New("the client has too many outstanding device codes")

// PrefixDeviceCode starts every device_code (RFC 8628 §3.2).
const PrefixDeviceCode = "oauthd_dc_"

// UserCodeAlphabet is RFC 8628 §6.1's 20 consonants: no vowels (no words),
// no easily confused letters. A user code is 8 of them (20^8 ≈ 2^34.6).
const UserCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// UserCodeLen is the number of letters of a user code.
const UserCodeLen = 8

// MaxTypedUserCode bounds what a user may type as a user code: its
// [UserCodeLen] letters with dashes and spaces between them. A longer
// input is no user code ([CanonicalUserCode]); the device page neither
// looks it up nor shows it again, and its field holds no more.
const MaxTypedUserCode = 20

// DeviceState is where a device authorization stands.
type DeviceState string

// Device states: pending → approved | denied.
const (
	DevicePending  DeviceState = "pending"
	DeviceApproved DeviceState = "approved"
	DeviceDenied   DeviceState = "denied"
)

// DeviceCode is a device authorization request (RFC 8628 §3.1), stored
// under its canonical user code ([CanonicalUserCode]). The device_code
// is kept only as its key ([DeviceCodeKey]); when the user approves, the
// consent side stores an [AuthCode] under that same key, which the
// token endpoint redeems with [Store.ExchangeAuthCode] (so a device code
// is spent exactly once on every backend, like an authorization code).
type DeviceCode struct {
	UserCode  string      `json:"user_code"`
	Hash      []byte      `json:"hash"` // DeviceCodeKey of the device_code
	ClientID  string      `json:"client_id"`
	Scopes    []string    `json:"scopes"`
	CreatedAt time.Time   `json:"created_at"`
	ExpiresAt time.Time   `json:"expires_at"`
	Interval  int         `json:"interval"` // seconds between polls (RFC 8628 §3.5 slow_down raises it)
	LastPoll  time.Time   `json:"last_poll,omitzero"`
	State     DeviceState `json:"state"`
	UserID    int64       `json:"user_id,omitempty"` // who approved or denied
}

// NewUserCode returns a random user code: [UserCodeLen] letters of
// [UserCodeAlphabet], canonical (no dash).
func NewUserCode() string {
	var b [UserCodeLen]byte
	for i := range b {
		// 256 % 20 = 16: reject the top 16 values to avoid bias.
		for {
			var r [1]byte
			rand.Read(r[:])
			if r[0] < 240 {
				b[i] = UserCodeAlphabet[r[0]%20]
				break
			}
		}
	}
	return string(b[:])
}

// CanonicalUserCode reads what a user typed as a user code: letters in
// any case, dashes and spaces ignored (RFC 8628 §6.1). It returns "" when
// the result is not [UserCodeLen] letters of [UserCodeAlphabet] or s is
// longer than [MaxTypedUserCode].
func CanonicalUserCode(s string) string {
	if len(s) > MaxTypedUserCode {
		return ""
	}
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch {
		case r == '-' || r == ' ' || r == '\t':
		case r < 128 && strings.IndexByte(UserCodeAlphabet, byte(r)) >= 0:
			b.WriteRune(r)
		default:
			return ""
		}
	}
	if b.Len() != UserCodeLen {
		return ""
	}
	return b.String()
}

// ShowUserCode is a canonical user code as shown: XXXX-XXXX.
func ShowUserCode(c string) string {
	if len(c) != UserCodeLen {
		return c
	}
	return c[:4] + "-" + c[4:]
}

// NewDeviceCode returns a device_code for the user code made at now: the
// prefix, 7 time characters (as [NewAuthCode]), the user code, then 256
// random bits. The user code inside is no secret (the device shows it);
// the random part is. Store it under [DeviceCodeKey].
func NewDeviceCode(userCode string, now time.Time) string {
	var t [timeChars]byte
	putTimeChars(t[:], now)
	return PrefixDeviceCode + string(t[:]) + userCode + randomString(secretBytes)
}

// DeviceCodeUser returns the user code a device_code names, or "".
func DeviceCodeUser(dc string) string {
	t, ok := strings.CutPrefix(dc, PrefixDeviceCode)
	if !ok || len(t) < timeChars+UserCodeLen {
		return ""
	}
	return CanonicalUserCode(t[timeChars : timeChars+UserCodeLen])
}

// DeviceCodeKey is the key of a device_code: its time characters then its
// SHA-256, as [AuthCodeKey], so that the authorization code stored for
// it on approval sorts with the other codes.
func DeviceCodeKey(dc string) []byte { return codeKey(PrefixDeviceCode, dc) }

// ValidateDeviceCode checks a new device code as [Store.CreateDeviceCode]
// stores it: under its canonical user code, with the key of its
// device_code.
func ValidateDeviceCode(d DeviceCode) error {
	if d.UserCode == "" || CanonicalUserCode(d.UserCode) != d.UserCode {
		return ruleErr("user_code", "%q is not a canonical user code (%d letters of %s)", d.UserCode, UserCodeLen, UserCodeAlphabet)
	}
	if len(d.Hash) == 0 {
		return ruleErr("hash", "a device code needs the key of its device_code (DeviceCodeKey)")
	}
	return nil
}

// ValidateDeviceUpdate checks what an update of [Store.UpdateDeviceCode]
// returned against the stored record: the same user code, key and
// client, and a state that moves only from pending.
func ValidateDeviceUpdate(old, next DeviceCode) error {
	if next.UserCode != old.UserCode || string(next.Hash) != string(old.Hash) || next.ClientID != old.ClientID {
		return ruleErr("device_code", "an update may not change the user code, key or client")
	}
	if next.State != old.State && old.State != DevicePending {
		return ruleErr("state", "a device code that is %s stays so", old.State)
	}
	switch next.State {
	case DevicePending, DeviceApproved, DeviceDenied:
	default:
		return ruleErr("state", "%q is not a device state", next.State)
	}
	return nil
}

// DeviceCodeTime returns when a device_code was made, read from its time
// characters, and false when dc does not have a device code's form. The
// time is not secret and not authenticated: it only words the answer to
// a code the store no longer has.
func DeviceCodeTime(dc string) (time.Time, bool) {
	t, ok := strings.CutPrefix(dc, PrefixDeviceCode)
	if !ok || len(t) != timeChars+UserCodeLen+43 || DeviceCodeUser(dc) == "" {
		return time.Time{}, false
	}
	var ms int64
	for i := 0; i < timeChars; i++ {
		v := strings.IndexByte(sortedAlphabet, t[i])
		if v < 0 {
			return time.Time{}, false
		}
		ms = ms<<6 | int64(v)
	}
	return time.UnixMilli(ms), true
}
