package datatest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"oauthd/data"
)

// Fixtures.

func newClient(id string) data.Client {
	return data.Client{
		ID:           id,
		Name:         "Client " + id,
		OwnerID:      1,
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

// wantRule fails t unless err is a *data.RuleError on field.
func wantRule(t *testing.T, what string, err error, field string) {
	t.Helper()
	var re *data.RuleError
	if !errors.As(err, &re) || re.Field != field {
		t.Fatalf("%s: error = %v; want a RuleError on %s", what, err, field)
	}
}

var ctx = context.Background()

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

// records is one of each record a store keeps, with every field set in at
// least one of them (see uncovered): what the suite writes to check that
// every field, however deep, comes back as written.
type records struct {
	Users   []data.User // user 1 active, user 2 disabled
	Clients []data.Client
	Code    data.AuthCode // used: ExchangeAuthCode returns it as stored
	Family  data.Family   // made by exchanging FreshCode
	// FreshCode is exchanged for Family.
	FreshCode data.AuthCode
	Grant     data.Grant
	Session   data.Session
	Keys      []data.SigningKey
}

func fullRecords() records {
	secret := func(id string) data.ClientSecret {
		return data.ClientSecret{ID: id, Hash: data.Hash(id), CreatedAt: t0, LastUsedAt: t0.Add(time.Hour)}
	}
	approved := newClient("full")
	approved.Status = data.StatusApproved
	approved.Secrets = []data.ClientSecret{secret("cs_a"), secret("cs_b")}
	approved.Usage = []data.UsageDay{{Day: "2025-03-14", WithScope: 3, WithoutScope: 4}}
	approved.DPoPBoundAccessTokens, approved.RequirePAR = true, true
	approved.PostLogoutRedirectURIs = []string{"https://app.example.com/bye"}
	approved.Review = data.ClientReview{Gen: 4, Approved: 2, Scopes: []data.ScopeAdded{{Scope: "PROFILE_READ", Gen: 3}}}
	approved.GrantTypes = []string{data.GrantAuthorizationCode, data.GrantRefreshToken}
	approved.Pending = &data.ClientChange{
		AddScopes: []string{"APPS_READ"}, AddRedirectURIs: []string{"https://app.example.com/other"},
		AddGrantTypes:             []string{data.GrantClientCredentials},
		AddPostLogoutRedirectURIs: []string{"https://app.example.com/bye-other"},
		DropDPoPBound:             true, DropRequirePAR: true, ProposedBy: "user 1 (settings page)", ProposedAt: t0,
	}
	approved.RejectedChange = &data.ClientChange{
		AddScopes: []string{"APPS_WRITE"}, AddRedirectURIs: []string{"https://app.example.com/third"},
		Type: data.Public, DropDPoPBound: true, DropRequirePAR: true, Secret: ptr(secret("cs_c")),
		ProposedBy: "user 1 (settings page)", ProposedAt: t0, RejectReason: "not needed",
	}
	rejected := newClient("legacy")
	rejected.Legacy, rejected.Status, rejected.RejectReason = true, data.StatusRejected, "unknown developer"
	rejected.OwnerID, rejected.UnclaimedOwner = 0, "gone@example.com" // an imported owner that names no user
	public := newClient("public")
	public.Type, public.Status, public.Secrets = data.Public, data.StatusApproved, nil
	public.Pending = &data.ClientChange{Type: data.Confidential, Secret: ptr(secret("cs_d")), ProposedBy: "user 1 (settings page)", ProposedAt: t0}
	keyed := newClient("keyed") // private_key_jwt: keys instead of a secret
	keyed.Secrets, keyed.GrantTypes = nil, []string{data.GrantClientCredentials}
	keyed.JWKS = `{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`
	keyedURI := newClient("keyed-uri")
	keyedURI.Secrets, keyedURI.JWKSURI = nil, "https://keys.example.com/jwks.json"

	agent := newClient("https://claude.example/oauth/client.json")
	agent.Type, agent.Status, agent.Secrets, agent.OwnerID = data.Public, data.StatusApproved, nil, 0
	agent.MetadataHost = "claude.example"

	code := newCode("oauthd_ac_full", "full")
	code.Unrestricted, code.Used, code.FamilyID = true, true, "fam-gone"
	code.Nonce, code.AuthTime = "n-0S6_WzA2Mj", t0.Add(-time.Minute)
	fam := newFamily("fam-full", "full", "rt-full")
	fam.Unrestricted, fam.Generation, fam.Tagged, fam.JKT = true, 7, true, "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
	fam.AuthTime = t0.Add(-time.Minute)
	code.Resources = []string{"https://mcp.example.com/mcp", "https://api.example.com"}
	fam.Resources = []string{"https://mcp.example.com/mcp"}
	fam.CodeHash, fam.PrevHash, fam.LegacyHash = data.AuthCodeKey("oauthd_ac_fresh"), data.Hash("rt-prev"), data.Hash("rt-legacy")
	retired := newKey("k-retired", data.KeyRetired)
	retired.Sealed, retired.ActivatedAt, retired.RetiredAt = true, t0, t0
	return records{
		Users: []data.User{
			{ID: 1, Email: "a@example.com", Username: "a", Name: "A", TimeZone: "Europe/Berlin", PasswordHash: "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA", CreatedAt: t0, ExternalID: "ext-a", ProfileUpdatedAt: t0.Add(time.Hour)},
			{ID: 2, Email: "b@example.com", Username: "b", Name: "B", CreatedAt: t0, Disabled: true, DisabledAt: t0},
		},
		Clients:   []data.Client{approved, rejected, public, keyed, keyedURI, agent},
		Code:      code,
		Family:    fam,
		FreshCode: newCode("oauthd_ac_fresh", "full"),
		Grant:     data.Grant{UserID: 1, ClientID: "full", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, UpdatedAt: t0, Review: 4, Stamped: true},
		Session:   data.Session{Hash: data.Hash("ss-full"), UserID: 1, CSRF: "csrf-full", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), AuthTime: t0.Add(-time.Minute)},
		Keys:      []data.SigningKey{retired, newKey("k-active", data.KeyActive)},
	}
}

func ptr[T any](v T) *T { return &v }
