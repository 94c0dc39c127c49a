package issuer

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestRevokeThenIntrospect: the revocation of an access token (familyOf,
// revokeFamily) ends its grant, so introspection calls both of its tokens
// inactive; another client's revocation of them answers 200 and changes
// nothing; a second revocation is a 200 too.
func TestRevokeThenIntrospect(t *testing.T) {
	env := newTkEnv(t)
	tok := env.exchange()
	active := func(token string) bool {
		t.Helper()
		rec := env.do(tkReq{path: "/v2/auth/oauth2/introspect", body: tkForm("token", token), header: [][2]string{tkBasic("conf", env.secretA)}})
		var m map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &m) != nil {
			t.Fatalf("introspect: %d %s", rec.Code, rec.Body)
		}
		return m["active"] == true
	}
	revoke := func(client, secret, token string) {
		t.Helper()
		rec := env.do(tkReq{path: "/v2/auth/oauth2/revoke", body: tkForm("token", token), header: [][2]string{tkBasic(client, secret)}})
		if rec.Code != http.StatusOK {
			t.Fatalf("revoke by %s: %d %s", client, rec.Code, rec.Body)
		}
	}
	for _, token := range []string{tok.AccessToken, tok.RefreshToken} {
		revoke("other", env.otherSecret, token)
	}
	if !active(tok.AccessToken) || !active(tok.RefreshToken) {
		t.Fatal("another client's revocation ended the grant")
	}
	revoke("conf", env.secretA, tok.AccessToken)
	if active(tok.AccessToken) || active(tok.RefreshToken) {
		t.Error("the revoked grant's tokens are still active")
	}
	revoke("conf", env.secretA, tok.AccessToken)
	revoke("conf", env.secretA, tok.RefreshToken)
}
