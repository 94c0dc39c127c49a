package oauth_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// registered is where each error code oauthd may answer with is defined,
// from the specifications' text (the IANA "OAuth Extensions Error
// Registry" lists them all).
var registered = map[string]string{
	"invalid_request":           "RFC 6749 §4.1.2.1, §5.2; RFC 6750 §3.1",
	"invalid_client":            "RFC 6749 §5.2",
	"invalid_grant":             "RFC 6749 §5.2",
	"unauthorized_client":       "RFC 6749 §4.1.2.1, §5.2",
	"unsupported_grant_type":    "RFC 6749 §5.2",
	"invalid_scope":             "RFC 6749 §4.1.2.1, §5.2",
	"access_denied":             "RFC 6749 §4.1.2.1",
	"unsupported_response_type": "RFC 6749 §4.1.2.1",
	"server_error":              "RFC 6749 §4.1.2.1",
	"temporarily_unavailable":   "RFC 6749 §4.1.2.1",
	"invalid_token":             "RFC 6750 §3.1",
	"insufficient_scope":        "RFC 6750 §3.1",
	"unsupported_token_type":    "RFC 7009 §2.2.1",
	"invalid_dpop_proof":        "RFC 9449 §12.2",
	"authorization_pending":     "RFC 8628 §3.5",
	"slow_down":                 "RFC 8628 §3.5",
	"expired_token":             "RFC 8628 §3.5",
	"use_dpop_nonce":            "RFC 9449 §12.2",
	"request_not_supported":     "OpenID Connect Core 1.0 §3.1.2.6",
	"request_uri_not_supported": "OpenID Connect Core 1.0 §3.1.2.6",
	"login_required":            "OpenID Connect Core 1.0 §3.1.2.6",
	"consent_required":          "OpenID Connect Core 1.0 §3.1.2.6",
	"interaction_required":      "OpenID Connect Core 1.0 §3.1.2.6",
	"invalid_request_uri":       "RFC 9101 §6.3 (OpenID Connect Core 1.0 §3.1.2.6)",
	"invalid_request_object":    "RFC 9101 §6.3 (OpenID Connect Core 1.0 §3.1.2.6)",
	"invalid_target":            "RFC 8707 §2",
}

// unregistered are the codes oauthd answers with that no specification
// defines, kept because clients rely on them (see oauth.go). A new code
// belongs in registered, or here only with a reason in oauth.go.
var unregistered = []string{"too_many_requests", "not_found", "method_not_allowed", "bad_gateway"}

// spelledCode finds an error code written out in an error="…" parameter
// (RFC 6750 §3) or a JSON "error" member.
var spelledCode = regexp.MustCompile(`(?:\berror="|"error": ?")([a-z_]+)"`)

// codes returns the string constants of package oauth, by name.
func codes(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "oauth.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("const %s is not a string literal", name.Name)
				}
				v, _ := strconv.Unquote(lit.Value)
				out[name.Name] = v
			}
		}
	}
	if len(out) < 15 {
		t.Fatalf("found %d codes in oauth.go; want the whole vocabulary", len(out))
	}
	return out
}

// TestCodesAreRegistered: every code of the vocabulary is one a
// specification defines, or one of the few unregistered codes kept on
// purpose; each is spelled by one constant only.
func TestCodesAreRegistered(t *testing.T) {
	seen := map[string]string{}
	for name, code := range codes(t) {
		if other, dup := seen[code]; dup {
			t.Errorf("%s and %s both spell %q: one constant per code", name, other, code)
		}
		seen[code] = name
		if _, ok := registered[code]; !ok && !slices.Contains(unregistered, code) {
			t.Errorf("%s = %q is not a registered OAuth error code (RFC 6749 §4.1.2.1/§5.2, 6750 §3.1, 7009 §2.2.1, 9449 §12.2, ...)", name, code)
		}
	}
	for _, code := range unregistered {
		if _, ok := seen[code]; !ok {
			t.Errorf("unregistered code %q is no longer used: drop it from this test", code)
		}
	}
}

// TestCodesSpelledOnce walks the module's code (not its tests, which
// assert the wire) and fails on any string literal that spells an error
// code, or a WWW-Authenticate error="…" with one, outside this package:
// every layer says them through the constants here (issuer through its
// sentinel errors), so the vocabulary has one place.
func TestCodesSpelledOnce(t *testing.T) {
	vocab := map[string]bool{}
	for _, code := range codes(t) {
		vocab[code] = true
	}
	for code := range registered {
		vocab[code] = true
	}
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	// issuer/admin is the operator API over the admin socket, not OAuth:
	// its error words ("not_found", ...) are its own.
	skip := []string{filepath.Join("data", "oauth"), filepath.Join("issuer", "admin")}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if slices.Contains(skip, rel) || strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for code := range vocab {
				if v == code {
					t.Errorf("%s: the literal %s spells the error code %q: use the oauthd/data/oauth constant (or an issuer sentinel)", fset.Position(lit.Pos()), lit.Value, code)
				}
			}
			// Any code inside a WWW-Authenticate value or a JSON body,
			// known or not: a new code belongs in the vocabulary first.
			if m := spelledCode.FindStringSubmatch(v); m != nil {
				t.Errorf("%s: the literal %s spells the error code %q: use the oauthd/data/oauth constant (or an issuer sentinel)", fset.Position(lit.Pos()), lit.Value, m[1])
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files; want the whole module", files)
	}
}
