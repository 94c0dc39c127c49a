package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"oauthd/cmd/internal/clitext"
	"oauthd/data"
	"oauthd/issuer/admin"
)

// The demo's fixed values, so that the README's walkthrough works as written.
const (
	demoEmail       = "demo@example.com"
	demoUsername    = "demo"
	demoPassword    = "demo-password-123"
	demoClientName  = "Demo Calendar App"
	demoRedirectURI = "http://127.0.0.1:9999/callback"
)

var demoScopes = []string{"PROFILE_READ", "BOOKING_READ", "SCHEDULE_READ"}

// demoInfo is what `serve --demo` prints.
type demoInfo struct {
	ClientID, ClientSecret string
	Verifier, AuthURL      string
	Base                   string
}

// userFinder is the store slice seedDemo needs beyond the admin Service.
type userFinder interface {
	GetUserByLogin(ctx context.Context, login string) (data.User, error)
}

// seedDemo makes sure the demo user and an approved demo client exist
// (idempotent). Only hashes of secrets are stored, so each run gives the
// demo client a fresh secret and revokes the others: the printed secret
// always works.
func seedDemo(ctx context.Context, svc admin.Service, users userFinder, base, app string) (demoInfo, error) {
	var owner int64
	if u, err := users.GetUserByLogin(ctx, demoEmail); errors.Is(err, data.ErrNotFound) {
		v, err := svc.AddUser(ctx, admin.NewUser{Email: demoEmail, Username: demoUsername, Name: "Demo User", TimeZone: "Europe/Berlin", Password: demoPassword})
		if err != nil {
			return demoInfo{}, err
		}
		owner = v.ID
	} else if err != nil {
		return demoInfo{}, err
	} else {
		owner = u.ID
	}
	cs, err := svc.ListClients(ctx, "")
	if err != nil {
		return demoInfo{}, err
	}
	i := slices.IndexFunc(cs, func(c admin.ClientView) bool {
		return c.Name == demoClientName && c.OwnerID == owner && c.ClientType == string(data.Confidential)
	})
	var d demoInfo
	if i < 0 {
		c, err := svc.CreateClient(ctx, admin.NewClient{OwnerID: owner, Name: demoClientName, RedirectURIs: []string{demoRedirectURI}, Scopes: demoScopes})
		if err != nil {
			return demoInfo{}, err
		}
		d.ClientID, d.ClientSecret = c.ClientID, c.ClientSecret
	} else {
		c := cs[i]
		d.ClientID = c.ClientID
		if len(c.Secrets) >= data.MaxActiveSecrets {
			if err := svc.RevokeSecret(ctx, c.ClientID, c.Secrets[0].SecretID); err != nil {
				return demoInfo{}, err
			}
		}
		s, err := svc.GenerateSecret(ctx, c.ClientID)
		if err != nil {
			return demoInfo{}, err
		}
		d.ClientSecret = s.ClientSecret
		list, err := svc.ListSecrets(ctx, c.ClientID)
		if err != nil {
			return demoInfo{}, err
		}
		for _, old := range list {
			if old.SecretID != s.SecretID {
				if err := svc.RevokeSecret(ctx, c.ClientID, old.SecretID); err != nil {
					return demoInfo{}, err
				}
			}
		}
		if !slices.Contains(c.RedirectURIs, demoRedirectURI) {
			if _, err := svc.SetRedirectURIs(ctx, c.ClientID, []string{demoRedirectURI}); err != nil {
				return demoInfo{}, err
			}
		}
	}
	if _, err := svc.ApproveClient(ctx, d.ClientID); err != nil {
		return demoInfo{}, err
	}
	d.Verifier = oauth2.GenerateVerifier()
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {d.ClientID},
		"redirect_uri":          {demoRedirectURI},
		"scope":                 {strings.Join(demoScopes, " ")},
		"state":                 {randomURLString(16)},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(d.Verifier)},
		"code_challenge_method": {"S256"},
	}
	d.AuthURL = app + "/auth/oauth2/authorize?" + q.Encode()
	d.Base = base
	return d, nil
}

func randomURLString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// demoBanner is what printDemo needs beyond demoInfo: the code's
// lifetime, and the platform's login page when the login is handed over.
type demoBanner struct {
	CodeTTL  time.Duration
	LoginURL string
}

func printDemo(w io.Writer, d demoInfo, b demoBanner) {
	login := fmt.Sprintf("log in as the demo user (%s, password %s)", demoEmail, demoPassword)
	user := fmt.Sprintf("Demo user:      %s (username %s), password %s", demoEmail, demoUsername, demoPassword)
	if b.LoginURL != "" {
		// The built-in form is off: the platform signs users in, and the
		// demo user's password is of no use in the browser.
		login = "sign in at the platform (" + b.LoginURL + ": oauthd hands the login over to it)"
		user = "Login:          handed over to the platform at " + b.LoginURL + " (the demo user's password does not apply)"
	}
	clitext.Textf(w, `
=== oauthd demo ===
%s
Client ID:      %s
Client secret:  %s   (a new one on every start; earlier ones are revoked)
Redirect URI:   %s   (nothing needs to listen there: copy the code from the address bar)
PKCE verifier:  %s

1. Open this URL, %s and choose Allow:
   %s

2. Copy the code parameter from the address bar and exchange it within %s
   (the code's lifetime, --code-ttl; after that, start again at step 1):
   curl -s %s/v2/auth/oauth2/token \
     -d grant_type=authorization_code \
     -d client_id=%s \
     -d client_secret=%s \
     --data-urlencode redirect_uri=%s \
     -d code_verifier=%s \
     -d code=PASTE_CODE_HERE

3. Call the API with the access token:
   curl -s -H "Authorization: Bearer ACCESS_TOKEN" %s/v2/me
===================

`, user, d.ClientID, d.ClientSecret, demoRedirectURI, d.Verifier,
		login, d.AuthURL, fmtDuration(b.CodeTTL), d.Base, d.ClientID, d.ClientSecret, demoRedirectURI, d.Verifier, d.Base)
}

// fmtDuration writes d as people say it: "1 minute", "90 seconds".
func fmtDuration(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "1 minute"
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%d seconds", d/time.Second)
	}
	return d.String()
}
