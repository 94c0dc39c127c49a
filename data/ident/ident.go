package ident

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/cases"
	"golang.org/x/text/secure/precis"
	"golang.org/x/text/unicode/norm"
)

// ErrInvalid is wrapped by every error of [Email], [Username] and [Check]:
// the identifier cannot be accepted as a new one. The error's text says
// why, for the person who typed it.
var ErrInvalid = errors.New("invalid identifier")

// Email returns the canonical form of a new email address, or an error
// wrapping [ErrInvalid]:
//
//   - the local part (before the last @) is NFKC-normalised, case-folded
//     with full Unicode case folding and NFKC-normalised again (Unicode's
//     NFKC_Casefold, without removing default ignorables: [Check] refuses
//     them). So "Sam", "SAM", "ſam" (U+017F long s), "ｓａｍ" (fullwidth)
//     are one local part, and "ß" is "ss".
//   - the domain is mapped with IDNA's lookup profile (UTS #46, RFC 5891)
//     to its ASCII form: "Bücher.Example" is "xn--bcher-kva.example",
//     fullwidth letters fold to ASCII; a domain IDNA refuses is refused.
//     One trailing dot is dropped.
//
// The address must pass [Check] (nothing invisible) and hold no white
// space of any kind (U+00A0, U+3000…). It does not check the address's
// syntax (net/mail does that at the entries), only what makes two
// spellings one and what makes an address show as another.
func Email(s string) (string, error) {
	if err := Check(s); err != nil {
		return "", err
	}
	for _, r := range s {
		if unicode.Is(unicode.White_Space, r) {
			return "", fmt.Errorf("%w: %q holds the space %U; an email address has none", ErrInvalid, s, r)
		}
	}
	return emailKey(s)
}

// emailKey is the canonical form of an email that passes legacyCheck:
// [Key]'s form, stable for every email an earlier release accepted.
func emailKey(s string) (string, error) {
	if err := legacyCheck(s); err != nil {
		return "", err
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return "", fmt.Errorf("%w: %q is not an email address (local@domain)", ErrInvalid, s)
	}
	local := fold(s[:at])
	domain, err := idna.Lookup.ToASCII(strings.TrimSuffix(s[at+1:], "."))
	if err != nil || domain == "" {
		return "", fmt.Errorf("%w: the domain of %q is not a valid domain name", ErrInvalid, s)
	}
	return local + "@" + domain, nil
}

// Username returns the canonical form of a new username, or an error
// wrapping [ErrInvalid]: the username must pass [Check], and is enforced
// with RFC 8265's UsernameCaseMapped profile (PRECIS, RFC 8264: fullwidth
// letters map to their ASCII form, case is mapped, NFC; letters, digits
// and printable ASCII only: no space, no compatibility character such as
// ſ; the Kelvin sign K is K, its canonical equivalent), then case-folded
// in full, so that, as in [Email], ß is ss.
//
// A username that reads as a user ID ([ReadsAsID] of its canonical form:
// "12", "+1", "-0", "007", fullwidth "１２") is refused: every command
// that names a user (USER: an ID, an email or a username) reads it as an
// ID, so the username "+1" would name user 1, someone else. So is one
// that starts with "-": the command line reads it as an option ("-h"
// prints the help and succeeds, disabling no one), and one whose
// canonical form holds an @ ("ann＠plat.test" with a fullwidth @ is
// "ann@plat.test"): a login with an @ is read as an email.
func Username(s string) (string, error) {
	if err := Check(s); err != nil {
		return "", err
	}
	k, err := usernameKey(s)
	if err != nil {
		return "", err
	}
	if ReadsAsID(k) {
		return "", fmt.Errorf("%w: %q reads as a user ID wherever a user is named (an optional sign and digits); add a letter", ErrInvalid, s)
	}
	if strings.Contains(k, "@") {
		return "", fmt.Errorf("%w: %q reads as an email address (a fullwidth @ is @); a username holds no @", ErrInvalid, s)
	}
	if strings.HasPrefix(k, "-") {
		return "", fmt.Errorf("%w: %q starts with -, which the command line reads as an option (-h is its help); start it with another character", ErrInvalid, s)
	}
	return k, nil
}

// usernameKey is the canonical form of a username that passes
// legacyCheck and PRECIS: [Key]'s form, stable for every username an
// earlier release accepted (which refused digits only, as here).
func usernameKey(s string) (string, error) {
	if err := legacyCheck(s); err != nil {
		return "", err
	}
	k, err := precis.UsernameCaseMapped.String(s)
	if err != nil || k == "" {
		return "", fmt.Errorf("%w: %q is not a valid username (letters, digits and printable ASCII symbols; no spaces)", ErrInvalid, s)
	}
	if strings.Trim(k, "0123456789") == "" {
		return "", fmt.Errorf("%w: %q is only digits, which names a user ID; add a letter or a symbol", ErrInvalid, s)
	}
	return norm.NFC.String(cases.Fold().String(k)), nil
}

// ReadsAsID reports whether a USER argument s is read as a user ID: what
// strconv.ParseInt(s, 10, 64) takes, an optional + or - and ASCII digits,
// leading zeros included ("+1", "-0", "007"), whatever the number's size
// (a number too large for an ID still reads as one, and finds no user).
// It is the one test of that reading: the admin API's USER resolution
// uses it, and [Username] refuses every username it is true of.
func ReadsAsID(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// Key is the canonical form of a login, an email or a username: the key of
// the unique indexes and the one way two identifiers are compared (equal
// keys: the same identifier). An identifier with an @ is an email, any
// other a username (usernames never hold an @). Key never fails and never
// changes for a stored identifier: it is the form of [Email] or
// [Username] under the rules of the release that first had one canonical
// form (a later rule that refuses more, such as [Check]'s default
// ignorables, refuses new identifiers but changes no key). An identifier
// those refuse gets the NFKC_Casefold of the whole string, which equals
// the strict form wherever both exist, so a look-alike of it still
// collides. Key("") is "".
func Key(s string) string {
	var (
		k   string
		err error
	)
	if strings.Contains(s, "@") {
		k, err = emailKey(s)
	} else {
		k, err = usernameKey(s)
	}
	if err != nil {
		return fold(s)
	}
	return k
}

// Shown is an email as a page shows it to someone deciding whether to
// trust its holder (the developer of an app on the consent and Connected
// apps pages): its domain in the ASCII form DNS knows (IDNA), as browsers
// show a domain that could pass for another. "ann@exаmple.com" with a
// Cyrillic а shows as "ann@xn--exmple-4nf.com", never as example.com. The
// local part is kept (the domain's owner hands out its mailboxes); text
// that is not an email comes back as it is.
func Shown(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at <= 0 || at == len(email)-1 {
		return email
	}
	domain := email[at+1:]
	if isASCII(domain) {
		return email
	}
	a, err := idna.Lookup.ToASCII(strings.TrimSuffix(domain, "."))
	if err != nil || a == "" {
		return email
	}
	return email[:at+1] + a
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Same reports whether a and b are one identifier ([Key]).
func Same(a, b string) bool { return a != "" && b != "" && Key(a) == Key(b) }

// fold is NFKC_Casefold (without removing default ignorables).
func fold(s string) string {
	return norm.NFKC.String(cases.Fold().String(norm.NFKC.String(s)))
}
