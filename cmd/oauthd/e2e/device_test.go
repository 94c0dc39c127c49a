package e2e

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// TestDeviceFlowEndToEnd: a room display (public client, `clients create
// --grant-type device_code`) runs golang.org/x/oauth2's DeviceAuth and
// DeviceAccessToken against the binary while the test plays the user on
// /device (login, the prefilled code confirmed, Allow); the tokens (a
// refresh token included) act for the user and come once. A denial ends
// the device's wait with access_denied.
func TestDeviceFlowEndToEnd(t *testing.T) {
	e := startE2E(t)
	var c struct {
		ClientID   string   `json:"client_id"`
		GrantTypes []string `json:"grant_types"`
	}
	oneJSON(t, e.cli(t, "clients", "create", "--owner", e2eEmail, "--name", "Room display", "--public",
		"--grant-type", "device_code", "--grant-type", "refresh_token", "--scope", "BOOKING_READ,PROFILE_READ", "--json"), &c)
	if strings.Join(c.GrantTypes, " ") != "urn:ietf:params:oauth:grant-type:device_code refresh_token" {
		t.Fatalf("grant_types = %v", c.GrantTypes)
	}
	e.cli(t, "clients", "approve", c.ClientID)
	conf := &oauth2.Config{ClientID: c.ClientID, Scopes: []string{"PROFILE_READ"}, Endpoint: oauth2.Endpoint{
		DeviceAuthURL: e.base + "/v2/auth/oauth2/device_authorization", TokenURL: e.tokenURL(), AuthStyle: oauth2.AuthStyleInParams}}
	ctx := t.Context()

	da, err := conf.DeviceAuth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if da.VerificationURI != e.base+"/device" || !strings.HasPrefix(da.VerificationURIComplete, e.base+"/device?user_code=") ||
		len(da.UserCode) != 9 || da.UserCode[4] != '-' || da.Interval != 5 {
		t.Fatalf("device authorization = %+v", da)
	}
	type result struct {
		tok *oauth2.Token
		err error
	}
	polled := make(chan result, 1)
	go func() {
		tok, err := conf.DeviceAccessToken(ctx, da)
		polled <- result{tok, err}
	}()
	page, err := consenttest.New().Device(ctx, da.VerificationURIComplete, e2eEmail, e2ePassword, "", true)
	if err != nil || !strings.Contains(page, "Device connected") {
		t.Fatalf("the user on /device: %v\n%s", err, page)
	}
	r := <-polled
	if r.err != nil || r.tok.AccessToken == "" || r.tok.RefreshToken == "" {
		t.Fatalf("DeviceAccessToken = %+v, %v", r.tok, r.err)
	}
	status, body := e2eGet(t, e.base+"/v2/me", r.tok.AccessToken, nil)
	if status != http.StatusOK || !strings.Contains(body, e2eEmail) {
		t.Fatalf("/v2/me = %d %s", status, body)
	}
	// The refresh token works like any other.
	if _, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: r.tok.RefreshToken}).Token(); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	// The device code is spent.
	if _, err := conf.DeviceAccessToken(ctx, da); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("second DeviceAccessToken: %v; want invalid_grant", err)
	}

	// The user denies: the device's wait ends with access_denied.
	da2, err := conf.DeviceAuth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		tok, err := conf.DeviceAccessToken(ctx, da2)
		polled <- result{tok, err}
	}()
	// Typed by hand this time, in lower case without the dash.
	typed := strings.ToLower(strings.ReplaceAll(da2.UserCode, "-", ""))
	if page, err := consenttest.New().Device(ctx, da2.VerificationURI, e2eEmail, e2ePassword, typed, false); err != nil || !strings.Contains(page, "Request denied") {
		t.Fatalf("deny on /device: %v\n%s", err, page)
	}
	if r := <-polled; !isOAuthError(r.err, "access_denied") {
		t.Fatalf("DeviceAccessToken after a denial = %+v, %v; want access_denied", r.tok, r.err)
	}
}

func isOAuthError(err error, code string) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == code
}

// TestDeviceFlowReplicas: on two replicas of one PostgreSQL database, a
// device code asked for on one, confirmed by the user through either,
// and polled by many requests at once on both, gives tokens exactly once.
func TestDeviceFlowReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers on PostgreSQL")
	}
	ctx := t.Context()
	rs := startReplicas(t, 2)
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, rs.db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	front, direct := rs.e2es(u.ID)
	var c struct {
		ClientID string `json:"client_id"`
	}
	oneJSON(t, front.cli(t, "clients", "create", "--owner", e2eEmail, "--name", "Room display", "--public",
		"--grant-type", "device_code", "--scope", "BOOKING_READ", "--json"), &c)
	front.cli(t, "clients", "approve", c.ClientID)
	conf := &oauth2.Config{ClientID: c.ClientID, Endpoint: oauth2.Endpoint{
		DeviceAuthURL: direct[0].base + "/v2/auth/oauth2/device_authorization", TokenURL: direct[1].tokenURL(), AuthStyle: oauth2.AuthStyleInParams}}
	da, err := conf.DeviceAuth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if da.VerificationURI != front.base+"/device" {
		t.Fatalf("verification_uri = %s; want the app URL's /device", da.VerificationURI)
	}
	if page, err := consenttest.New().Device(ctx, da.VerificationURIComplete, e2eEmail, e2ePassword, "", true); err != nil || !strings.Contains(page, "Device connected") {
		t.Fatalf("the user on /device: %v\n%s", err, page)
	}
	const n = 12
	codes := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "client_id": {c.ClientID}, "device_code": {da.DeviceCode}}
			res, err := http.PostForm(direct[i%2].tokenURL(), form)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			codes[i], bodies[i] = res.StatusCode, string(b)
		})
	}
	wg.Wait()
	ok := 0
	for i := range n {
		switch {
		case codes[i] == 200:
			ok++
		case codes[i] == 400 && (strings.Contains(bodies[i], `"slow_down"`) || strings.Contains(bodies[i], `"invalid_grant"`)):
		default:
			t.Errorf("poll %d: %d %s", i, codes[i], bodies[i])
		}
	}
	if ok != 1 {
		t.Fatalf("%d polls on two replicas got tokens; want exactly 1", ok)
	}
}
