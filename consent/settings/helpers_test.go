package settings

import (
	"context"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/consent"
	"oauthd/consent/consenttest"
	"oauthd/data"
	"oauthd/data/memory"
	"oauthd/data/password"
	"oauthd/issuer/admin"
)

// TestMain runs the tests and, when the browser test was skipped for want
// of Chromium, prints one line that says so (consenttest.Main).
func TestMain(m *testing.M) { os.Exit(consenttest.Main(m)) }

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// checkGolden compares got with testdata/name.golden.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	consenttest.Golden(t, filepath.Join("testdata", name+".golden"), got, *update)
}

// checkPageHeaders asserts the security headers of every page.
func checkPageHeaders(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	consenttest.CheckPageHeaders(t, rec.Header())
}

const (
	csrfField = consent.CSRFField
	loginPath = "/auth/login"
	// sessionCookie is the session cookie's name on an https site.
	sessionCookie = "__Host-oauthd_session"
	alicePassword = "alice-secret-password"
)

// Fixed credentials so that the pages render byte for byte the same.
var (
	fixedCSRF    = strings.Repeat("C", 43)
	fixedSession = data.PrefixSession + strings.Repeat("S", 43)
)

// aliceHash is alice's password hash, made once: argon2id is slow.
var aliceHash = sync.OnceValue(func() string {
	h, err := password.Hash(alicePassword)
	if err != nil {
		panic(err)
	}
	return h
})

// noAuthorizer stands for the issuer: the settings tests never authorize.
type noAuthorizer struct{ consent.Authorizer }

// settingsEnv is the login pages and the settings pages on one router,
// over a memory store with two users and the real admin.Local.
type settingsEnv struct {
	t     testing.TB
	store *memory.Store
	adm   *admin.Local
	e     *echo.Echo
	now   time.Time
	alice data.User
	bob   data.User
}

// newSettingsEnv is newEnv at https://app.example.
func newSettingsEnv(t testing.TB) *settingsEnv {
	return newEnv(t, "https://app.example", echo.New(), nil)
}

// newEnv mounts both on e at appURL; adminLog (nil: discard) receives
// admin's audit records.
func newEnv(t testing.TB, appURL string, e *echo.Echo, adminLog *slog.Logger) *settingsEnv {
	t.Helper()
	se := &settingsEnv{t: t, store: memory.New(), e: e, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	t.Cleanup(func() { se.store.Close() })
	users := []*data.User{&se.alice, &se.bob}
	for i, u := range []data.User{
		{Email: "alice@example.com", Username: "alice", Name: "Alice Example", PasswordHash: aliceHash()},
		{Email: "bob@example.com", Username: "bob", Name: "Bob <b>Builder</b>"},
	} {
		var err error
		if *users[i], err = se.store.CreateUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	if adminLog == nil {
		adminLog = slog.New(slog.DiscardHandler)
	}
	se.adm = admin.NewLocal(se.store, nil, adminLog, se.clock)
	site, err := consent.New(consent.Config{Store: se.store, Authorizer: noAuthorizer{}, Now: se.clock, AppURL: appURL})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Site: site, Clients: se.adm})
	if err != nil {
		t.Fatal(err)
	}
	site.Register(e)
	h.Register(e)
	return se
}

func (se *settingsEnv) clock() time.Time { return se.now }

func (se *settingsEnv) get(target string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	return consenttest.Get(se.e, target, cookies...)
}

func (se *settingsEnv) post(target string, form url.Values, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	return consenttest.Post(se.e, target, form, cookies...)
}

// session stores a session for user u (no password hashing: fast) and
// returns its cookie and CSRF token.
func (se *settingsEnv) session(u data.User) (*http.Cookie, string) {
	se.t.Helper()
	return se.sessionWith(u, data.NewSecret(data.PrefixSession), data.NewSecret(""))
}

// sessionWith stores session id with token csrf for u.
func (se *settingsEnv) sessionWith(u data.User, id, csrf string) (*http.Cookie, string) {
	se.t.Helper()
	now := se.clock()
	s := data.Session{Hash: data.Hash(id), UserID: u.ID, CSRF: csrf, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := se.store.CreateSession(context.Background(), s); err != nil {
		se.t.Fatal(err)
	}
	return &http.Cookie{Name: sessionCookie, Value: id}, csrf
}
