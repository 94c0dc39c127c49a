package data_test

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"oauthd/data"
)

// FuzzValidateRedirectURI checks that ValidateRedirectURI never panics and
// that every URI it accepts is one a client may be redirected to: it parses,
// is absolute with a host, uses https (or http on a loopback host, checked
// here independently of data.IsLoopback), and carries no fragment, no user
// info, no '#', and no space, control or (invisible) format character. A
// refusal must wrap data.ErrInvalid.
//
// Seeds live in testdata/fuzz/FuzzValidateRedirectURI; run with
//
//	go test -run '^$' -fuzz '^FuzzValidateRedirectURI$' -fuzztime 60s ./data
func FuzzValidateRedirectURI(f *testing.F) {
	for _, s := range redirectURISeeds {
		f.Add(s)
	}
	f.Fuzz(fuzzRedirectURI)
}

// redirectURISeeds are good and evil redirect URIs; the committed corpus
// holds the same inputs.
var redirectURISeeds = []string{
	"https://app.example/cb",
	"http://localhost:8080/cb",
	"http://127.0.0.1/cb",
	"http://[::1]:8080/cb",
	"javascript:alert(1)",
	"data:text/html,<script>alert(1)</script>",
	"//evil.example/cb",
	"http://evil.example/cb",
	"https://a#b",
	"https://user@host/cb",
	"http://127.0.0.1.evil.com/cb",
	"https://host/%0d%0aSet-Cookie:x=1",
	"https://bücher.example/cb",
	"https://host/cb\u0085\u2028",
	"https://host\u00a0.example/cb",
	"https://app.example/\u202ebc.lieve",
	"https://app\u200b.example/cb",
	"http://localhost.evil.example/cb",
	"http://LOCALHOST:1/cb",
	"http://[::ffff:127.0.0.1]/cb",
	"http://[::1%25eth0]/cb",
	"http://0x7f.1/cb",
	"HTTPS://App.Example/cb",
	"https:/app.example/cb",
	"https:app.example",
	"https://host:99999/cb",
	"https://host/cb?x=" + strings.Repeat("a", 2100),
}

func fuzzRedirectURI(t *testing.T, raw string) {
	err := data.ValidateRedirectURI(raw)
	if err != nil {
		if !errors.Is(err, data.ErrInvalid) {
			t.Fatalf("ValidateRedirectURI(%q) = %v, does not wrap ErrInvalid", raw, err)
		}
		return
	}
	u, perr := url.Parse(raw)
	if perr != nil {
		t.Fatalf("accepted %q, but url.Parse fails: %v", raw, perr)
	}
	if !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		t.Fatalf("accepted %q: not absolute with a host (scheme %q host %q opaque %q)", raw, u.Scheme, u.Host, u.Opaque)
	}
	if u.Fragment != "" || u.RawFragment != "" || strings.ContainsRune(raw, '#') {
		t.Fatalf("accepted %q with a fragment", raw)
	}
	if u.User != nil || strings.ContainsRune(u.Host, '@') {
		t.Fatalf("accepted %q with user info", raw)
	}
	for _, r := range raw {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == 0x7f {
			t.Fatalf("accepted %q containing %U", raw, r)
		}
	}
	if !utf8.ValidString(raw) || len(raw) > 2000 {
		t.Fatalf("accepted %d bytes that are not UTF-8 or too long", len(raw))
	}
	switch u.Scheme {
	case "https":
	case "http":
		h := u.Hostname()
		if !data.IsLoopback(h) || !loopback(h) {
			t.Fatalf("accepted http URI %q on non-loopback host %q", raw, h)
		}
	default:
		t.Fatalf("accepted %q with scheme %q", raw, u.Scheme)
	}
}

// loopback is an independent reading of "loopback host": localhost (any
// case) or a loopback IP literal without a zone.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Zone() == "" && a.Unmap().IsLoopback()
}
