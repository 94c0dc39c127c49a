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

// Email returns the canonical form of an email address, or an error
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
// It does not check the address's syntax (net/mail does that at the
// entries), only what makes two spellings one.
func Email(s string) (string, error) {
	if err := Check(s); err != nil {
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

// Username returns the canonical form of a username, or an error wrapping
// [ErrInvalid]: the username is enforced with RFC 8265's
// UsernameCaseMapped profile (PRECIS, RFC 8264: fullwidth letters map to
// their ASCII form, case is mapped, NFC; letters, digits and printable
// ASCII only: no space, no compatibility character such as ſ, no control
// or format character; the Kelvin sign K is K, its canonical equivalent),
// then case-folded in full, so that, as in [Email], ß is ss.
//
// A username of digits only (after width folding: "１２" is "12") is
// refused: every command that names a user (USER: an ID, an email or a
// username) reads digits as a user ID, so the username "1" would name
// user 1, someone else.
func Username(s string) (string, error) {
	if err := Check(s); err != nil {
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

// Key is the canonical form of a login, an email or a username: the key of
// the unique indexes and the one way two identifiers are compared (equal
// keys: the same identifier). An identifier with an @ is an email
// ([Email]), any other a username ([Username]; usernames never hold an
// @). Key never fails: an identifier those refuse (one stored before they
// existed) gets the NFKC_Casefold of the whole string, which equals the
// strict form wherever both exist, so a look-alike of it still collides.
// Key("") is "".
func Key(s string) string {
	var (
		k   string
		err error
	)
	if strings.Contains(s, "@") {
		k, err = Email(s)
	} else {
		k, err = Username(s)
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

// Check refuses what no identifier may hold, with an error wrapping
// [ErrInvalid]: invalid UTF-8, control characters (Unicode Cc: C0, DEL,
// C1), format characters (Cf: the bidi overrides, embeddings, isolates
// and marks, zero-width spaces and joiners, soft hyphen, BOM), and line
// or paragraph separators. Each can make an identifier show as another
// one (or as nothing) on a page or a terminal. Every entry of a new
// identifier (users add, users import, the login handover, the demo)
// calls it through [Email] or [Username].
func Check(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalid, s)
	}
	for _, r := range s {
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			return fmt.Errorf("%w: %q holds the invisible or control character %U", ErrInvalid, s, r)
		}
	}
	return nil
}
