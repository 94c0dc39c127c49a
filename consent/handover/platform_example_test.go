package handover_test

// The platform's side of the login handover, as docs/LOGIN-HANDOVER.md
// shows it (TestDocExample keeps the two the same; this file compiles it).

// BEGIN EXAMPLE
import (
	"crypto/ecdsa"
	"crypto/rand"
	"net/http"
	"net/url"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// handOver is called by the platform's login page once it has signed the
// user in its own way. oauthdURL is oauthd's --base-url (the audience).
func handOver(w http.ResponseWriter, r *http.Request, key *ecdsa.PrivateKey, kid, oauthdURL string,
	userID, email, name, timeZone string) {
	returnTo, challenge := r.FormValue("return_to"), r.FormValue("challenge")
	if returnTo != oauthdURL+"/auth/login/handover" || challenge == "" {
		http.Error(w, "bad handover request", http.StatusBadRequest) // never an open redirect
		return
	}
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://platform.example", "aud": oauthdURL, "sub": userID,
		"email": email, "name": name, "time_zone": timeZone,
		"iat": now.Unix(), "exp": now.Add(30 * time.Second).Unix(),
		"challenge": challenge, "jti": rand.Text(),
	})
	tok.Header["kid"] = kid // the key's kid in the platform's JWKS
	assertion, err := tok.SignedString(key)
	if err != nil {
		http.Error(w, "cannot sign", http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, returnTo+"?assertion="+url.QueryEscape(assertion), http.StatusSeeOther)
}

// END EXAMPLE
