package consent

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"

	"oauthd/consent/consenttest"
	"oauthd/data"
	"oauthd/issuer"
)

// deviceFake is the issuer's device side over a map of canonical user
// codes; decided records each decision.
type deviceFake struct {
	*fakeAuthorizer
	mu      sync.Mutex
	pending map[string]bool
	decided map[string]string
}

func (d *deviceFake) FindDevice(_ context.Context, typed string) (issuer.DeviceRequest, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	uc := data.CanonicalUserCode(typed)
	if !d.pending[uc] {
		return issuer.DeviceRequest{}, issuer.ErrDeviceCode
	}
	return issuer.DeviceRequest{UserCode: uc, Client: data.Client{ID: "tv", Name: "Room <display>"}, Scopes: []string{"BOOKING_READ"}}, nil
}

func (d *deviceFake) decide(uc, what string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.pending[uc] {
		return issuer.ErrDeviceCode
	}
	delete(d.pending, uc)
	d.decided[uc] = what
	return nil
}

func (d *deviceFake) ApproveDevice(_ context.Context, uc string, _ issuer.Login) error {
	return d.decide(uc, "allow")
}

func (d *deviceFake) DenyDevice(_ context.Context, uc string, _ int64) error {
	return d.decide(uc, "deny")
}

func deviceEnv(t *testing.T) (*env, *deviceFake) {
	en := newEnv(t, "")
	df := &deviceFake{fakeAuthorizer: en.authz, pending: map[string]bool{"BCDFGHJK": true}, decided: map[string]string{}}
	h, err := New(Config{Store: en.store, Authorizer: df, Logger: slog.New(slog.DiscardHandler), Now: en.clock})
	if err != nil {
		t.Fatal(err)
	}
	en.h, en.e = h, echo.New()
	h.Register(en.e)
	return en, df
}

func devicePost(en *env, sess *http.Cookie, remote string, form url.Values) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, devicePath, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if remote != "" {
		req.RemoteAddr = remote
	}
	req.AddCookie(sess)
	return en.serve(req)
}

// TestDevicePage: the login first, the code prefilled from the link but
// confirmed, the consent page naming the client, Allow; nothing is
// decided by a link or without the session's CSRF token.
func TestDevicePage(t *testing.T) {
	en, df := deviceEnv(t)
	rec := en.get(devicePath + "?user_code=bcdf-ghjk")
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/auth/login?return_to=%2Fdevice%3Fuser_code%3Dbcdf-ghjk" {
		t.Fatalf("without a session: %d %v", rec.Code, rec.Header())
	}
	sess := en.login("alice", alicePassword)
	rec = en.get(devicePath+"?user_code=bcdf-ghjk", sess)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `value="bcdf-ghjk"`) || strings.Contains(rec.Body.String(), `value="allow"`) {
		t.Fatalf("code form: %d\n%s", rec.Code, rec.Body)
	}
	consenttest.CheckPageHeaders(t, rec.Header())
	csrf := decisionCSRF(t, rec.Body.String())
	if len(df.decided) != 0 {
		t.Fatalf("a GET decided: %v", df.decided)
	}
	// No CSRF token: refused.
	if rec := devicePost(en, sess, "", url.Values{"user_code": {"BCDF-GHJK"}, "action": {"allow"}}); rec.Code != http.StatusForbidden {
		t.Fatalf("allow without CSRF: %d", rec.Code)
	}
	rec = devicePost(en, sess, "", url.Values{"user_code": {"bcdf ghjk"}, "action": {"lookup"}, csrfField: {csrf}})
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, "Room &lt;display&gt;") || !strings.Contains(body, "BCDF-GHJK") || !strings.Contains(body, `value="allow"`) {
		t.Fatalf("consent page: %d\n%s", rec.Code, body)
	}
	// The scopes as the consent page lists them (the template "scopes").
	if !strings.Contains(body, `to:</p>`) || !strings.Contains(body, `<ul class="scopes">`) || !strings.Contains(body, "<code>BOOKING_READ</code></li>") {
		t.Errorf("the device's consent page does not list its scope:\n%s", body)
	}
	if len(df.decided) != 0 {
		t.Fatalf("the lookup decided: %v", df.decided)
	}
	rec = devicePost(en, sess, "", url.Values{"user_code": {"BCDF-GHJK"}, "action": {"allow"}, csrfField: {csrf}})
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "Device connected") || df.decided["BCDFGHJK"] != "allow" {
		t.Fatalf("allow: %d %v\n%s", rec.Code, df.decided, rec.Body)
	}
	// Decided: the code is spent.
	if rec := devicePost(en, sess, "", url.Values{"user_code": {"BCDF-GHJK"}, "action": {"deny"}, csrfField: {csrf}}); rec.Code != http.StatusBadRequest {
		t.Fatalf("deny after allow: %d", rec.Code)
	}
}

// TestDeviceCodeGuessing: wrong codes are limited per session and per
// address (RFC 8628 §5.1); the right code is never counted, and a user
// on another address is not locked out by a guesser.
func TestDeviceCodeGuessing(t *testing.T) {
	en, df := deviceEnv(t)
	guess := func(sess *http.Cookie, csrf, remote, code string) int {
		return devicePost(en, sess, remote, url.Values{"user_code": {code}, "action": {"lookup"}, csrfField: {csrf}}).Code
	}
	newSession := func() (*http.Cookie, string) {
		sess := en.login("bob", bobPassword)
		return sess, decisionCSRF(t, en.get(devicePath, sess).Body.String())
	}
	// One session: 5 wrong codes, then 429 (even for a right one).
	s1, c1 := newSession()
	counts := map[int]int{}
	for range 40 {
		counts[guess(s1, c1, "203.0.113.5:1", "ZZZZ-ZZZZ")]++
	}
	if counts[400] != 5 || counts[429] != 35 {
		t.Fatalf("one session: %v; want 5 refused codes then 429", counts)
	}
	// More sessions on the same address: the address's budget (30) ends it.
	wrong := counts[400]
	for range 10 {
		s, c := newSession()
		for range 10 {
			if guess(s, c, "203.0.113.5:1", "ZZZZ-ZZZZ") == 400 {
				wrong++
			}
		}
	}
	if wrong != 30 {
		t.Fatalf("%d wrong codes checked from one address; want 30 (the address burst)", wrong)
	}
	// The user, elsewhere, types the right code: never counted, never refused.
	su, cu := newSession()
	for range 40 {
		if code := guess(su, cu, "198.51.100.20:1", "bcdfghjk"); code != 200 {
			t.Fatalf("the right code: %d", code)
		}
	}
	if len(df.decided) != 0 {
		t.Fatalf("guessing decided: %v", df.decided)
	}
}

// decisionCSRF is the CSRF token of the page's form.
func decisionCSRF(t *testing.T, body string) string {
	t.Helper()
	m := hiddenRE.FindAllStringSubmatch(body, -1)
	for _, f := range m {
		if f[1] == csrfField {
			return f[2]
		}
	}
	t.Fatalf("no CSRF token in the page:\n%s", body)
	return ""
}

// TestDeviceTypedCodeLimit: the page applies data.MaxTypedUserCode one
// way: the code field holds that many characters, and a longer input (on
// the link or typed) is no code: not prefilled, not cut to a code that
// looks up (it once was cut, so a longer input could match), not shown
// again.
func TestDeviceTypedCodeLimit(t *testing.T) {
	en, df := deviceEnv(t)
	sess := en.login("alice", alicePassword)
	max := data.MaxTypedUserCode
	long := "BCDF-GHJK" + strings.Repeat(" ", max-9) + "X" // its first max characters are the pending code
	rec := en.get(devicePath+"?"+url.Values{"user_code": {long}}.Encode(), sess)
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `maxlength="`+strconv.Itoa(max)+`"`) || strings.Contains(body, "BCDF-GHJK") {
		t.Fatalf("code form for a link with %d characters: %d\n%s", len(long), rec.Code, body)
	}
	csrf := decisionCSRF(t, body)
	rec = devicePost(en, sess, "", url.Values{"user_code": {long}, "action": {"lookup"}, csrfField: {csrf}})
	if rec.Code != http.StatusBadRequest || strings.Contains(rec.Body.String(), "BCDF-GHJK") {
		t.Fatalf("lookup of %d characters: %d; want 400 and the input not shown\n%s", len(long), rec.Code, rec.Body)
	}
	exact := "BCDF-GHJK" + strings.Repeat(" ", max-9)
	if rec := devicePost(en, sess, "", url.Values{"user_code": {exact}, "action": {"lookup"}, csrfField: {csrf}}); rec.Code != 200 {
		t.Fatalf("lookup of %d characters: %d; want the consent page", len(exact), rec.Code)
	}
	if len(df.decided) != 0 {
		t.Fatalf("decided: %v", df.decided)
	}
}
