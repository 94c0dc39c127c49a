package datatest

import (
	"errors"
	"testing"
	"time"

	"oauthd/data"
)

// OpenID Connect fields: a code's nonce and auth_time reach the exchange,
// a family's auth_time survives its rotations, a session keeps its
// auth_time, a client its post-logout redirect URIs (and a pending change
// adding some); every time in UTC, to the nanosecond.
func testOIDCFields(t *testing.T, s data.Store) {
	zone := time.FixedZone("UTC-3", -3*3600)
	auth := time.Date(2025, 3, 14, 6, 0, 1, 987654321, zone)
	wantTime := func(what string, got time.Time) {
		t.Helper()
		if !got.Equal(auth) || got.Location() != time.UTC {
			t.Fatalf("%s = %v; want %v in UTC", what, got, auth.UTC())
		}
	}

	c := newClient("a")
	c.PostLogoutRedirectURIs = []string{"https://app.example.com/bye", "http://127.0.0.1:8080/bye"}
	wantErr(t, "CreateClient", s.CreateClient(ctx, c), nil)
	got, err := s.GetClient(ctx, "a")
	wantErr(t, "GetClient", err, nil)
	mustEqual(t, "PostLogoutRedirectURIs", got.PostLogoutRedirectURIs, c.PostLogoutRedirectURIs)

	// Codes: with a nonce and auth_time, with only one of them, without.
	for i, tc := range []struct {
		nonce string
		at    time.Time
	}{{"n-0S6_WzA2Mj", auth}, {"", auth}, {"only-nonce", time.Time{}}, {"", time.Time{}}} {
		code := newCode("oauthd_ac_oidc"+string(rune('a'+i)), "a")
		code.Nonce, code.AuthTime = tc.nonce, tc.at
		wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
		var seen data.AuthCode
		famID := "fam" + string(rune('a'+i))
		_, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
			seen = c
			f := newFamily(famID, c.ClientID, "rt"+famID)
			f.AuthTime = c.AuthTime
			return f, nil
		})
		wantErr(t, "ExchangeAuthCode", err, nil)
		if seen.Nonce != tc.nonce {
			t.Fatalf("code %d: Nonce = %q; want %q", i, seen.Nonce, tc.nonce)
		}
		if tc.at.IsZero() {
			if !seen.AuthTime.IsZero() {
				t.Fatalf("code %d: AuthTime = %v; want zero", i, seen.AuthTime)
			}
		} else {
			wantTime("AuthCode.AuthTime", seen.AuthTime)
		}
		// The family's auth_time survives a rotation and a read.
		f, err := s.RotateRefreshToken(ctx, famID, presenting("rt"+famID, rotateTo("next"+famID, t0.Add(time.Minute))))
		wantErr(t, "RotateRefreshToken", err, nil)
		f2, err := s.GetFamily(ctx, famID)
		wantErr(t, "GetFamily", err, nil)
		for _, ff := range []data.Family{f, f2} {
			if tc.at.IsZero() {
				if !ff.AuthTime.IsZero() {
					t.Fatalf("family %s: AuthTime = %v; want zero", famID, ff.AuthTime)
				}
			} else {
				wantTime("Family.AuthTime", ff.AuthTime)
			}
		}
	}

	// A DPoP-bound family with auth_time keeps both.
	code := newCode("oauthd_ac_oidcjkt", "a")
	code.AuthTime = auth
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	_, _, err = s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		f := newFamily("famjkt", c.ClientID, "rtjkt")
		f.AuthTime, f.JKT = c.AuthTime, "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
		return f, nil
	})
	wantErr(t, "ExchangeAuthCode", err, nil)
	f, err := s.GetFamily(ctx, "famjkt")
	wantErr(t, "GetFamily", err, nil)
	wantTime("Family.AuthTime (bound)", f.AuthTime)
	if f.JKT != "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" {
		t.Fatalf("Family.JKT = %q", f.JKT)
	}

	// Users: the profile's update time.
	u, err := s.CreateUser(ctx, data.User{Email: "o@example.com", Username: "o", CreatedAt: t0})
	wantErr(t, "CreateUser", err, nil)
	if !u.ProfileUpdated().Equal(t0) {
		t.Fatalf("ProfileUpdated() of a new user = %v; want CreatedAt", u.ProfileUpdated())
	}
	_, err = s.UpdateUser(ctx, u.ID, func(u data.User) (data.User, error) { u.Name, u.ProfileUpdatedAt = "O", auth; return u, nil })
	wantErr(t, "UpdateUser", err, nil)
	u, _ = s.GetUser(ctx, u.ID)
	wantTime("User.ProfileUpdatedAt", u.ProfileUpdatedAt)

	// Sessions.
	wantErr(t, "CreateSession", s.CreateSession(ctx, data.Session{Hash: data.Hash("ss"), UserID: 1, CSRF: "x",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), AuthTime: auth}), nil)
	sess, err := s.GetSession(ctx, data.Hash("ss"))
	wantErr(t, "GetSession", err, nil)
	wantTime("Session.AuthTime", sess.AuthTime)
	wantTime("Session.Authenticated()", sess.Authenticated())
	wantErr(t, "CreateSession", s.CreateSession(ctx, data.Session{Hash: data.Hash("old"), UserID: 1, CSRF: "x",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}), nil)
	old, _ := s.GetSession(ctx, data.Hash("old"))
	if !old.AuthTime.IsZero() || !old.Authenticated().Equal(t0) {
		t.Fatalf("a session without AuthTime: AuthTime %v, Authenticated() %v; want zero and CreatedAt", old.AuthTime, old.Authenticated())
	}

	// A pending change adding a post-logout URI; approving applies it.
	_, err = s.UpdateClient(ctx, "a", func(c data.Client) (data.Client, error) {
		c.Status = data.StatusApproved
		c.Pending = &data.ClientChange{AddPostLogoutRedirectURIs: []string{"https://app.example.com/later"},
			ProposedBy: "user 1", ProposedAt: t0}
		return c, nil
	})
	wantErr(t, "UpdateClient (pending post-logout URI)", err, nil)
	got, _ = s.GetClient(ctx, "a")
	if got.Pending == nil || len(got.Pending.AddPostLogoutRedirectURIs) != 1 || len(got.PostLogoutRedirectURIs) != 2 {
		t.Fatalf("pending change = %+v, approved = %v", got.Pending, got.PostLogoutRedirectURIs)
	}
	next := got.WithPending()
	mustEqual(t, "WithPending().PostLogoutRedirectURIs", next.PostLogoutRedirectURIs,
		[]string{"https://app.example.com/bye", "http://127.0.0.1:8080/bye", "https://app.example.com/later"})

	// The rules: an invalid or repeated post-logout URI is refused.
	for _, bad := range [][]string{{"http://app.example.com/bye"}, {"https://a.example/x#f"}, {"https://a.example/x", "https://a.example/x"}} {
		_, err = s.UpdateClient(ctx, "a", func(c data.Client) (data.Client, error) {
			c.Pending = nil
			c.PostLogoutRedirectURIs = bad
			return c, nil
		})
		var re *data.RuleError
		if !errors.As(err, &re) || re.Field != "post_logout_redirect_uris" {
			t.Fatalf("UpdateClient with post-logout URIs %q: %v; want a RuleError on post_logout_redirect_uris", bad, err)
		}
	}
}
