// Command platform is the platform's side of oauthd's login handover
// (docs/LOGIN-HANDOVER.md), as a program you can run and copy from: a
// login page that signs its user in, hands the user over to oauthd with a
// signed login assertion, and publishes its public key as a JWKS (or
// writes it as a PEM file, the alternative).
//
//	go run ./docs/examples/platform -oauthd-base-url https://api.example.com \
//	    -oauthd-app-url https://app.example.com -issuer https://app.example.com
//
// behind https://app.example.com (its /login and /.well-known/jwks.json),
// and oauthd with
//
//	oauthd serve --base-url https://api.example.com --app-url https://app.example.com \
//	    --login-url https://app.example.com/login --login-issuer https://app.example.com \
//	    --login-jwks https://app.example.com/.well-known/jwks.json
//
// Its one user (pat@platform.example, password "platform password") stands
// for the platform's own accounts: replace signIn with your login.
//
// Flags:
//
//	-addr ADDR             listen address (default 127.0.0.1:9090; port 0 picks one)
//	-issuer URL            the iss it signs; oauthd's --login-issuer (default http://ADDR)
//	-oauthd-base-url URL   oauthd's --base-url: the assertion's audience
//	-oauthd-app-url URL    oauthd's --app-url: where return_to must point (default: the base URL)
//	-key FILE              its P-256 private key in PEM (made and written there when missing)
//	-write-public-key FILE write the public key as PEM (for --login-jwks FILE) and exit
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

func main() {
	var (
		addr     = flag.String("addr", "127.0.0.1:9090", "listen address")
		issuer   = flag.String("issuer", "", "the iss it signs (oauthd's --login-issuer); default http://ADDR")
		baseURL  = flag.String("oauthd-base-url", "", "oauthd's --base-url (the audience)")
		appURL   = flag.String("oauthd-app-url", "", "oauthd's --app-url (where return_to points); default the base URL")
		keyFile  = flag.String("key", "platform-key.pem", "the signing key's PEM file (made when missing)")
		writePub = flag.String("write-public-key", "", "write the public key as PEM to this file and exit")
	)
	flag.Parse()
	key, err := loadOrMakeKey(*keyFile)
	if err != nil {
		log.Fatal(err)
	}
	if *writePub != "" {
		if err := writePublicKey(*writePub, &key.PublicKey); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *baseURL == "" {
		log.Fatal("-oauthd-base-url is required: oauthd's --base-url, the audience of the assertions")
	}
	if *appURL == "" {
		*appURL = *baseURL
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	if *issuer == "" {
		*issuer = "http://" + ln.Addr().String()
	}
	p, err := newPlatform(key, *issuer, strings.TrimSuffix(*baseURL, "/"), strings.TrimSuffix(*appURL, "/"))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("platform listening on http://%s (iss %s, kid %s)", ln.Addr(), *issuer, p.kid)
	srv := &http.Server{Handler: p.routes(), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// platform holds the signing key and oauthd's two addresses.
type platform struct {
	key     *ecdsa.PrivateKey
	kid     string // the RFC 7638 thumbprint, as oauthd names a PEM key too
	jwks    []byte // the public JWKS, made once
	issuer  string
	baseURL string // oauthd's --base-url: the audience
	appURL  string // oauthd's --app-url: return_to is {appURL}/auth/login/handover
}

func newPlatform(key *ecdsa.PrivateKey, issuer, baseURL, appURL string) (*platform, error) {
	pub, err := jwk.FromRaw(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := jwk.AssignKeyID(pub); err != nil {
		return nil, err
	}
	_ = pub.Set(jwk.AlgorithmKey, "ES256")
	_ = pub.Set(jwk.KeyUsageKey, "sig")
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	b, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	return &platform{key: key, kid: pub.KeyID(), jwks: b, issuer: issuer, baseURL: baseURL, appURL: appURL}, nil
}

func (p *platform) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", p.loginForm)
	mux.HandleFunc("POST /login", p.login)
	mux.HandleFunc("GET /.well-known/jwks.json", p.publishJWKS)
	return mux
}

var form = template.Must(template.New("login").Parse(`<!doctype html>
<title>Sign in to the platform</title>
<form method="post" action="/login">
<input type="hidden" name="return_to" value="{{.ReturnTo}}">
<input type="hidden" name="challenge" value="{{.Challenge}}">
<label>Email <input type="email" name="email"></label>
<label>Password <input type="password" name="password"></label>
<button>Sign in</button>
</form>`))

// loginForm is where oauthd sends a browser without an oauthd session
// (its --login-url): the platform's own login form, carrying return_to
// and challenge along.
func (p *platform) loginForm(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = form.Execute(w, struct{ ReturnTo, Challenge string }{r.FormValue("return_to"), r.FormValue("challenge")})
}

// user is one of the platform's accounts.
type user struct{ ID, Email, Name, TimeZone string }

// signIn stands for the platform's own login (its sessions, its form,
// its MFA...): here one account with a fixed password.
func signIn(email, password string) (user, bool) {
	if email == "pat@platform.example" && password == "platform password" {
		return user{ID: "u-4711", Email: email, Name: "Pat Doe", TimeZone: "America/New_York"}, true
	}
	return user{}, false
}

func (p *platform) login(w http.ResponseWriter, r *http.Request) {
	u, ok := signIn(r.PostFormValue("email"), r.PostFormValue("password"))
	if !ok {
		http.Error(w, "wrong email or password", http.StatusUnauthorized)
		return
	}
	p.handOver(w, r, u)
}

// BEGIN HANDOVER

// handOver sends a signed-in user back to oauthd with a login assertion.
// return_to must be exactly oauthd's {app_url}/auth/login/handover (the
// pages' address, which may differ from the API's); anything else is
// refused, never followed: the platform is no open redirect.
func (p *platform) handOver(w http.ResponseWriter, r *http.Request, u user) {
	returnTo, challenge := r.FormValue("return_to"), r.FormValue("challenge")
	if returnTo != p.appURL+"/auth/login/handover" || challenge == "" {
		http.Error(w, "bad handover request", http.StatusBadRequest)
		return
	}
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss":       p.issuer,  // oauthd's --login-issuer
		"aud":       p.baseURL, // oauthd's --base-url, its issuer
		"sub":       u.ID,      // the platform's stable user ID, never the email
		"email":     u.Email,
		"name":      u.Name,
		"time_zone": u.TimeZone,
		"iat":       now.Unix(), "exp": now.Add(30 * time.Second).Unix(),
		"challenge": challenge, "jti": rand.Text(),
	})
	tok.Header["kid"] = p.kid
	assertion, err := tok.SignedString(p.key)
	if err != nil {
		http.Error(w, "cannot sign", http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, returnTo+"?assertion="+url.QueryEscape(assertion), http.StatusSeeOther)
}

// publishJWKS serves the public key for oauthd's --login-jwks URL. To
// rotate: publish the new key beside the old one, sign with the new one,
// drop the old one a minute later.
func (p *platform) publishJWKS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(p.jwks)
}

// END HANDOVER

// loadOrMakeKey reads the P-256 private key from path, or makes one and
// writes it there (mode 0600) when the file does not exist.
func loadOrMakeKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, err
		}
		return k, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	}
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("%s holds no PEM block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("%s: want a P-256 key for ES256", path)
	}
	return ec, nil
}

// writePublicKey writes pub as a PEM PUBLIC KEY block: give that file to
// oauthd as --login-jwks FILE. oauthd names a key without a kid by its
// RFC 7638 thumbprint, the kid handOver signs with.
func writePublicKey(path string, pub *ecdsa.PublicKey) error {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
}
