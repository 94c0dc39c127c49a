package e2e

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/scrypt"
	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// TestUsersDisable: `users disable` (through the running server's admin
// socket) ends the user's sessions and grants at once: access tokens are
// refused at /v2/me and inactive at introspection, the refresh token is
// dead, the browser's session is gone and the user cannot log in;
// `users enable` restores login, not the grants.
func TestUsersDisable(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	verifier := oauth2.GenerateVerifier()
	b := consenttest.New()
	code := e.codeFlow(t, ctx, b, conf, oauth2.S256ChallengeOption(verifier))
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	e.wantMe(t, tok.AccessToken)
	// A second code, issued but not yet exchanged when the user is disabled.
	verifier2 := oauth2.GenerateVerifier()
	code2 := e.codeFlow(t, ctx, b, conf, oauth2.S256ChallengeOption(verifier2))

	var v struct {
		ID         int64  `json:"id"`
		State      string `json:"state"`
		DisabledAt string `json:"disabled_at"`
	}
	oneJSON(t, e.cli(t, "users", "disable", e2eEmail, "--json"), &v)
	if v.ID != e.userID || v.State != "disabled" || v.DisabledAt == "" {
		t.Fatalf("users disable = %+v", v)
	}
	if status, body := e.me(t, tok.AccessToken); status != http.StatusUnauthorized {
		t.Fatalf("/v2/me after disable = %d %s; want 401", status, body)
	}
	if got := e.introspect(t, id, secret, tok.AccessToken); got["active"] != false {
		t.Fatalf("introspect(access) after disable = %v; want inactive", got)
	}
	if got := e.introspect(t, id, secret, tok.RefreshToken); got["active"] != false {
		t.Fatalf("introspect(refresh) after disable = %v; want inactive", got)
	}
	if r := e.refresh(t, id, secret, tok.RefreshToken); r.Status != http.StatusBadRequest || r.str("error") != "invalid_grant" {
		t.Fatalf("refresh after disable = %d %v; want invalid_grant", r.Status, r.Body)
	}
	if _, err := conf.Exchange(ctx, code2, oauth2.VerifierOption(verifier2)); oauthErrorCode(err) != "invalid_grant" {
		t.Fatalf("exchanging a code issued before disable = %v; want invalid_grant", err)
	}
	// The browser's session is gone: the consent page asks for a login,
	// and the login is refused.
	_, err = b.Authorize(ctx, conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)), e2eEmail, e2ePassword, true)
	var pe *consenttest.PageError
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusForbidden || !strings.Contains(pe.Error(), "disabled") {
		t.Fatalf("login of a disabled user = %v; want a 403 page saying disabled", err)
	}
	var list []struct {
		Email string `json:"email"`
		State string `json:"state"`
	}
	oneJSON(t, e.cli(t, "users", "list", "--json"), &list)
	if len(list) != 1 || list[0].State != "disabled" {
		t.Fatalf("users list = %+v; want the user disabled", list)
	}
	if out := e.cli(t, "users", "list"); !strings.Contains(out, "disabled") {
		t.Fatalf("users list does not show the state:\n%s", out)
	}

	oneJSON(t, e.cli(t, "users", "enable", fmt.Sprint(e.userID), "--json"), &v)
	if v.State != "active" {
		t.Fatalf("users enable = %+v", v)
	}
	// Login works again; what was revoked stays revoked.
	if r := e.refresh(t, id, secret, tok.RefreshToken); r.Status != http.StatusBadRequest {
		t.Fatalf("refresh after enable = %d %v; want it still revoked", r.Status, r.Body)
	}
	if status, _ := e.me(t, tok.AccessToken); status != http.StatusUnauthorized {
		t.Fatalf("/v2/me with the old token after enable = %d; want 401", status)
	}
	code3 := e.codeFlow(t, ctx, consenttest.New(), conf, oauth2.S256ChallengeOption(verifier))
	tok3, err := conf.Exchange(ctx, code3, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange after enable: %v", err)
	}
	e.wantMe(t, tok3.AccessToken)

	if _, errOut, err := oauthd(t, e.db, "", "users", "disable", "nobody@example.com"); err == nil || !strings.Contains(errOut, "users list") {
		t.Fatalf("disable of an unknown user: err %v, stderr %q; want an error pointing to users list", err, errOut)
	}
}

// importHashes returns, per format, a hash of pw made by that format's
// standard library, as another system stores it.
func importHashes(t *testing.T, pw string) map[string]string {
	t.Helper()
	bc, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawStdEncoding
	salt := make([]byte, 16)
	rand.Read(salt)
	sc, err := scrypt.Key([]byte(pw), salt, 1<<14, 8, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := pbkdf2.Key(sha256.New, pw, salt, 29000, 32)
	if err != nil {
		t.Fatal(err)
	}
	dj, err := pbkdf2.Key(sha256.New, pw, []byte("DjangoSalt1234"), 10000, 32)
	if err != nil {
		t.Fatal(err)
	}
	ab := func(b []byte) string { return strings.ReplaceAll(b64.EncodeToString(b), "+", ".") }
	return map[string]string{
		"bcrypt":  strings.Replace(string(bc), "$2a$", "$2y$", 1), // as PHP writes it
		"scrypt":  fmt.Sprintf("$scrypt$ln=14,r=8,p=1$%s$%s", b64.EncodeToString(salt), b64.EncodeToString(sc)),
		"passlib": fmt.Sprintf("$pbkdf2-sha256$29000$%s$%s", ab(salt), ab(pb)),
		"django":  "pbkdf2_sha256$10000$DjangoSalt1234$" + base64.StdEncoding.EncodeToString(dj),
	}
}

// TestUsersImport: users come over with their passwords. Each imported
// user logs in with the password they had, through the real server; the
// hash is upgraded to argon2id at that login (the log says so, and the
// user still logs in afterwards). A file with bad rows is refused with
// every bad row named by line, and imports nothing.
func TestUsersImport(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	dir := t.TempDir()
	hashes := importHashes(t, e2ePassword)
	var lines []string
	formats := []string{"bcrypt", "scrypt", "passlib", "django"}
	for _, f := range formats {
		b, _ := json.Marshal(map[string]string{"email": f + "@import.example", "name": "User " + f, "password_hash": hashes[f]})
		lines = append(lines, string(b))
	}
	file := filepath.Join(dir, "users.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// First a file with bad rows: nothing is imported.
	bad := filepath.Join(dir, "bad.csv")
	csv := "email,name,password_hash\n" +
		"ok@import.example,Ok,\"" + hashes["bcrypt"] + "\"\n" +
		"not-an-email,Bad,\"" + hashes["bcrypt"] + "\"\n" +
		"md5@import.example,Md5,$1$abc$def\n" +
		"dos@import.example,Dos,$scrypt$ln=20$r=8\n" +
		ann() + ",Dup,\"" + hashes["bcrypt"] + "\"\n"
	if err := os.WriteFile(bad, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := oauthd(t, e.db, "", "users", "import", bad)
	if err == nil {
		t.Fatal("import of a file with bad rows succeeded")
	}
	for _, want := range []string{"line 3:", "line 4:", "line 5:", "line 6:", "nothing was imported"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("import error does not name %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "line 2:") {
		t.Errorf("import error names the good row 2:\n%s", errOut)
	}
	var list []json.RawMessage
	oneJSON(t, e.cli(t, "users", "list", "--json"), &list)
	if len(list) != 1 {
		t.Fatalf("after a refused import, %d users; want 1 (nothing half-imported)", len(list))
	}

	var got []struct {
		ID    int64  `json:"id"`
		Email string `json:"email"`
		State string `json:"state"`
	}
	oneJSON(t, e.cli(t, "users", "import", file, "--json"), &got)
	if len(got) != len(formats) {
		t.Fatalf("import = %+v", got)
	}
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	for _, f := range formats {
		t.Run(f, func(t *testing.T) {
			login := f + "@import.example"
			for i := range 2 { // the first login upgrades the hash; the second uses the upgraded one
				verifier := oauth2.GenerateVerifier()
				loc, err := consenttest.New().Authorize(ctx, conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)), login, e2ePassword, true)
				if err != nil || loc.Query().Get("code") == "" {
					t.Fatalf("login %d of the user imported with a %s hash: %v, %v", i+1, f, loc, err)
				}
				tok, err := conf.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
				if err != nil {
					t.Fatal(err)
				}
				if status, body := e.me(t, tok.AccessToken); status != http.StatusOK || !strings.Contains(body, login) {
					t.Fatalf("/v2/me = %d %s", status, body)
				}
			}
			_, err := consenttest.New().Authorize(ctx, conf.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), login, "wrong password!", true)
			if err == nil {
				t.Fatal("a wrong password logged in")
			}
		})
	}
}

func ann() string { return e2eEmail }
