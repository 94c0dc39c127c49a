package consent

import (
	"context"
	"errors"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/consent/consenttest"
	"oauthd/data"
	"oauthd/data/memory"
	"oauthd/data/password"
	"oauthd/issuer"
)

// fakeAuthorizer is an Authorizer whose answers the test sets, and which
// records the decisions it was asked to make.
type fakeAuthorizer struct {
	parse   func(q url.Values) (*issuer.AuthorizeRequest, error)
	approve func(q url.Values, userID int64) (string, error)
	deny    func(q url.Values, userID int64) (string, error)
	// logout answers CheckLogout; nil: no valid hint.
	logout func(q url.Values) *issuer.LogoutRequest
	// lastLogin is the Login of the last ApproveLogin.
	lastLogin issuer.Login

	mu        sync.Mutex
	approvals []decision
	denials   []decision
}

type decision struct {
	Q      url.Values
	UserID int64
}

func (f *fakeAuthorizer) ParseAuthorize(_ context.Context, q url.Values) (*issuer.AuthorizeRequest, error) {
	return f.parse(q)
}

func (f *fakeAuthorizer) CheckAuthorize(_ context.Context, q url.Values) (*issuer.AuthorizeRequest, error) {
	return f.parse(q)
}

func (f *fakeAuthorizer) Approve(_ context.Context, q url.Values, userID int64) (string, error) {
	f.mu.Lock()
	f.approvals = append(f.approvals, decision{q, userID})
	f.mu.Unlock()
	return f.approve(q, userID)
}

func (f *fakeAuthorizer) ApproveLogin(ctx context.Context, q url.Values, login issuer.Login) (string, error) {
	f.mu.Lock()
	f.lastLogin = login
	f.mu.Unlock()
	return f.Approve(ctx, q, login.UserID)
}

// Interact is the issuer's rule without OpenID Connect: log in when
// nobody is, else the consent page.
func (f *fakeAuthorizer) Interact(_ context.Context, _ *issuer.AuthorizeRequest, login *issuer.Login) (issuer.Step, error) {
	if login == nil {
		return issuer.StepLogin, nil
	}
	return issuer.StepConsent, nil
}

func (f *fakeAuthorizer) AfterLogin(ar *issuer.AuthorizeRequest) url.Values { return ar.Query }

func (f *fakeAuthorizer) CheckLogout(_ context.Context, q url.Values) (*issuer.LogoutRequest, error) {
	if f.logout != nil {
		return f.logout(q), nil
	}
	return &issuer.LogoutRequest{}, nil
}

func (f *fakeAuthorizer) Deny(_ context.Context, q url.Values, userID int64) (string, error) {
	f.mu.Lock()
	f.denials = append(f.denials, decision{q, userID})
	f.mu.Unlock()
	return f.deny(q, userID)
}

func (f *fakeAuthorizer) counts() (approvals, denials int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.approvals), len(f.denials)
}

// testClient is the client the default fake authorizer knows.
var testClient = data.Client{
	ID:           "cl_test",
	Name:         "Acme Calendar Sync",
	OwnerID:      2, // bob (newEnv)
	Type:         data.Confidential,
	RedirectURIs: []string{"https://app.acme.example/callback"},
	Scopes:       []string{"BOOKING_READ", "PROFILE_READ", "TEAM_BOOKING_READ", "ORG_MEMBERSHIP_READ"},
	Status:       data.StatusApproved,
}

// defaultParse accepts a request for cl_test like the issuer would.
func defaultParse(client data.Client) func(url.Values) (*issuer.AuthorizeRequest, error) {
	return func(q url.Values) (*issuer.AuthorizeRequest, error) {
		if q.Get("client_id") != client.ID {
			return nil, issuer.NewPageError("Unknown application", "No application has this client_id.")
		}
		if q.Get("redirect_uri") != client.RedirectURIs[0] {
			return nil, issuer.NewPageError("Wrong redirect address", "The redirect_uri is not registered for this application.")
		}
		if q.Get("scope") == "BAD" {
			return nil, &issuer.RedirectError{URL: client.RedirectURIs[0] + "?error=invalid_scope&state=" + url.QueryEscape(q.Get("state")), Err: issuer.ErrInvalidScope}
		}
		scopes := strings.Fields(q.Get("scope"))
		return &issuer.AuthorizeRequest{
			Client:       client,
			RedirectURI:  q.Get("redirect_uri"),
			State:        q.Get("state"),
			Scopes:       scopes,
			Unrestricted: client.Legacy && len(scopes) == 0,
			Query:        q,
			LoginHint:    q.Get("login_hint"),
		}, nil
	}
}

func newFake(client data.Client) *fakeAuthorizer {
	return &fakeAuthorizer{
		parse: defaultParse(client),
		approve: func(q url.Values, _ int64) (string, error) {
			return q.Get("redirect_uri") + "?code=oauthd_ac_test&state=" + url.QueryEscape(q.Get("state")), nil
		},
		deny: func(q url.Values, _ int64) (string, error) {
			return q.Get("redirect_uri") + "?error=access_denied&state=" + url.QueryEscape(q.Get("state")), nil
		},
	}
}

// env is one handler on a fresh memory store with two users.
type env struct {
	t     testing.TB
	store *memory.Store
	authz *fakeAuthorizer
	h     *Handler
	e     *echo.Echo
	now   time.Time
	nowMu sync.Mutex
	alice data.User
	bob   data.User
}

const (
	alicePassword = "alice-secret-password"
	bobPassword   = "bob-secret-password"
)

// user hashes are computed once: argon2id is deliberately slow.
var (
	hashOnce             sync.Once
	aliceHash, bobHashed string
)

func newEnv(t testing.TB, appURL string) *env {
	t.Helper()
	hashOnce.Do(func() {
		aliceHash, _ = password.Hash(alicePassword)
		bobHashed, _ = password.Hash(bobPassword)
	})
	ctx := context.Background()
	en := &env{t: t, store: memory.New(), authz: newFake(testClient),
		now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	t.Cleanup(func() { en.store.Close() })
	var err error
	en.alice, err = en.store.CreateUser(ctx, data.User{Email: "alice@example.com", Username: "alice", Name: "Alice Example", PasswordHash: aliceHash})
	if err != nil {
		t.Fatal(err)
	}
	en.bob, err = en.store.CreateUser(ctx, data.User{Email: "bob@example.com", Username: "bob", Name: "Bob <b>Builder</b>", PasswordHash: bobHashed})
	if err != nil {
		t.Fatal(err)
	}
	en.h, err = New(Config{
		Store:      en.store,
		Authorizer: en.authz,
		Logger:     slog.New(slog.DiscardHandler),
		Now:        en.clock,
		AppURL:     appURL,
	})
	if err != nil {
		t.Fatal(err)
	}
	en.e = echo.New()
	en.h.Register(en.e)
	return en
}

func (en *env) clock() time.Time {
	en.nowMu.Lock()
	defer en.nowMu.Unlock()
	return en.now
}

func (en *env) advance(d time.Duration) {
	en.nowMu.Lock()
	en.now = en.now.Add(d)
	en.nowMu.Unlock()
}

// serve sends req through the router.
func (en *env) serve(req *http.Request) *httptest.ResponseRecorder {
	return consenttest.Serve(en.e, req)
}

func (en *env) get(target string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	return consenttest.Get(en.e, target, cookies...)
}

func (en *env) post(target string, form url.Values, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	return consenttest.Post(en.e, target, form, cookies...)
}

// cookie returns the response's cookie named name, with or without the
// __Host- prefix (the pages use it when AppURL is https).
func cookie(rec *httptest.ResponseRecorder, name string) *http.Cookie {
	return consenttest.Cookie(rec, name)
}

// loginForm fetches the login page and returns its CSRF cookie and token.
func (en *env) loginForm() (*http.Cookie, string) {
	en.t.Helper()
	return consenttest.LoginForm(en.t, en.e)
}

// login logs in and returns the session cookie.
func (en *env) login(login, pw string, extra ...*http.Cookie) *http.Cookie {
	en.t.Helper()
	ck, tok := en.loginForm()
	rec := en.post("/auth/login", url.Values{"login": {login}, "password": {pw}, csrfField: {tok}}, append(extra, ck)...)
	if rec.Code != http.StatusOK {
		en.t.Fatalf("login %s: status %d; want 200\n%s", login, rec.Code, rec.Body)
	}
	sc := cookie(rec, sessionCookie)
	if sc == nil {
		en.t.Fatal("login set no session cookie")
	}
	return sc
}

// authorizeQuery is a valid request for testClient.
func authorizeQuery() url.Values {
	return url.Values{
		"client_id":             {testClient.ID},
		"redirect_uri":          {testClient.RedirectURIs[0]},
		"state":                 {"xyz"},
		"scope":                 {"PROFILE_READ ORG_MEMBERSHIP_READ BOOKING_READ TEAM_BOOKING_READ"},
		"response_type":         {"code"},
		"code_challenge":        {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"},
		"code_challenge_method": {"S256"},
	}
}

// consentForm fetches the consent page with the session and returns the
// decision form's fields.
func (en *env) consentForm(sess *http.Cookie) url.Values {
	en.t.Helper()
	rec := en.get(authorizePath+"?"+authorizeQuery().Encode(), sess)
	if rec.Code != http.StatusOK {
		en.t.Fatalf("consent page: status %d\n%s", rec.Code, rec.Body)
	}
	return decisionFields(en.t, rec.Body.String())
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`)

// decisionFields parses the hidden fields of the decision form.
func decisionFields(t testing.TB, body string) url.Values {
	t.Helper()
	i := strings.Index(body, `class="decision"`)
	if i < 0 {
		t.Fatalf("no decision form in page:\n%s", body)
	}
	f := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(body[i:], -1) {
		f.Add(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	return f
}

func errorsIsNotFound(err error) bool { return errors.Is(err, data.ErrNotFound) }
