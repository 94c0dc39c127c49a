package consent

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"

	"oauthd/data"
	"oauthd/data/password"
)

// TestLoginUpgradesImportedHash: a user imported with a bcrypt hash logs
// in with their password; the stored hash is then argon2id at the
// current parameters, and the next login verifies against it. A wrong
// password changes nothing.
func TestLoginUpgradesImportedHash(t *testing.T) {
	en := newEnv(t, "")
	ctx := context.Background()
	const pw = "imported password"
	bc, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	u, err := en.store.CreateUser(ctx, data.User{Email: "imp@example.com", Name: "Imp", PasswordHash: string(bc)})
	if err != nil {
		t.Fatal(err)
	}
	ck, tok := en.loginForm()
	if rec := en.post(loginPath, url.Values{"login": {"imp@example.com"}, "password": {"not it"}, csrfField: {tok}}, ck); rec.Code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", rec.Code)
	}
	if got, _ := en.store.GetUser(ctx, u.ID); got.PasswordHash != string(bc) {
		t.Fatal("a failed login changed the hash")
	}
	en.login("imp@example.com", pw)
	got, _ := en.store.GetUser(ctx, u.ID)
	if !strings.HasPrefix(got.PasswordHash, "$argon2id$v=19$m=19456,t=2,p=1$") || password.NeedsUpgrade(got.PasswordHash) {
		t.Fatalf("hash after login = %.40s…; want argon2id at the current parameters", got.PasswordHash)
	}
	if ok, err := password.Verify(got.PasswordHash, pw); !ok || err != nil {
		t.Fatalf("the upgraded hash does not verify the password: %v, %v", ok, err)
	}
	en.login("imp@example.com", pw) // against the upgraded hash
}

// TestLoginReplacesCostlierHash: a stored argon2id hash costlier than
// today's (p=16: 16 threads in one password slot per check) is replaced by
// today's argon2id at the first successful login, like a weaker one.
func TestLoginReplacesCostlierHash(t *testing.T) {
	en := newEnv(t, "")
	ctx := context.Background()
	const pw = "costly password"
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte(pw), salt, 2, 19456, 16, 32) // today's m and t, 16 lanes
	costly := "$argon2id$v=19$m=19456,t=2,p=16$" + base64.RawStdEncoding.EncodeToString(salt) + "$" + base64.RawStdEncoding.EncodeToString(key)
	u, err := en.store.CreateUser(ctx, data.User{Email: "costly@example.com", Name: "Costly", PasswordHash: costly})
	if err != nil {
		t.Fatal(err)
	}
	en.login("costly@example.com", pw)
	got, _ := en.store.GetUser(ctx, u.ID)
	if !strings.HasPrefix(got.PasswordHash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash after login = %.40s…; want argon2id at today's parameters", got.PasswordHash)
	}
	en.login("costly@example.com", pw)
}

// TestDisabledUserCannotLogIn: the right password of a disabled user opens
// no session.
func TestDisabledUserCannotLogIn(t *testing.T) {
	en := newEnv(t, "")
	ctx := context.Background()
	sess := en.login("alice", alicePassword)
	if _, err := en.store.UpdateUser(ctx, en.alice.ID, func(u data.User) (data.User, error) { u.Disabled = true; return u, nil }); err != nil {
		t.Fatal(err)
	}
	// The session is gone: the consent page sends to the login.
	if rec := en.get(authorizePath+"?"+authorizeQuery().Encode(), sess); rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), loginPath) {
		t.Fatalf("consent page with a disabled user's session: %d %s; want 303 to login", rec.Code, rec.Header().Get("Location"))
	}
	ck, tok := en.loginForm()
	rec := en.post(loginPath, url.Values{"login": {"alice"}, "password": {alicePassword}, csrfField: {tok}}, ck)
	if rec.Code != http.StatusForbidden || cookie(rec, sessionCookie) != nil || !strings.Contains(rec.Body.String(), "disabled") {
		t.Fatalf("login of a disabled user: %d; want 403 and no session\n%s", rec.Code, rec.Body)
	}
}
