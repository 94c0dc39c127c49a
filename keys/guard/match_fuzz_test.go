package guard_test

import (
	"net/url"
	"strings"
	"testing"

	"oauthd/keys/guard"
)

// FuzzMatch checks the route matcher and CanonicalPath against an
// independent reference over DefaultTable's rows:
//
//   - neither panics on any method or request target;
//   - Match returns exactly the route the reference picks: among the rows
//     for the method (or GET for a HEAD request with no HEAD row) whose
//     pattern matches the path segment by segment ({param} matches one
//     non-empty segment other than "." and "..", a static segment matches
//     itself), the most static one (static beats a parameter at the first
//     segment where two candidates differ);
//   - a path CanonicalPath accepts has no "//", no "." or ".." segment, no
//     backslash or control character, and the same segments as the raw
//     request path once each raw segment is unescaped (so no encoded slash
//     changed its structure), and Match agrees on it and on the request's
//     decoded path;
//   - differential: substituting a safe value derived from the input into
//     every parameter of a row's pattern yields a path that Match maps to
//     that row or to a more static one.
//
// Seeds live in testdata/fuzz/FuzzMatch; run with
//
//	go test -run '^$' -fuzz '^FuzzMatch$' -fuzztime 60s ./keys/guard
func FuzzMatch(f *testing.F) {
	tbl := guard.DefaultTable()
	routes := tbl.Routes()
	for _, s := range matchSeeds {
		f.Add(s.method, s.target, s.row, s.value)
	}
	f.Fuzz(func(t *testing.T, method, target string, row uint16, value string) {
		fuzzMatch(t, tbl, routes, method, target, row, value)
	})
}

// matchSeeds are the seed inputs; the committed corpus holds the same.
var matchSeeds = []struct {
	method, target string
	row            uint16
	value          string
}{
	{"GET", "/v2/me", 0, "1"},
	{"HEAD", "/v2/me/", 1, "me"},
	{"GET", "/v2/organizations/1/teams/me", 2, "default"},
	{"PATCH", "/v2/schedules/default", 3, "x"},
	{"DELETE", "/v2/organizations/1/teams/2/event-types/3/private-links/4", 4, "42"},
	{"GET", "/v2/me/../admin", 5, ".."},
	{"GET", "/v2/organizations/1%2f..%2fadmin", 6, "%2f"},
	{"GET", "/v2//me", 7, ""},
	{"get", "/v2/me?x=/../", 8, "a/b"},
	{"GET", "/v2/me%5c..%5c", 9, "\\"},
	{"GET", "/v2/%2e%2e/me", 10, "."},
	{"HEAD", "/v2/schedules/default/", 11, "default"},
	{"GET", "/v2/me%2F", 12, "me"},
	{"GET", "/v2/%252f/me", 13, "%252f"},
	{"POST", "/v2/event-types/1/webhooks/2?a=b", 14, "2"},
	{"OPTIONS", "*", 15, ""},
	{"GET", "/v2/me\\..", 16, "x"},
	{"GET", "/v2/./me", 17, "./"},
	{"GET", "/v2/me/%00", 18, "\x00"},
	{"GET", "http://host/v2/me", 19, "me"},
}

func fuzzMatch(t *testing.T, tbl *guard.Table, routes []guard.Route, method, target string, row uint16, value string) {
	// 1. Match on the raw string.
	checkMatch(t, tbl, routes, method, target)

	// 2. CanonicalPath on the target parsed as a request URI in origin
	// form, as net/http does for r.URL.
	if u, err := url.ParseRequestURI(target); err == nil && strings.HasPrefix(target, "/") {
		checkCanonical(t, tbl, method, target, u)
	}

	// 3. Differential: a path built from a row.
	if len(routes) == 0 {
		return
	}
	r := routes[int(row)%len(routes)]
	v := safeValue(value)
	segs := strings.Split(r.Path[1:], "/")
	for i, s := range segs {
		if isParam(s) {
			segs[i] = v
		}
	}
	p := "/" + strings.Join(segs, "/")
	got, ok := tbl.Match(r.Method, p)
	if !ok {
		t.Fatalf("Match(%s, %q) built from %s %s: no route", r.Method, p, r.Method, r.Path)
	}
	if got.Method != r.Method {
		t.Fatalf("Match(%s, %q) = %s %s: wrong method", r.Method, p, got.Method, got.Path)
	}
	if got.Path != r.Path && !moreStatic(got.Path, r.Path) {
		t.Fatalf("Match(%s, %q) = %s, which is not %s nor more static", r.Method, p, got.Path, r.Path)
	}
}

// checkMatch compares Match with the reference on one method and path.
func checkMatch(t *testing.T, tbl *guard.Table, routes []guard.Route, method, path string) {
	t.Helper()
	got, ok := tbl.Match(method, path)
	want, wok := refMatch(routes, method, path)
	if ok != wok || got.Method != want.Method || got.Path != want.Path {
		t.Fatalf("Match(%q, %q) = %s %s (%v); reference: %s %s (%v)",
			method, path, got.Method, got.Path, ok, want.Method, want.Path, wok)
	}
	if !ok {
		return
	}
	// Spelled out, independent of refMatch's candidate order.
	if got.Method != method && (method != "HEAD" || got.Method != "GET") {
		t.Fatalf("Match(%q, %q) returned a %s route", method, path, got.Method)
	}
	segs, valid := pathSegments(path)
	if !valid || !patternMatches(got.Path, segs) {
		t.Fatalf("Match(%q, %q) returned %s, whose pattern does not match the path", method, path, got.Path)
	}
}

func checkCanonical(t *testing.T, tbl *guard.Table, method, target string, u *url.URL) {
	t.Helper()
	cp, err := guard.CanonicalPath(u)
	if err != nil {
		return
	}
	if cp == "" || cp[0] != '/' || strings.Contains(cp, "//") || strings.ContainsRune(cp, '\\') {
		t.Fatalf("CanonicalPath(%q) = %q", target, cp)
	}
	for i := 0; i < len(cp); i++ {
		if cp[i] < 0x20 || cp[i] == 0x7f {
			t.Fatalf("CanonicalPath(%q) = %q has a control character", target, cp)
		}
	}
	if len(cp) > 1 && strings.HasSuffix(cp, "/") {
		t.Fatalf("CanonicalPath(%q) = %q keeps a trailing slash", target, cp)
	}
	cpSegs := strings.Split(cp[1:], "/")
	if cp == "/" {
		cpSegs = nil
	}
	for _, s := range cpSegs {
		if s == "" || s == "." || s == ".." {
			t.Fatalf("CanonicalPath(%q) = %q has segment %q", target, cp, s)
		}
	}
	// The raw request path, split before unescaping, has the same segments:
	// no encoded '/' (or '\') changed the structure the application sees.
	raw, _, _ := strings.Cut(target, "?")
	raw = strings.TrimPrefix(raw, "/")
	if len(raw) > 0 && raw[len(raw)-1] == '/' {
		raw = raw[:len(raw)-1]
	}
	var rawSegs []string
	if raw != "" {
		rawSegs = strings.Split(raw, "/")
	}
	if len(rawSegs) != len(cpSegs) {
		t.Fatalf("CanonicalPath(%q) = %q: %d segments, the raw path has %d", target, cp, len(cpSegs), len(rawSegs))
	}
	for i, rs := range rawSegs {
		dec, err := url.PathUnescape(rs)
		if err != nil || dec != cpSegs[i] {
			t.Fatalf("CanonicalPath(%q) = %q: segment %d is %q, raw %q decodes to %q (%v)", target, cp, i, cpSegs[i], rs, dec, err)
		}
	}
	// Match agrees on the canonical and the decoded request path.
	a, aok := tbl.Match(method, cp)
	b, bok := tbl.Match(method, u.Path)
	if aok != bok || a.Method != b.Method || a.Path != b.Path {
		t.Fatalf("Match(%q, canonical %q) = %s %s (%v), Match on request path %q = %s %s (%v)",
			method, cp, a.Method, a.Path, aok, u.Path, b.Method, b.Path, bok)
	}
}

// pathSegments splits a path the way the matcher documents: a leading
// '/', at most one trailing '/' ignored, and no empty, "." or ".."
// segment.
func pathSegments(path string) ([]string, bool) {
	if path == "" || path[0] != '/' {
		return nil, false
	}
	rest := strings.TrimSuffix(path[1:], "/")
	if rest == "" {
		return nil, false
	}
	segs := strings.Split(rest, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return nil, false
		}
	}
	return segs, true
}

func patternMatches(pattern string, segs []string) bool {
	ps := strings.Split(pattern[1:], "/")
	if len(ps) != len(segs) {
		return false
	}
	for i, p := range ps {
		if isParam(p) {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if p != segs[i] {
			return false
		}
	}
	return true
}

// refMatch is the reference matcher: a linear scan for the most static
// matching row.
func refMatch(routes []guard.Route, method, path string) (guard.Route, bool) {
	segs, ok := pathSegments(path)
	if !ok {
		return guard.Route{}, false
	}
	pick := func(m string) (guard.Route, bool) {
		var best guard.Route
		found := false
		for _, r := range routes {
			if r.Method != m || !patternMatches(r.Path, segs) {
				continue
			}
			if !found || moreStatic(r.Path, best.Path) {
				best, found = r, true
			}
		}
		return best, found
	}
	if r, ok := pick(method); ok {
		return r, true
	}
	if method == "HEAD" {
		return pick("GET")
	}
	return guard.Route{}, false
}

// moreStatic reports whether pattern a is more static than b: at the first
// segment where they differ (parameter names ignored), a has a static
// segment and b a parameter. Both must match the same path.
func moreStatic(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		ap, bp := isParam(as[i]), isParam(bs[i])
		if ap && bp || as[i] == bs[i] {
			continue
		}
		return !ap && bp
	}
	return false
}

func isParam(seg string) bool {
	return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

// safeValue maps any string to a non-empty parameter value of unreserved
// characters that is not a dot segment.
func safeValue(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '~', c == '.':
			b.WriteByte(c)
		}
		if b.Len() >= 64 {
			break
		}
	}
	v := b.String()
	if v == "" || v == "." || v == ".." {
		v = "x" + v
	}
	return v
}
