package datatest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"oauthd/data"
)

// t0 is the suite's fixed clock. Storage never reads the clock; tests pass
// times explicitly.
var t0 = time.Date(2025, 3, 14, 9, 26, 53, 589793238, time.UTC)

// RunStoreTests runs the conformance suite. newStore returns a fresh, empty
// store for each subtest; the suite closes it (Close may be called twice).
func RunStoreTests(t *testing.T, newStore func(t *testing.T) data.Store) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s data.Store)
	}{
		{"Users", testUsers},
		{"CreateUsersAllOrNothing", testCreateUsers},
		{"UpdateUser", testUpdateUser},
		{"DisableUserRevokes", testDisableUser},
		{"Nonces", testNonces},
		{"Clients", testClients},
		{"ClientRulesAtCreate", testClientRulesAtCreate},
		{"ClientRulesAtUpdate", testClientRulesAtUpdate},
		{"ClientStatusTransitions", testClientStatusTransitions},
		{"ClientUpdateErrorWritesNothing", testClientUpdateErrorWritesNothing},
		{"ClientSecretsConcurrent", testClientSecretsConcurrent},
		{"AuthCodeSingleUse", testAuthCodeSingleUse},
		{"AuthCodeExchangeErrorWritesNothing", testAuthCodeExchangeError},
		{"AuthCodeConcurrentExchange", testAuthCodeConcurrent},
		{"RotateRefreshToken", testRotate},
		{"RotateReuseRevokesFamily", testRotateReuse},
		{"RotateUpdateErrorWritesNothing", testRotateUpdateError},
		{"RotateConcurrent", testRotateConcurrent},
		{"RotateUpdateDecidesReuse", testRotateUpdateDecidesReuse},
		{"RotateKeepsGraceFields", testRotateGraceFields},
		{"RotateCannotChangeIDs", testRotateCannotChangeIDs},
		{"Families", testFamilies},
		{"RevocationTombstones", testRevocations},
		{"Grants", testGrants},
		{"Sessions", testSessions},
		{"Keys", testKeys},
		{"KeysConcurrentPromote", testKeysConcurrent},
		{"NoncesOnce", testNoncesOnce},
		{"NoncesConcurrent", testNoncesConcurrent},
		{"GarbageCollect", testGC},
		{"TimesRoundTripInUTC", testUTC},
		{"CopiesAreIndependent", testCopies},
		{"CancelledContext", testCancelled},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() { s.Close() })
			tc.run(t, s)
		})
	}
}

// Fixtures.

func newClient(id string) data.Client {
	return data.Client{
		ID:           id,
		Name:         "Client " + id,
		Owner:        "dev@example.com",
		Type:         data.Confidential,
		RedirectURIs: []string{"https://app.example.com/callback", "http://127.0.0.1:8080/cb"},
		Scopes:       []string{"BOOKING_READ", "PROFILE_READ"},
		Status:       data.StatusPending,
		Secrets:      []data.ClientSecret{newSecret("cs_1")},
		CreatedAt:    t0,
		UpdatedAt:    t0,
	}
}

func newSecret(id string) data.ClientSecret {
	return data.ClientSecret{ID: id, Hash: data.Hash(data.NewSecret(data.PrefixClientSecret)), CreatedAt: t0}
}

func newCode(code, clientID string) data.AuthCode {
	return data.AuthCode{
		Hash:          data.AuthCodeKey(code),
		ClientID:      clientID,
		UserID:        1,
		RedirectURI:   "https://app.example.com/callback",
		Scopes:        []string{"BOOKING_READ"},
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		CreatedAt:     t0,
		ExpiresAt:     t0.Add(time.Minute),
	}
}

func newFamily(id, clientID, token string) data.Family {
	return data.Family{
		ID:          id,
		ClientID:    clientID,
		UserID:      1,
		Scopes:      []string{"BOOKING_READ"},
		TokenHash:   data.Hash(token),
		CreatedAt:   t0,
		RotatedAt:   t0,
		ExpiresAt:   t0.Add(24 * time.Hour),
		AbsoluteExp: t0.Add(30 * 24 * time.Hour),
	}
}

// familyFrom is an exchange callback that creates the family id.
func familyFrom(id, token string) func(data.AuthCode) (data.Family, error) {
	return func(c data.AuthCode) (data.Family, error) {
		f := newFamily(id, c.ClientID, token)
		f.CodeHash = c.Hash
		return f, nil
	}
}

// presenting wraps a rotation callback with the check a caller makes when
// token is presented: the family's current token, or else a reuse (which
// has the store delete the family).
func presenting(token string, update func(data.Family) (data.Family, error)) func(data.Family) (data.Family, error) {
	return func(f data.Family) (data.Family, error) {
		if !data.Equal(f.TokenHash, data.Hash(token)) {
			return data.Family{}, fmt.Errorf("family %s: %w", f.ID, data.ErrTokenReused)
		}
		return update(f)
	}
}

// rotateTo is a rotation callback that installs the hash of token.
func rotateTo(token string, now time.Time) func(data.Family) (data.Family, error) {
	return func(f data.Family) (data.Family, error) {
		f.TokenHash = data.Hash(token)
		f.Generation++
		f.RotatedAt = now
		f.ExpiresAt = now.Add(24 * time.Hour)
		return f, nil
	}
}

func mustEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %+v; want %+v", what, got, want)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: error = %v; want errors.Is(err, %v)", what, err, want)
	}
}

var ctx = context.Background()

// Users.

func testUsers(t *testing.T, s data.Store) {
	alice, err := s.CreateUser(ctx, data.User{Email: "Alice@Example.com", Username: "Alice", Name: "Alice A", TimeZone: "Europe/Berlin", PasswordHash: "$argon2id$x", CreatedAt: t0})
	wantErr(t, "CreateUser(alice)", err, nil)
	bob, err := s.CreateUser(ctx, data.User{Email: "bob@example.com", Username: "bob", CreatedAt: t0})
	wantErr(t, "CreateUser(bob)", err, nil)
	if alice.ID != 1 || bob.ID != 2 {
		t.Fatalf("IDs = %d, %d; want 1, 2", alice.ID, bob.ID)
	}
	for _, u := range []data.User{
		{Email: "ALICE@example.COM", Username: "other"},
		{Email: "new@example.com", Username: "aLiCe"},
		{Email: "BOB@EXAMPLE.COM", Username: "bobby"},
	} {
		_, err := s.CreateUser(ctx, u)
		wantErr(t, fmt.Sprintf("CreateUser(%q, %q)", u.Email, u.Username), err, data.ErrExists)
	}
	got, err := s.GetUser(ctx, 1)
	wantErr(t, "GetUser(1)", err, nil)
	mustEqual(t, "GetUser(1)", got, alice)
	for _, login := range []string{"alice@example.com", "ALICE", "Alice@Example.com"} {
		got, err := s.GetUserByLogin(ctx, login)
		wantErr(t, "GetUserByLogin("+login+")", err, nil)
		if got.ID != 1 {
			t.Fatalf("GetUserByLogin(%q).ID = %d; want 1", login, got.ID)
		}
	}
	_, err = s.GetUserByLogin(ctx, "carol")
	wantErr(t, "GetUserByLogin(carol)", err, data.ErrNotFound)
	_, err = s.GetUserByLogin(ctx, "")
	wantErr(t, "GetUserByLogin(empty)", err, data.ErrNotFound)
	_, err = s.GetUser(ctx, 3)
	wantErr(t, "GetUser(3)", err, data.ErrNotFound)
	// A failed create does not use up an ID.
	carol, err := s.CreateUser(ctx, data.User{Email: "carol@example.com", Username: "carol", CreatedAt: t0})
	wantErr(t, "CreateUser(carol)", err, nil)
	if carol.ID != 3 {
		t.Fatalf("carol.ID = %d; want 3", carol.ID)
	}
	list, err := s.ListUsers(ctx)
	wantErr(t, "ListUsers", err, nil)
	mustEqual(t, "ListUsers", list, []data.User{alice, bob, carol})
}

func testCreateUsers(t *testing.T, s data.Store) {
	_, err := s.CreateUser(ctx, data.User{Email: "ann@example.com", Username: "ann", CreatedAt: t0})
	wantErr(t, "CreateUser(ann)", err, nil)
	for _, batch := range [][]data.User{
		{{Email: "x@example.com", Username: "x"}, {Email: "ANN@example.com", Username: "y"}},
		{{Email: "x@example.com", Username: "x"}, {Email: "X@example.com", Username: "z"}},
		{{Email: "x@example.com", ExternalID: "p1"}, {Email: "y@example.com", ExternalID: "p1"}},
	} {
		_, err := s.CreateUsers(ctx, batch)
		wantErr(t, "CreateUsers(clash)", err, data.ErrExists)
		list, _ := s.ListUsers(ctx)
		if len(list) != 1 {
			t.Fatalf("after a refused batch, %d users; want 1 (nothing half-imported)", len(list))
		}
	}
	got, err := s.CreateUsers(ctx, []data.User{
		{Email: "b@example.com", Username: "b", PasswordHash: "$2a$10$x", CreatedAt: t0},
		{Email: "c@example.com", ExternalID: "platform-7", CreatedAt: t0},
	})
	wantErr(t, "CreateUsers", err, nil)
	if len(got) != 2 || got[0].ID != 2 || got[1].ID != 3 {
		t.Fatalf("CreateUsers IDs = %+v; want 2, 3", got)
	}
	u, err := s.GetUserByExternalID(ctx, "platform-7")
	wantErr(t, "GetUserByExternalID", err, nil)
	mustEqual(t, "GetUserByExternalID", u, got[1])
	_, err = s.GetUserByExternalID(ctx, "")
	wantErr(t, "GetUserByExternalID(empty)", err, data.ErrNotFound)
	_, err = s.GetUserByExternalID(ctx, "PLATFORM-7")
	wantErr(t, "GetUserByExternalID(other case)", err, data.ErrNotFound)
}

func testUpdateUser(t *testing.T, s data.Store) {
	a, _ := s.CreateUser(ctx, data.User{Email: "a@example.com", Username: "a", ExternalID: "e-a", CreatedAt: t0})
	_, _ = s.CreateUser(ctx, data.User{Email: "b@example.com", Username: "b", ExternalID: "e-b", CreatedAt: t0})
	for _, change := range []func(*data.User){
		func(u *data.User) { u.Email = "B@example.com" },
		func(u *data.User) { u.Username = "B" },
		func(u *data.User) { u.ExternalID = "e-b" },
	} {
		_, err := s.UpdateUser(ctx, a.ID, func(u data.User) (data.User, error) { change(&u); return u, nil })
		wantErr(t, "UpdateUser(clash)", err, data.ErrExists)
	}
	boom := errors.New("boom")
	_, err := s.UpdateUser(ctx, a.ID, func(u data.User) (data.User, error) { u.Name = "x"; return u, boom })
	wantErr(t, "UpdateUser(error)", err, boom)
	_, err = s.UpdateUser(ctx, 99, func(u data.User) (data.User, error) { return u, nil })
	wantErr(t, "UpdateUser(99)", err, data.ErrNotFound)
	got, err := s.UpdateUser(ctx, a.ID, func(u data.User) (data.User, error) {
		u.Email, u.ExternalID, u.PasswordHash = "a2@example.com", "e-a2", "$argon2id$new"
		return u, nil
	})
	wantErr(t, "UpdateUser", err, nil)
	if back, _ := s.GetUser(ctx, a.ID); back.Email != "a2@example.com" || back.PasswordHash != "$argon2id$new" {
		t.Fatalf("GetUser after update = %+v", back)
	}
	if _, err := s.GetUserByLogin(ctx, "a@example.com"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("the old email still finds the user: %v", err)
	}
	if _, err := s.GetUserByExternalID(ctx, "e-a"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("the old external ID still finds the user: %v", err)
	}
	u, err := s.GetUserByExternalID(ctx, "e-a2")
	wantErr(t, "GetUserByExternalID(new)", err, nil)
	mustEqual(t, "GetUserByExternalID(new)", u, got)
	// The freed email can be taken by another user.
	_, err = s.CreateUser(ctx, data.User{Email: "a@example.com", Username: "a-new", CreatedAt: t0})
	wantErr(t, "CreateUser(freed email)", err, nil)
}

func testDisableUser(t *testing.T, s data.Store) {
	u1, _ := s.CreateUser(ctx, data.User{Email: "one@example.com", Username: "one", CreatedAt: t0})
	u2, _ := s.CreateUser(ctx, data.User{Email: "two@example.com", Username: "two", CreatedAt: t0})
	wantErr(t, "CreateClient", s.CreateClient(ctx, newClient("c1")), nil)
	mine := exchanged(t, s, "fam-1", "c1", "tok-1") // newCode is user 1's
	code := newCode("oauthd_ac_unused", "c1")
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	other := newCode("oauthd_ac_other", "c1")
	other.UserID = u2.ID
	wantErr(t, "CreateAuthCode(other)", s.CreateAuthCode(ctx, other), nil)
	sess := data.Session{Hash: data.Hash("s1"), UserID: u1.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	sess2 := data.Session{Hash: data.Hash("s2"), UserID: u2.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	wantErr(t, "CreateSession", s.CreateSession(ctx, sess), nil)
	wantErr(t, "CreateSession(2)", s.CreateSession(ctx, sess2), nil)
	wantErr(t, "PutGrant", s.PutGrant(ctx, data.Grant{UserID: u1.ID, ClientID: "c1", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0}), nil)

	_, err := s.UpdateUser(ctx, u1.ID, func(u data.User) (data.User, error) {
		u.Disabled, u.DisabledAt = true, t0
		return u, nil
	})
	wantErr(t, "UpdateUser(disable)", err, nil)
	_, err = s.GetFamily(ctx, mine.ID)
	wantErr(t, "GetFamily after disable", err, data.ErrNotFound)
	// The family leaves a tombstone, as any revocation does (the feed).
	revs, err := s.ListRevoked(ctx, t0.Add(-time.Hour))
	wantErr(t, "ListRevoked after disable", err, nil)
	if i := slices.IndexFunc(revs, func(r data.Revocation) bool { return r.GrantID == mine.ID }); i < 0 {
		t.Fatalf("ListRevoked after disable = %+v; want the user's family %s", revs, mine.ID)
	} else if want := data.RevocationOf(mine); revs[i].ClientID != want.ClientID || !revs[i].LastIssuedAt.Truncate(time.Microsecond).Equal(want.LastIssuedAt.Truncate(time.Microsecond)) {
		t.Fatalf("ListRevoked after disable: %+v; want %+v", revs[i], want)
	}
	_, _, err = s.ExchangeAuthCode(ctx, code.Hash, familyFrom("fam-2", "tok-2"))
	wantErr(t, "ExchangeAuthCode after disable", err, data.ErrNotFound)
	_, err = s.GetSession(ctx, sess.Hash)
	wantErr(t, "GetSession after disable", err, data.ErrNotFound)
	_, err = s.GetGrant(ctx, u1.ID, "c1")
	wantErr(t, "GetGrant after disable", err, data.ErrNotFound)
	// Nothing new for a disabled user.
	wantErr(t, "CreateSession(disabled)", s.CreateSession(ctx, data.Session{Hash: data.Hash("s3"), UserID: u1.ID, ExpiresAt: t0.Add(time.Hour)}), data.ErrUserDisabled)
	wantErr(t, "CreateAuthCode(disabled)", s.CreateAuthCode(ctx, newCode("oauthd_ac_new", "c1")), data.ErrUserDisabled)
	wantErr(t, "PutGrant(disabled)", s.PutGrant(ctx, data.Grant{UserID: u1.ID, ClientID: "c1", CreatedAt: t0}), data.ErrUserDisabled)
	// The other user keeps everything.
	_, err = s.GetSession(ctx, sess2.Hash)
	wantErr(t, "GetSession(other user)", err, nil)
	_, _, err = s.ExchangeAuthCode(ctx, other.Hash, familyFrom("fam-3", "tok-3"))
	wantErr(t, "ExchangeAuthCode(other user)", err, nil)
	// Enabling restores what may be made, not what was revoked.
	back, err := s.UpdateUser(ctx, u1.ID, func(u data.User) (data.User, error) {
		u.Disabled, u.DisabledAt = false, time.Time{}
		return u, nil
	})
	wantErr(t, "UpdateUser(enable)", err, nil)
	if back.Disabled {
		t.Fatal("user still disabled after enable")
	}
	wantErr(t, "CreateSession(enabled)", s.CreateSession(ctx, data.Session{Hash: data.Hash("s4"), UserID: u1.ID, ExpiresAt: t0.Add(time.Hour)}), nil)
	_, err = s.GetGrant(ctx, u1.ID, "c1")
	wantErr(t, "GetGrant after enable", err, data.ErrNotFound)
}

func testNonces(t *testing.T, s data.Store) {
	k := []byte("handover\x00iss\x00jti-1")
	wantErr(t, "UseNonce", s.UseNonce(ctx, k, t0.Add(time.Minute)), nil)
	wantErr(t, "UseNonce(again)", s.UseNonce(ctx, k, t0.Add(time.Minute)), data.ErrExists)
	wantErr(t, "UseNonce(other)", s.UseNonce(ctx, []byte("other"), t0.Add(time.Hour)), nil)
	r, err := s.GarbageCollect(ctx, t0.Add(2*time.Minute))
	wantErr(t, "GarbageCollect", err, nil)
	if r.Nonces != 1 {
		t.Fatalf("GarbageCollect removed %d nonces; want 1", r.Nonces)
	}
	wantErr(t, "UseNonce(after GC)", s.UseNonce(ctx, k, t0.Add(3*time.Minute)), nil)
	wantErr(t, "UseNonce(other, kept)", s.UseNonce(ctx, []byte("other"), t0.Add(time.Hour)), data.ErrExists)
}

// Clients.

func testClients(t *testing.T, s data.Store) {
	a, b, c := newClient("a"), newClient("b"), newClient("c")
	b.Status = data.StatusApproved
	c.Type, c.Secrets = data.Public, nil
	for _, cl := range []data.Client{a, b, c} {
		wantErr(t, "CreateClient("+cl.ID+")", s.CreateClient(ctx, cl), nil)
	}
	wantErr(t, "CreateClient(a) again", s.CreateClient(ctx, newClient("a")), data.ErrExists)
	got, err := s.GetClient(ctx, "a")
	wantErr(t, "GetClient(a)", err, nil)
	mustEqual(t, "GetClient(a)", got, a)
	_, err = s.GetClient(ctx, "zzz")
	wantErr(t, "GetClient(zzz)", err, data.ErrNotFound)

	all, err := s.ListClients(ctx, "")
	wantErr(t, "ListClients", err, nil)
	mustEqual(t, "ListClients(all)", all, []data.Client{a, b, c})
	pending, err := s.ListClients(ctx, data.StatusPending)
	wantErr(t, "ListClients(pending)", err, nil)
	mustEqual(t, "ListClients(pending)", pending, []data.Client{a, c})
	rejected, err := s.ListClients(ctx, data.StatusRejected)
	wantErr(t, "ListClients(rejected)", err, nil)
	if len(rejected) != 0 {
		t.Fatalf("ListClients(rejected) = %v; want none", rejected)
	}

	updated, err := s.UpdateClient(ctx, "a", func(c data.Client) (data.Client, error) {
		c.Status = data.StatusApproved
		c.Name = "Renamed"
		c.Secrets = append(c.Secrets, newSecret("cs_2"))
		c.UpdatedAt = t0.Add(time.Hour)
		return c, nil
	})
	wantErr(t, "UpdateClient(a)", err, nil)
	if updated.Name != "Renamed" || updated.Status != data.StatusApproved || len(updated.Secrets) != 2 {
		t.Fatalf("UpdateClient(a) = %+v", updated)
	}
	got, err = s.GetClient(ctx, "a")
	wantErr(t, "GetClient(a) after update", err, nil)
	mustEqual(t, "GetClient(a) after update", got, updated)
	approved, err := s.ListClients(ctx, data.StatusApproved)
	wantErr(t, "ListClients(approved)", err, nil)
	mustEqual(t, "ListClients(approved)", approved, []data.Client{updated, b})

	_, err = s.UpdateClient(ctx, "zzz", func(c data.Client) (data.Client, error) { return c, nil })
	wantErr(t, "UpdateClient(zzz)", err, data.ErrNotFound)
}

// A ruleCase changes a valid client and says which error the store returns.
type ruleCase struct {
	name   string
	change func(*data.Client)
	want   error
}

var ruleCases = []ruleCase{
	{"valid", func(*data.Client) {}, nil},
	{"ten redirect URIs", func(c *data.Client) {
		c.RedirectURIs = nil
		for i := range data.MaxRedirectURIs {
			c.RedirectURIs = append(c.RedirectURIs, fmt.Sprintf("https://app.example.com/cb%d", i))
		}
	}, nil},
	{"eleven redirect URIs", func(c *data.Client) {
		c.RedirectURIs = nil
		for i := range data.MaxRedirectURIs + 1 {
			c.RedirectURIs = append(c.RedirectURIs, fmt.Sprintf("https://app.example.com/cb%d", i))
		}
	}, data.ErrInvalid},
	{"no redirect URI", func(c *data.Client) { c.RedirectURIs = nil }, data.ErrInvalid},
	{"http on a public host", func(c *data.Client) { c.RedirectURIs = []string{"http://app.example.com/cb"} }, data.ErrInvalid},
	{"http on localhost", func(c *data.Client) { c.RedirectURIs = []string{"http://localhost:3000/cb"} }, nil},
	{"http on ::1", func(c *data.Client) { c.RedirectURIs = []string{"http://[::1]:3000/cb"} }, nil},
	{"fragment", func(c *data.Client) { c.RedirectURIs = []string{"https://app.example.com/cb#x"} }, data.ErrInvalid},
	{"empty fragment", func(c *data.Client) { c.RedirectURIs = []string{"https://app.example.com/cb#"} }, data.ErrInvalid},
	{"duplicate redirect URI", func(c *data.Client) {
		c.RedirectURIs = []string{"https://app.example.com/cb", "https://app.example.com/cb"}
	}, data.ErrInvalid},
	{"javascript URI", func(c *data.Client) { c.RedirectURIs = []string{"javascript:alert(1)"} }, data.ErrInvalid},
	{"data URI", func(c *data.Client) { c.RedirectURIs = []string{"data:text/html,<script>alert(1)</script>"} }, data.ErrInvalid},
	{"relative URI", func(c *data.Client) { c.RedirectURIs = []string{"/callback"} }, data.ErrInvalid},
	{"user info", func(c *data.Client) { c.RedirectURIs = []string{"https://u:p@app.example.com/cb"} }, data.ErrInvalid},
	{"no scope", func(c *data.Client) { c.Scopes = nil }, data.ErrInvalid},
	{"legacy without scopes", func(c *data.Client) { c.Scopes, c.Legacy = nil, true }, nil},
	{"unknown scope", func(c *data.Client) { c.Scopes = []string{"BOOKING_READ", "ADMIN"} }, data.ErrInvalid},
	{"lower-case scope", func(c *data.Client) { c.Scopes = []string{"booking_read"} }, data.ErrInvalid},
	{"duplicate scope", func(c *data.Client) { c.Scopes = []string{"BOOKING_READ", "BOOKING_READ"} }, data.ErrInvalid},
	{"two secrets", func(c *data.Client) { c.Secrets = append(c.Secrets, newSecret("cs_2")) }, nil},
	{"three secrets", func(c *data.Client) {
		c.Secrets = append(c.Secrets, newSecret("cs_2"), newSecret("cs_3"))
	}, data.ErrTooManySecrets},
	{"confidential without secret", func(c *data.Client) { c.Secrets = nil }, data.ErrLastSecret},
	{"empty name", func(c *data.Client) { c.Name = "  " }, data.ErrInvalid},
	{"long name", func(c *data.Client) { c.Name = strings.Repeat("x", data.MaxNameLen+1) }, data.ErrInvalid},
	{"no owner", func(c *data.Client) { c.Owner = "" }, data.ErrInvalid},
	{"rejected without reason", func(c *data.Client) { c.Status = data.StatusRejected }, data.ErrInvalid},
	{"rejected with reason", func(c *data.Client) { c.Status, c.RejectReason = data.StatusRejected, "spam" }, nil},
	{"unknown status", func(c *data.Client) { c.Status = "archived" }, data.ErrInvalid},
}

func testClientRulesAtCreate(t *testing.T, s data.Store) {
	for i, tc := range ruleCases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(fmt.Sprintf("c%d", i))
			tc.change(&c)
			err := s.CreateClient(ctx, c)
			wantErr(t, "CreateClient", err, tc.want)
			_, gerr := s.GetClient(ctx, c.ID)
			if tc.want != nil {
				wantErr(t, "GetClient after a refused create", gerr, data.ErrNotFound)
			} else {
				wantErr(t, "GetClient", gerr, nil)
			}
		})
	}
	t.Run("public with secret", func(t *testing.T) {
		c := newClient("pub")
		c.Type = data.Public
		wantErr(t, "CreateClient", s.CreateClient(ctx, c), data.ErrInvalid)
	})
	t.Run("no ID", func(t *testing.T) {
		wantErr(t, "CreateClient", s.CreateClient(ctx, newClient("")), data.ErrInvalid)
	})
	t.Run("RuleError says which field", func(t *testing.T) {
		c := newClient("re")
		c.Scopes = []string{"NOPE"}
		var re *data.RuleError
		if err := s.CreateClient(ctx, c); !errors.As(err, &re) || re.Field != "scopes" {
			t.Fatalf("CreateClient = %v; want a *data.RuleError on scopes", err)
		}
	})
}

func testClientRulesAtUpdate(t *testing.T, s data.Store) {
	for i, tc := range ruleCases {
		if tc.name == "legacy without scopes" {
			tc.want = data.ErrInvalid // a scoped client cannot become legacy
		}
		t.Run(tc.name, func(t *testing.T) {
			orig := newClient(fmt.Sprintf("u%d", i))
			wantErr(t, "CreateClient", s.CreateClient(ctx, orig), nil)
			want := orig
			got, err := s.UpdateClient(ctx, orig.ID, func(c data.Client) (data.Client, error) {
				tc.change(&c)
				want = c
				return c, nil
			})
			wantErr(t, "UpdateClient", err, tc.want)
			stored, gerr := s.GetClient(ctx, orig.ID)
			wantErr(t, "GetClient", gerr, nil)
			if tc.want != nil {
				mustEqual(t, "client after a refused update", stored, orig)
				return
			}
			mustEqual(t, "UpdateClient result", got, want)
			mustEqual(t, "client after update", stored, want)
		})
	}
	immutable := []ruleCase{
		{"change ID", func(c *data.Client) { c.ID = "other" }, data.ErrInvalid},
		{"change type", func(c *data.Client) { c.Type, c.Secrets = data.Public, nil }, data.ErrInvalid},
		{"change creation time", func(c *data.Client) { c.CreatedAt = c.CreatedAt.Add(time.Second) }, data.ErrInvalid},
		{"become legacy", func(c *data.Client) { c.Legacy = true }, data.ErrInvalid},
		{"pending change that adds nothing", func(c *data.Client) {
			c.Pending = &data.ClientChange{AddScopes: []string{"PROFILE_READ"}, ProposedBy: "dev", ProposedAt: t0}
		}, data.ErrInvalid},
	}
	for i, tc := range immutable {
		t.Run(tc.name, func(t *testing.T) {
			orig := newClient(fmt.Sprintf("i%d", i))
			orig.Status = data.StatusApproved // the type of a client under review may change
			wantErr(t, "CreateClient", s.CreateClient(ctx, orig), nil)
			_, err := s.UpdateClient(ctx, orig.ID, func(c data.Client) (data.Client, error) {
				tc.change(&c)
				return c, nil
			})
			wantErr(t, "UpdateClient", err, tc.want)
			stored, _ := s.GetClient(ctx, orig.ID)
			mustEqual(t, "client after a refused update", stored, orig)
			_, err = s.GetClient(ctx, "other")
			wantErr(t, "GetClient(other)", err, data.ErrNotFound)
		})
	}
	t.Run("pending change round-trips and its approval changes the type", func(t *testing.T) {
		orig := newClient("pc")
		orig.Status = data.StatusApproved
		wantErr(t, "CreateClient", s.CreateClient(ctx, orig), nil)
		p := &data.ClientChange{AddScopes: []string{"TEAM_BOOKING_READ"}, AddRedirectURIs: []string{"https://new.example.com/cb"},
			Type: data.Public, ProposedBy: "user 1 (settings page)", ProposedAt: t0.Add(time.Minute)}
		want, err := s.UpdateClient(ctx, orig.ID, func(c data.Client) (data.Client, error) {
			c.Pending = p
			c.RejectedChange = &data.ClientChange{AddScopes: []string{"ORG_BOOKING_READ"}, ProposedBy: "x", ProposedAt: t0, RejectReason: "no"}
			return c, nil
		})
		wantErr(t, "UpdateClient", err, nil)
		stored, err := s.GetClient(ctx, orig.ID)
		wantErr(t, "GetClient", err, nil)
		mustEqual(t, "client with a pending change", stored, want)
		if stored.Pending == nil || stored.Type != data.Confidential || len(stored.Scopes) != 2 {
			t.Fatalf("stored = %+v; want the approved settings and the pending change beside them", stored)
		}
		got, err := s.UpdateClient(ctx, orig.ID, func(c data.Client) (data.Client, error) { return c.WithPending(), nil })
		wantErr(t, "UpdateClient (approve)", err, nil)
		if got.Pending != nil || got.Type != data.Public || len(got.Secrets) != 0 || len(got.Scopes) != 3 || len(got.RedirectURIs) != 3 {
			t.Fatalf("after approval = %+v", got)
		}
	})
	t.Run("legacy client saves scopes", func(t *testing.T) {
		orig := newClient("legacy")
		orig.Legacy, orig.Scopes = true, nil
		wantErr(t, "CreateClient", s.CreateClient(ctx, orig), nil)
		got, err := s.UpdateClient(ctx, orig.ID, func(c data.Client) (data.Client, error) {
			c.Legacy, c.Scopes = false, []string{"PROFILE_READ"}
			return c, nil
		})
		wantErr(t, "UpdateClient", err, nil)
		if got.Legacy || len(got.Scopes) != 1 {
			t.Fatalf("UpdateClient = %+v; want scoped", got)
		}
	})
}

func testClientStatusTransitions(t *testing.T, s data.Store) {
	tests := []struct {
		from, to data.ClientStatus
		want     error
	}{
		{data.StatusPending, data.StatusApproved, nil},
		{data.StatusPending, data.StatusRejected, nil},
		{data.StatusApproved, data.StatusRejected, nil},
		{data.StatusRejected, data.StatusApproved, nil},
		{data.StatusApproved, data.StatusApproved, nil},
		{data.StatusApproved, data.StatusPending, data.ErrConflict},
		{data.StatusRejected, data.StatusPending, data.ErrConflict},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprintf("%s to %s", tc.from, tc.to), func(t *testing.T) {
			orig := newClient(fmt.Sprintf("s%d", i))
			orig.Status = tc.from
			if tc.from == data.StatusRejected {
				orig.RejectReason = "incomplete"
			}
			wantErr(t, "CreateClient", s.CreateClient(ctx, orig), nil)
			_, err := s.UpdateClient(ctx, orig.ID, func(c data.Client) (data.Client, error) {
				c.Status = tc.to
				c.RejectReason = ""
				if tc.to == data.StatusRejected {
					c.RejectReason = "phishing"
				}
				return c, nil
			})
			wantErr(t, "UpdateClient", err, tc.want)
			got, _ := s.GetClient(ctx, orig.ID)
			want := tc.to
			if tc.want != nil {
				want = tc.from
			}
			if got.Status != want {
				t.Fatalf("status = %s; want %s", got.Status, want)
			}
		})
	}
}

func testClientUpdateErrorWritesNothing(t *testing.T, s data.Store) {
	orig := newClient("a")
	wantErr(t, "CreateClient", s.CreateClient(ctx, orig), nil)
	boom := errors.New("boom")
	_, err := s.UpdateClient(ctx, "a", func(c data.Client) (data.Client, error) {
		c.Name = "changed"
		c.Scopes[0] = "PROFILE_WRITE" // changes the argument in place, then fails
		return c, boom
	})
	wantErr(t, "UpdateClient", err, boom)
	got, _ := s.GetClient(ctx, "a")
	mustEqual(t, "client after a failed update", got, orig)
}

func testClientSecretsConcurrent(t *testing.T, s data.Store) {
	wantErr(t, "CreateClient", s.CreateClient(ctx, newClient("a")), nil)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.UpdateClient(ctx, "a", func(c data.Client) (data.Client, error) {
				c.Secrets = append(c.Secrets, newSecret(fmt.Sprintf("cs_g%d", i)))
				return c, nil
			})
		})
	}
	wg.Wait()
	ok := raceOutcomes(t, "UpdateClient", errs, data.ErrTooManySecrets)
	got, _ := s.GetClient(ctx, "a")
	if ok != 1 || len(got.Secrets) != data.MaxActiveSecrets {
		t.Fatalf("%d updates succeeded, client has %d secrets; want 1 and %d", ok, len(got.Secrets), data.MaxActiveSecrets)
	}
}

// Authorization codes.

func testAuthCodeSingleUse(t *testing.T, s data.Store) {
	code := newCode("oauthd_ac_one", "a")
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	wantErr(t, "CreateAuthCode again", s.CreateAuthCode(ctx, code), data.ErrExists)

	var seen data.AuthCode
	gotCode, fam, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		seen = c
		return familyFrom("fam1", "rt1")(c)
	})
	wantErr(t, "ExchangeAuthCode", err, nil)
	mustEqual(t, "code seen by exchange", seen, code)
	if !gotCode.Used || gotCode.FamilyID != "fam1" || fam.ID != "fam1" {
		t.Fatalf("ExchangeAuthCode = %+v, %+v; want a used code naming fam1", gotCode, fam)
	}
	stored, err := s.GetFamily(ctx, "fam1")
	wantErr(t, "GetFamily", err, nil)
	mustEqual(t, "stored family", stored, fam)

	called := false
	again, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		called = true
		return familyFrom("fam2", "rt2")(c)
	})
	wantErr(t, "second ExchangeAuthCode", err, data.ErrCodeUsed)
	if called {
		t.Fatal("second ExchangeAuthCode called exchange")
	}
	if again.FamilyID != "fam1" || !again.Used {
		t.Fatalf("second ExchangeAuthCode code = %+v; want FamilyID fam1", again)
	}
	_, err = s.GetFamily(ctx, "fam2")
	wantErr(t, "GetFamily(fam2)", err, data.ErrNotFound)

	_, _, err = s.ExchangeAuthCode(ctx, data.Hash("oauthd_ac_unknown"), familyFrom("fam3", "rt3"))
	wantErr(t, "ExchangeAuthCode(unknown)", err, data.ErrNotFound)

	// A family ID that exists already is refused, and the code stays unused.
	other := newCode("oauthd_ac_two", "a")
	wantErr(t, "CreateAuthCode(two)", s.CreateAuthCode(ctx, other), nil)
	_, _, err = s.ExchangeAuthCode(ctx, other.Hash, familyFrom("fam1", "rt4"))
	wantErr(t, "ExchangeAuthCode onto an existing family", err, data.ErrExists)
	_, _, err = s.ExchangeAuthCode(ctx, other.Hash, familyFrom("fam4", "rt4"))
	wantErr(t, "ExchangeAuthCode(two) after the refusal", err, nil)
}

func testAuthCodeExchangeError(t *testing.T, s data.Store) {
	code := newCode("oauthd_ac_one", "a")
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	boom := errors.New("invalid_grant: redirect_uri mismatch")
	_, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		c.Scopes[0] = "ORG_BOOKING_WRITE" // mutates its copy, then fails
		return data.Family{ID: "fam1"}, boom
	})
	wantErr(t, "ExchangeAuthCode", err, boom)
	if _, err := s.GetFamily(ctx, "fam1"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("GetFamily after a failed exchange: %v; want ErrNotFound", err)
	}
	// The code is still unused and unchanged: the next exchange sees it as created.
	_, _, err = s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		mustEqual(t, "code after a failed exchange", c, code)
		return familyFrom("fam2", "rt")(c)
	})
	wantErr(t, "ExchangeAuthCode after a failed one", err, nil)
}

func testAuthCodeConcurrent(t *testing.T, s data.Store) {
	code := newCode("oauthd_ac_race", "a")
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, _, errs[i] = s.ExchangeAuthCode(ctx, code.Hash, familyFrom(fmt.Sprintf("fam%d", i), "rt"))
		})
	}
	wg.Wait()
	ok := raceOutcomes(t, "ExchangeAuthCode", errs, data.ErrCodeUsed)
	fams, err := s.ListFamilies(ctx, "")
	wantErr(t, "ListFamilies", err, nil)
	if ok != 1 || len(fams) != 1 {
		t.Fatalf("%d exchanges succeeded, %d families stored; want 1 and 1", ok, len(fams))
	}
}

// Refresh-token families.

// exchanged stores a code and exchanges it for family id with token.
func exchanged(t *testing.T, s data.Store, id, clientID, token string) data.Family {
	t.Helper()
	code := newCode("oauthd_ac_"+id, clientID)
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	_, f, err := s.ExchangeAuthCode(ctx, code.Hash, familyFrom(id, token))
	wantErr(t, "ExchangeAuthCode", err, nil)
	return f
}

func testRotate(t *testing.T, s data.Store) {
	exchanged(t, s, "fam", "a", "rt0")
	t1 := t0.Add(time.Hour)
	got, err := s.RotateRefreshToken(ctx, "fam", presenting("rt0", rotateTo("rt1", t1)))
	wantErr(t, "RotateRefreshToken", err, nil)
	if !data.Equal(got.TokenHash, data.Hash("rt1")) || got.Generation != 1 || !got.RotatedAt.Equal(t1) {
		t.Fatalf("RotateRefreshToken = %+v; want rt1, generation 1", got)
	}
	stored, err := s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily", err, nil)
	mustEqual(t, "stored family", stored, got)
	got, err = s.RotateRefreshToken(ctx, "fam", presenting("rt1", rotateTo("rt2", t1.Add(time.Hour))))
	wantErr(t, "second RotateRefreshToken", err, nil)
	if got.Generation != 2 {
		t.Fatalf("Generation = %d; want 2", got.Generation)
	}
	_, err = s.RotateRefreshToken(ctx, "nope", presenting("rt0", rotateTo("x", t1)))
	wantErr(t, "RotateRefreshToken(unknown)", err, data.ErrNotFound)
}

func testRotateReuse(t *testing.T, s data.Store) {
	exchanged(t, s, "fam", "a", "rt0")
	exchanged(t, s, "other", "a", "rtX")
	_, err := s.RotateRefreshToken(ctx, "fam", presenting("rt0", rotateTo("rt1", t0)))
	wantErr(t, "RotateRefreshToken", err, nil)
	called := false
	old, err := s.RotateRefreshToken(ctx, "fam", presenting("rt0", func(f data.Family) (data.Family, error) {
		called = true
		return f, nil
	}))
	wantErr(t, "RotateRefreshToken(rotated-away token)", err, data.ErrTokenReused)
	if called {
		t.Fatal("a reused token called update")
	}
	if old.ID != "fam" || !data.Equal(old.TokenHash, data.Hash("rt1")) {
		t.Fatalf("RotateRefreshToken returned %+v; want the revoked family", old)
	}
	_, err = s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily after reuse", err, data.ErrNotFound)
	_, err = s.RotateRefreshToken(ctx, "fam", presenting("rt1", rotateTo("rt2", t0)))
	wantErr(t, "RotateRefreshToken with the current token after reuse", err, data.ErrNotFound)
	_, err = s.GetFamily(ctx, "other")
	wantErr(t, "GetFamily(other)", err, nil)
}

func testRotateUpdateError(t *testing.T, s data.Store) {
	orig := exchanged(t, s, "fam", "a", "rt0")
	boom := errors.New("invalid_grant: expired")
	_, err := s.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) {
		f.TokenHash = data.Hash("rt1")
		f.Scopes[0] = "ORG_BOOKING_WRITE"
		return f, boom
	})
	wantErr(t, "RotateRefreshToken", err, boom)
	got, err := s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily", err, nil)
	mustEqual(t, "family after a failed rotation", got, orig)
	_, err = s.RotateRefreshToken(ctx, "fam", presenting("rt0", rotateTo("rt1", t0)))
	wantErr(t, "RotateRefreshToken after a failed one", err, nil)
}

func testRotateConcurrent(t *testing.T, s data.Store) {
	exchanged(t, s, "fam", "a", "rt0")
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.RotateRefreshToken(ctx, "fam", presenting("rt0", rotateTo(fmt.Sprintf("rt%d", i+1), t0)))
		})
	}
	wg.Wait()
	ok := raceOutcomes(t, "RotateRefreshToken", errs, data.ErrTokenReused, data.ErrNotFound)
	reused := 0
	for _, err := range errs {
		if errors.Is(err, data.ErrTokenReused) {
			reused++
		}
	}
	if ok != 1 || reused < 1 {
		t.Fatalf("%d rotations succeeded, %d saw reuse; want exactly 1 and at least 1", ok, reused)
	}
	_, err := s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily after the race", err, data.ErrNotFound)
}

// The store makes no decision of its own: an update that returns
// ErrTokenReused (wrapped) has the family deleted, whatever was presented.
func testRotateUpdateDecidesReuse(t *testing.T, s data.Store) {
	orig := exchanged(t, s, "fam", "a", "rt0")
	exchanged(t, s, "other", "a", "rtX")
	reused := fmt.Errorf("replay of generation 0: %w", data.ErrTokenReused)
	var saw data.Family
	got, err := s.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) {
		saw = f
		f.Scopes[0] = "ORG_BOOKING_WRITE" // the record returned is the stored one, not this
		return f, reused
	})
	wantErr(t, "RotateRefreshToken", err, data.ErrTokenReused)
	if err.Error() != reused.Error() {
		t.Fatalf("RotateRefreshToken error = %q; want update's %q", err, reused)
	}
	mustEqual(t, "update's argument", saw.ID, orig.ID)
	mustEqual(t, "the revoked family returned", got, orig)
	_, err = s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily after a revoking update", err, data.ErrNotFound)
	ofA, err := s.ListFamilies(ctx, "a")
	wantErr(t, "ListFamilies(a)", err, nil)
	if len(ofA) != 1 || ofA[0].ID != "other" {
		t.Fatalf("ListFamilies(a) after a revoking update = %+v; want only other", ofA)
	}
	_, err = s.RotateRefreshToken(ctx, "fam", rotateTo("rt1", t0))
	wantErr(t, "RotateRefreshToken after the revocation", err, data.ErrNotFound)
}

// Tagged, PrevHash and LegacyHash are stored by a rotation, read back by
// every read, and cleared again (nil) when the update clears them.
func testRotateGraceFields(t *testing.T, s data.Store) {
	exchanged(t, s, "fam", "a", "rt0")
	got, err := s.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) {
		if f.Tagged || f.PrevHash != nil || f.LegacyHash != nil {
			t.Errorf("new family = %+v; want Tagged false, no PrevHash, no LegacyHash", f)
		}
		f.Tagged = true
		f.PrevHash, f.LegacyHash = data.Hash("rt0"), data.Hash("legacy")
		f.TokenHash = data.Hash("rt1")
		f.Scopes = []string{"PROFILE_READ"}
		f.JKT = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
		return f, nil
	})
	wantErr(t, "RotateRefreshToken", err, nil)
	stored, err := s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily", err, nil)
	mustEqual(t, "stored family", stored, got)
	if !stored.Tagged || !data.Equal(stored.PrevHash, data.Hash("rt0")) || !data.Equal(stored.LegacyHash, data.Hash("legacy")) ||
		!slices.Equal(stored.Scopes, []string{"PROFILE_READ"}) || stored.JKT != "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" {
		t.Fatalf("stored family = %+v; want Tagged, PrevHash rt0, LegacyHash legacy, scopes narrowed, the DPoP binding", stored)
	}
	all, err := s.ListFamilies(ctx, "a")
	wantErr(t, "ListFamilies", err, nil)
	mustEqual(t, "ListFamilies", all, []data.Family{got})
	got, err = s.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) {
		mustEqual(t, "update's argument", f, stored)
		f.PrevHash = nil
		f.TokenHash = data.Hash("rt2")
		return f, nil
	})
	wantErr(t, "second RotateRefreshToken", err, nil)
	stored, _ = s.GetFamily(ctx, "fam")
	mustEqual(t, "family after clearing PrevHash", stored, got)
	if stored.PrevHash != nil || !stored.Tagged || stored.LegacyHash == nil {
		t.Fatalf("family after clearing PrevHash = %+v", stored)
	}
}

func testRotateCannotChangeIDs(t *testing.T, s data.Store) {
	orig := exchanged(t, s, "fam", "a", "rt0")
	for name, change := range map[string]func(*data.Family){
		"client": func(f *data.Family) { f.ClientID = "b" },
		"id":     func(f *data.Family) { f.ID = "fam2" },
	} {
		_, err := s.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) {
			change(&f)
			f.TokenHash = data.Hash("rt1")
			return f, nil
		})
		wantErr(t, "RotateRefreshToken changing the "+name, err, data.ErrInvalid)
		got, err := s.GetFamily(ctx, "fam")
		wantErr(t, "GetFamily", err, nil)
		mustEqual(t, "family after a refused rotation", got, orig)
	}
}

// testRevocations: every delete of a family before its expiry (DeleteFamily,
// and the delete of a reuse in RotateRefreshToken) leaves a tombstone naming
// the family's last issuance; a failed rotation or a family's expiry leaves
// none; ListRevoked filters by LastIssuedAt; GC removes tombstones older
// than RevocationKeep.
func testRevocations(t *testing.T, s data.Store) {
	none, err := s.ListRevoked(ctx, time.Time{})
	wantErr(t, "ListRevoked on an empty store", err, nil)
	if len(none) != 0 {
		t.Fatalf("ListRevoked on an empty store = %v; want none", none)
	}
	exchanged(t, s, "f1", "a", "t1")
	exchanged(t, s, "f2", "b", "t2")
	exchanged(t, s, "f3", "a", "t3")
	t1 := t0.Add(time.Hour)
	_, err = s.RotateRefreshToken(ctx, "f2", presenting("t2", rotateTo("u2", t1)))
	wantErr(t, "RotateRefreshToken(f2)", err, nil)
	// A refused rotation writes nothing, tombstone included.
	_, err = s.RotateRefreshToken(ctx, "f3", func(data.Family) (data.Family, error) { return data.Family{}, data.ErrConflict })
	wantErr(t, "refused RotateRefreshToken(f3)", err, data.ErrConflict)
	wantErr(t, "DeleteFamily(f1)", s.DeleteFamily(ctx, "f1"), nil)
	_, err = s.RotateRefreshToken(ctx, "f2", presenting("t2", rotateTo("x", t1)))
	wantErr(t, "RotateRefreshToken(f2, reused)", err, data.ErrTokenReused)
	all, err := s.ListRevoked(ctx, time.Time{})
	wantErr(t, "ListRevoked", err, nil)
	mustEqual(t, "ListRevoked(all)", all, []data.Revocation{
		{GrantID: "f1", ClientID: "a", LastIssuedAt: t0},
		{GrantID: "f2", ClientID: "b", LastIssuedAt: t1},
	})
	recent, err := s.ListRevoked(ctx, t0.Add(time.Minute))
	wantErr(t, "ListRevoked(since)", err, nil)
	mustEqual(t, "ListRevoked(t0+1m)", recent, []data.Revocation{{GrantID: "f2", ClientID: "b", LastIssuedAt: t1}})
	// A family that expires is not revoked: GC leaves no tombstone. GC
	// drops f1's tombstone (t0 + keep has passed) and keeps f2's.
	now := t0.Add(data.RevocationKeep + time.Minute)
	got, err := s.GarbageCollect(ctx, now)
	wantErr(t, "GarbageCollect", err, nil)
	if got.Revocations != 1 {
		t.Fatalf("GarbageCollect removed %d revocations; want 1 (%+v)", got.Revocations, got)
	}
	all, err = s.ListRevoked(ctx, time.Time{})
	wantErr(t, "ListRevoked after GC", err, nil)
	mustEqual(t, "ListRevoked after GC", all, []data.Revocation{{GrantID: "f2", ClientID: "b", LastIssuedAt: t1}})
}

func testFamilies(t *testing.T, s data.Store) {
	f1 := exchanged(t, s, "f1", "a", "t1")
	f2 := exchanged(t, s, "f2", "b", "t2")
	f3 := exchanged(t, s, "f3", "a", "t3")
	all, err := s.ListFamilies(ctx, "")
	wantErr(t, "ListFamilies", err, nil)
	mustEqual(t, "ListFamilies(all)", all, []data.Family{f1, f2, f3})
	ofA, err := s.ListFamilies(ctx, "a")
	wantErr(t, "ListFamilies(a)", err, nil)
	mustEqual(t, "ListFamilies(a)", ofA, []data.Family{f1, f3})
	none, err := s.ListFamilies(ctx, "c")
	wantErr(t, "ListFamilies(c)", err, nil)
	if len(none) != 0 {
		t.Fatalf("ListFamilies(c) = %v; want none", none)
	}
	wantErr(t, "DeleteFamily(f1)", s.DeleteFamily(ctx, "f1"), nil)
	wantErr(t, "DeleteFamily(f1) again", s.DeleteFamily(ctx, "f1"), data.ErrNotFound)
	_, err = s.GetFamily(ctx, "f1")
	wantErr(t, "GetFamily(f1)", err, data.ErrNotFound)
	ofA, err = s.ListFamilies(ctx, "a")
	wantErr(t, "ListFamilies(a)", err, nil)
	mustEqual(t, "ListFamilies(a) after delete", ofA, []data.Family{f3})
	// A reuse revocation also leaves the client's list.
	_, err = s.RotateRefreshToken(ctx, "f3", presenting("wrong", rotateTo("x", t0)))
	wantErr(t, "RotateRefreshToken(wrong)", err, data.ErrTokenReused)
	ofA, _ = s.ListFamilies(ctx, "a")
	if len(ofA) != 0 {
		t.Fatalf("ListFamilies(a) after reuse = %v; want none", ofA)
	}
}

// Grants and sessions.

func testGrants(t *testing.T, s data.Store) {
	g := data.Grant{UserID: 1, ClientID: "b", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, UpdatedAt: t0}
	wantErr(t, "PutGrant", s.PutGrant(ctx, g), nil)
	got, err := s.GetGrant(ctx, 1, "b")
	wantErr(t, "GetGrant", err, nil)
	mustEqual(t, "GetGrant", got, g)
	g.Scopes = append(g.Scopes, "PROFILE_READ")
	g.UpdatedAt = t0.Add(time.Hour)
	wantErr(t, "PutGrant (replace)", s.PutGrant(ctx, g), nil)
	got, _ = s.GetGrant(ctx, 1, "b")
	mustEqual(t, "GetGrant after replace", got, g)
	ga := data.Grant{UserID: 1, ClientID: "a", Scopes: []string{"PROFILE_READ"}, CreatedAt: t0, UpdatedAt: t0}
	g2 := data.Grant{UserID: 2, ClientID: "a", Scopes: []string{"PROFILE_READ"}, CreatedAt: t0, UpdatedAt: t0}
	wantErr(t, "PutGrant(1, a)", s.PutGrant(ctx, ga), nil)
	wantErr(t, "PutGrant(2, a)", s.PutGrant(ctx, g2), nil)
	list, err := s.ListGrants(ctx, 1)
	wantErr(t, "ListGrants(1)", err, nil)
	mustEqual(t, "ListGrants(1)", list, []data.Grant{ga, g})
	_, err = s.GetGrant(ctx, 2, "b")
	wantErr(t, "GetGrant(2, b)", err, data.ErrNotFound)
	wantErr(t, "DeleteGrant(1, b)", s.DeleteGrant(ctx, 1, "b"), nil)
	wantErr(t, "DeleteGrant(1, b) again", s.DeleteGrant(ctx, 1, "b"), data.ErrNotFound)
	list, _ = s.ListGrants(ctx, 1)
	mustEqual(t, "ListGrants(1) after delete", list, []data.Grant{ga})
	list, _ = s.ListGrants(ctx, 3)
	if len(list) != 0 {
		t.Fatalf("ListGrants(3) = %v; want none", list)
	}
}

func testSessions(t *testing.T, s data.Store) {
	sess := data.Session{Hash: data.Hash("oauthd_ss_1"), UserID: 1, CSRF: "csrf", CreatedAt: t0, ExpiresAt: t0.Add(12 * time.Hour)}
	wantErr(t, "CreateSession", s.CreateSession(ctx, sess), nil)
	wantErr(t, "CreateSession again", s.CreateSession(ctx, sess), data.ErrExists)
	got, err := s.GetSession(ctx, sess.Hash)
	wantErr(t, "GetSession", err, nil)
	mustEqual(t, "GetSession", got, sess)
	_, err = s.GetSession(ctx, data.Hash("oauthd_ss_2"))
	wantErr(t, "GetSession(unknown)", err, data.ErrNotFound)
	wantErr(t, "DeleteSession", s.DeleteSession(ctx, sess.Hash), nil)
	wantErr(t, "DeleteSession again", s.DeleteSession(ctx, sess.Hash), data.ErrNotFound)
	_, err = s.GetSession(ctx, sess.Hash)
	wantErr(t, "GetSession after delete", err, data.ErrNotFound)
}

// Signing keys.

func newKey(kid string, state data.KeyState) data.SigningKey {
	return data.SigningKey{KID: kid, Alg: "ES256", State: state, Private: []byte(`{"d":"` + kid + `"}`), Public: []byte(`{"kid":"` + kid + `"}`), CreatedAt: t0}
}

func testKeys(t *testing.T, s data.Store) {
	empty, err := s.ListKeys(ctx)
	wantErr(t, "ListKeys(empty)", err, nil)
	if len(empty) != 0 {
		t.Fatalf("ListKeys on an empty store = %v", empty)
	}
	var seen []data.SigningKey
	set := []data.SigningKey{newKey("k1", data.KeyActive), newKey("k2", data.KeyNext)}
	got, err := s.UpdateKeys(ctx, func(old []data.SigningKey) ([]data.SigningKey, error) {
		seen = old
		return set, nil
	})
	wantErr(t, "UpdateKeys", err, nil)
	if len(seen) != 0 {
		t.Fatalf("UpdateKeys on an empty store passed %v", seen)
	}
	mustEqual(t, "UpdateKeys", got, set)
	list, _ := s.ListKeys(ctx)
	mustEqual(t, "ListKeys", list, set)

	// The update replaces the whole set.
	set2 := []data.SigningKey{newKey("k3", data.KeyActive)}
	_, err = s.UpdateKeys(ctx, func(old []data.SigningKey) ([]data.SigningKey, error) {
		mustEqual(t, "set passed to update", old, set)
		return set2, nil
	})
	wantErr(t, "UpdateKeys(replace)", err, nil)
	list, _ = s.ListKeys(ctx)
	mustEqual(t, "ListKeys after replace", list, set2)

	boom := errors.New("boom")
	_, err = s.UpdateKeys(ctx, func(old []data.SigningKey) ([]data.SigningKey, error) {
		old[0].State = data.KeyRetired
		return nil, boom
	})
	wantErr(t, "UpdateKeys(error)", err, boom)
	for _, bad := range [][]data.SigningKey{
		{newKey("a", data.KeyActive), newKey("b", data.KeyActive)},
		{newKey("a", data.KeyActive), newKey("a", data.KeyNext)},
		{newKey("", data.KeyActive)},
		{newKey("a", "bogus")},
	} {
		_, err = s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) { return bad, nil })
		wantErr(t, fmt.Sprintf("UpdateKeys(%d keys)", len(bad)), err, data.ErrInvalid)
	}
	list, _ = s.ListKeys(ctx)
	mustEqual(t, "ListKeys after refused updates", list, set2)
}

func testKeysConcurrent(t *testing.T, s data.Store) {
	_, err := s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) {
		return []data.SigningKey{newKey("k0", data.KeyActive), newKey("k1", data.KeyNext)}, nil
	})
	wantErr(t, "UpdateKeys", err, nil)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			// promote: active → retired, next → active, a new next.
			_, errs[i] = s.UpdateKeys(ctx, func(ks []data.SigningKey) ([]data.SigningKey, error) {
				for j := range ks {
					switch ks[j].State {
					case data.KeyActive:
						ks[j].State = data.KeyRetired
					case data.KeyNext:
						ks[j].State = data.KeyActive
					}
				}
				return append(ks, newKey(fmt.Sprintf("g%d-%d", i, len(ks)), data.KeyNext)), nil
			})
		})
	}
	wg.Wait()
	for _, err := range errs {
		wantErr(t, "UpdateKeys(promote)", err, nil)
	}
	ks, _ := s.ListKeys(ctx)
	count := map[data.KeyState]int{}
	for _, k := range ks {
		count[k.State]++
	}
	if count[data.KeyActive] != 1 || count[data.KeyNext] != 1 || count[data.KeyRetired] != n || len(ks) != n+2 {
		t.Fatalf("after %d promotions: %v in %d keys; want 1 active, 1 next, %d retired (a lost update otherwise)", n, count, len(ks), n)
	}
}

// Garbage collection.

func testGC(t *testing.T, s data.Store) {
	now := t0.Add(time.Hour)
	for i, exp := range []time.Duration{-time.Minute, -time.Nanosecond, 0, time.Minute} {
		c := newCode(fmt.Sprintf("oauthd_ac_%d", i), "a")
		c.ExpiresAt = now.Add(exp)
		wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, c), nil)
	}
	// A used code expires like any other.
	used := newCode("oauthd_ac_used", "a")
	used.ExpiresAt = now.Add(-time.Second)
	wantErr(t, "CreateAuthCode(used)", s.CreateAuthCode(ctx, used), nil)
	_, _, err := s.ExchangeAuthCode(ctx, used.Hash, func(c data.AuthCode) (data.Family, error) {
		f := newFamily("live", "a", "rt-live")
		f.ExpiresAt, f.AbsoluteExp = now.Add(time.Hour), now.Add(48*time.Hour)
		return f, nil
	})
	wantErr(t, "ExchangeAuthCode(used)", err, nil)
	fams := []struct {
		id             string
		idle, absolute time.Duration
	}{
		{"idle-expired", -time.Second, time.Hour},
		{"absolute-expired", time.Hour, -time.Second},
		{"both-expired", -time.Hour, -time.Second},
		{"live2", time.Second, time.Hour},
	}
	for _, f := range fams {
		code := newCode("oauthd_ac_f_"+f.id, "a")
		code.ExpiresAt = now.Add(time.Hour)
		wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
		_, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
			fam := newFamily(f.id, "a", "rt-"+f.id)
			fam.ExpiresAt, fam.AbsoluteExp = now.Add(f.idle), now.Add(f.absolute)
			return fam, nil
		})
		wantErr(t, "ExchangeAuthCode", err, nil)
	}
	for i, exp := range []time.Duration{-time.Second, time.Second} {
		sess := data.Session{Hash: data.Hash(fmt.Sprintf("oauthd_ss_%d", i)), UserID: 1, CreatedAt: t0, ExpiresAt: now.Add(exp)}
		wantErr(t, "CreateSession", s.CreateSession(ctx, sess), nil)
	}

	wantErr(t, "UseNonce(expired)", s.UseNonce(ctx, []byte("n-old"), now.Add(-time.Second)), nil)
	wantErr(t, "UseNonce(live)", s.UseNonce(ctx, []byte("n-live"), now.Add(time.Second)), nil)

	got, err := s.GarbageCollect(ctx, now)
	wantErr(t, "GarbageCollect", err, nil)
	mustEqual(t, "GarbageCollect", got, data.GCResult{AuthCodes: 3, Families: 3, Sessions: 1, Nonces: 1})
	// The collected nonce is free again; the live one is still used.
	wantErr(t, "UseNonce(collected)", s.UseNonce(ctx, []byte("n-old"), now.Add(time.Second)), nil)
	wantErr(t, "UseNonce(live again)", s.UseNonce(ctx, []byte("n-live"), now.Add(time.Second)), data.ErrExists)

	for i, live := range []bool{false, false, true, true} {
		_, _, err := s.ExchangeAuthCode(ctx, data.AuthCodeKey(fmt.Sprintf("oauthd_ac_%d", i)), func(c data.AuthCode) (data.Family, error) {
			return data.Family{}, errors.New("probe")
		})
		if gone := errors.Is(err, data.ErrNotFound); gone == live {
			t.Fatalf("code %d: exchange error %v; live = %v", i, err, live)
		}
	}
	left, _ := s.ListFamilies(ctx, "")
	var ids []string
	for _, f := range left {
		ids = append(ids, f.ID)
	}
	mustEqual(t, "families left", ids, []string{"live", "live2"})
	_, err = s.GetSession(ctx, data.Hash("oauthd_ss_0"))
	wantErr(t, "GetSession(expired)", err, data.ErrNotFound)
	_, err = s.GetSession(ctx, data.Hash("oauthd_ss_1"))
	wantErr(t, "GetSession(live)", err, nil)

	again, err := s.GarbageCollect(ctx, now)
	wantErr(t, "GarbageCollect again", err, nil)
	mustEqual(t, "GarbageCollect again", again, data.GCResult{})
}

// testNoncesOnce: a key is used once; another key is independent; an
// empty key is refused.
func testNoncesOnce(t *testing.T, s data.Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Minute)
	wantErr(t, "UseNonce", s.UseNonce(ctx, []byte("jti-1"), exp), nil)
	wantErr(t, "UseNonce(replay)", s.UseNonce(ctx, []byte("jti-1"), exp), data.ErrExists)
	wantErr(t, "UseNonce(other)", s.UseNonce(ctx, []byte("jti-2"), exp), nil)
	wantErr(t, "UseNonce(empty)", s.UseNonce(ctx, nil, exp), data.ErrInvalid)
}

// testNoncesConcurrent: of many concurrent uses of one key exactly one
// succeeds.
func testNoncesConcurrent(t *testing.T, s data.Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Minute)
	const n = 16
	errs := make(chan error, n)
	for range n {
		go func() { errs <- s.UseNonce(ctx, []byte("race"), exp) }()
	}
	ok := 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			ok++
		case !errors.Is(err, data.ErrExists):
			t.Fatalf("UseNonce: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent UseNonce calls succeeded, want 1", ok, n)
	}
}

// Round trips.

func testUTC(t *testing.T, s data.Store) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	local := time.Date(2025, 6, 1, 12, 30, 0, 123456789, zone)
	wantUTC := func(what string, got time.Time) {
		t.Helper()
		if !got.Equal(local) || got.Location() != time.UTC {
			t.Fatalf("%s = %v; want %v in UTC", what, got, local.UTC())
		}
	}
	u, err := s.CreateUser(ctx, data.User{Email: "a@example.com", Username: "a", CreatedAt: local})
	wantErr(t, "CreateUser", err, nil)
	wantUTC("CreateUser().CreatedAt", u.CreatedAt)
	u, _ = s.GetUser(ctx, u.ID)
	wantUTC("User.CreatedAt", u.CreatedAt)

	c := newClient("a")
	c.CreatedAt, c.UpdatedAt, c.Secrets[0].CreatedAt, c.Secrets[0].LastUsedAt = local, local, local, local
	wantErr(t, "CreateClient", s.CreateClient(ctx, c), nil)
	c, _ = s.GetClient(ctx, "a")
	wantUTC("Client.CreatedAt", c.CreatedAt)
	wantUTC("Client.UpdatedAt", c.UpdatedAt)
	wantUTC("ClientSecret.CreatedAt", c.Secrets[0].CreatedAt)
	wantUTC("ClientSecret.LastUsedAt", c.Secrets[0].LastUsedAt)
	// The stored creation time equals the one the caller holds, so an update
	// that keeps it passes ValidateClientChange.
	_, err = s.UpdateClient(ctx, "a", func(c data.Client) (data.Client, error) {
		c.CreatedAt = local
		return c, nil
	})
	wantErr(t, "UpdateClient keeping a local CreatedAt", err, nil)

	code := newCode("oauthd_ac_utc", "a")
	code.CreatedAt, code.ExpiresAt = local, local
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	var seen data.AuthCode
	_, fam, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		seen = c
		f := newFamily("fam", "a", "rt")
		f.CreatedAt, f.RotatedAt, f.ExpiresAt, f.AbsoluteExp = local, local, local, local
		return f, nil
	})
	wantErr(t, "ExchangeAuthCode", err, nil)
	wantUTC("AuthCode.CreatedAt", seen.CreatedAt)
	wantUTC("AuthCode.ExpiresAt", seen.ExpiresAt)
	wantUTC("ExchangeAuthCode family CreatedAt", fam.CreatedAt)
	fam, _ = s.GetFamily(ctx, "fam")
	wantUTC("Family.CreatedAt", fam.CreatedAt)
	wantUTC("Family.RotatedAt", fam.RotatedAt)
	wantUTC("Family.ExpiresAt", fam.ExpiresAt)
	wantUTC("Family.AbsoluteExp", fam.AbsoluteExp)

	wantErr(t, "PutGrant", s.PutGrant(ctx, data.Grant{UserID: 1, ClientID: "a", Scopes: []string{"PROFILE_READ"}, CreatedAt: local, UpdatedAt: local}), nil)
	g, _ := s.GetGrant(ctx, 1, "a")
	wantUTC("Grant.CreatedAt", g.CreatedAt)
	wantUTC("Grant.UpdatedAt", g.UpdatedAt)

	wantErr(t, "CreateSession", s.CreateSession(ctx, data.Session{Hash: data.Hash("ss"), UserID: 1, CreatedAt: local, ExpiresAt: local}), nil)
	sess, _ := s.GetSession(ctx, data.Hash("ss"))
	wantUTC("Session.CreatedAt", sess.CreatedAt)
	wantUTC("Session.ExpiresAt", sess.ExpiresAt)

	k := newKey("k", data.KeyActive)
	k.CreatedAt, k.ActivatedAt = local, local
	_, err = s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) { return []data.SigningKey{k}, nil })
	wantErr(t, "UpdateKeys", err, nil)
	ks, _ := s.ListKeys(ctx)
	wantUTC("SigningKey.CreatedAt", ks[0].CreatedAt)
	wantUTC("SigningKey.ActivatedAt", ks[0].ActivatedAt)
	if !ks[0].RetiredAt.IsZero() {
		t.Fatalf("SigningKey.RetiredAt = %v; want zero", ks[0].RetiredAt)
	}
}

func testCopies(t *testing.T, s data.Store) {
	c := newClient("a")
	wantErr(t, "CreateClient", s.CreateClient(ctx, c), nil)
	c.RedirectURIs[0] = "https://evil.example.com/cb"
	c.Secrets[0].Hash[0] ^= 0xff
	got, _ := s.GetClient(ctx, "a")
	if got.RedirectURIs[0] != "https://app.example.com/callback" || data.Equal(got.Secrets[0].Hash, c.Secrets[0].Hash) {
		t.Fatal("the store kept the caller's slices")
	}
	got.Scopes[0] = "ORG_BOOKING_WRITE"
	got.Secrets[0].Hash[0] ^= 0xff
	again, _ := s.GetClient(ctx, "a")
	if again.Scopes[0] != "BOOKING_READ" || data.Equal(again.Secrets[0].Hash, got.Secrets[0].Hash) {
		t.Fatal("GetClient returned the store's own slices")
	}
	f := exchanged(t, s, "fam", "a", "rt")
	f.TokenHash[0] ^= 0xff
	f.Scopes[0] = "ORG_BOOKING_WRITE"
	stored, _ := s.GetFamily(ctx, "fam")
	if !data.Equal(stored.TokenHash, data.Hash("rt")) || stored.Scopes[0] != "BOOKING_READ" {
		t.Fatal("ExchangeAuthCode returned the store's own slices")
	}
	ks := []data.SigningKey{newKey("k", data.KeyActive)}
	_, err := s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) { return ks, nil })
	wantErr(t, "UpdateKeys", err, nil)
	ks[0].Private[0] = 'X'
	list, _ := s.ListKeys(ctx)
	if list[0].Private[0] == 'X' {
		t.Fatal("the store kept the caller's key bytes")
	}
}

func testCancelled(t *testing.T, s data.Store) {
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	calls := map[string]func() error{
		"CreateUser": func() error {
			_, err := s.CreateUser(cctx, data.User{Email: "a@example.com", Username: "a"})
			return err
		},
		"GetUser":        func() error { _, err := s.GetUser(cctx, 1); return err },
		"CreateClient":   func() error { return s.CreateClient(cctx, newClient("a")) },
		"ListClients":    func() error { _, err := s.ListClients(cctx, ""); return err },
		"CreateAuthCode": func() error { return s.CreateAuthCode(cctx, newCode("oauthd_ac_c", "a")) },
		"ExchangeAuthCode": func() error {
			_, _, err := s.ExchangeAuthCode(cctx, data.Hash("x"), familyFrom("f", "t"))
			return err
		},
		"RotateRefreshToken": func() error {
			_, err := s.RotateRefreshToken(cctx, "f", presenting("t", rotateTo("u", t0)))
			return err
		},
		"DeleteFamily":  func() error { return s.DeleteFamily(cctx, "f") },
		"ListRevoked":   func() error { _, err := s.ListRevoked(cctx, t0); return err },
		"CreateSession": func() error { return s.CreateSession(cctx, data.Session{Hash: data.Hash("s")}) },
		"PutGrant":      func() error { return s.PutGrant(cctx, data.Grant{UserID: 1, ClientID: "a"}) },
		"UpdateKeys": func() error {
			_, err := s.UpdateKeys(cctx, func(k []data.SigningKey) ([]data.SigningKey, error) { return k, nil })
			return err
		},
		"GarbageCollect": func() error { _, err := s.GarbageCollect(cctx, t0); return err },
	}
	for name, call := range calls {
		wantErr(t, name, call(), context.Canceled)
	}
	// Nothing was written.
	if _, err := s.GetClient(ctx, "a"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("GetClient after a cancelled create: %v; want ErrNotFound", err)
	}
	if users, _ := s.ListUsers(ctx); len(users) != 0 {
		t.Fatalf("ListUsers after a cancelled create = %v", users)
	}
}

func testClosed(t *testing.T, s data.Store) {
	wantErr(t, "CreateClient", s.CreateClient(ctx, newClient("a")), nil)
	wantErr(t, "Close", s.Close(), nil)
	if _, err := s.GetClient(ctx, "a"); err == nil {
		t.Fatal("GetClient after Close succeeded")
	}
	if err := s.CreateAuthCode(ctx, newCode("oauthd_ac_x", "a")); err == nil {
		t.Fatal("CreateAuthCode after Close succeeded")
	}
	if _, err := s.RotateRefreshToken(ctx, "f", presenting("t", rotateTo("u", t0))); err == nil {
		t.Fatal("RotateRefreshToken after Close succeeded")
	}
}

// raceOutcomes checks that every error of a concurrent race is nil or one
// of allowed (tested with errors.Is), and returns how many calls succeeded.
func raceOutcomes(t *testing.T, op string, errs []error, allowed ...error) (ok int) {
	t.Helper()
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		if !slices.ContainsFunc(allowed, func(a error) bool { return errors.Is(err, a) }) {
			t.Fatalf("%s: %v; want nil or one of %v", op, err, allowed)
		}
	}
	return ok
}
