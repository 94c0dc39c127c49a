package datatest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"oauthd/data"
)

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
	{"no owner", func(c *data.Client) { c.OwnerID = 0 }, data.ErrInvalid},
	{"negative owner", func(c *data.Client) { c.OwnerID = -1 }, data.ErrInvalid},
	{"unclaimed", func(c *data.Client) { c.OwnerID, c.UnclaimedOwner = 0, "gone@example.com" }, nil},
	{"owner and unclaimed", func(c *data.Client) { c.UnclaimedOwner = "gone@example.com" }, data.ErrInvalid},
	{"rejected without reason", func(c *data.Client) { c.Status = data.StatusRejected }, data.ErrInvalid},
	{"rejected with reason", func(c *data.Client) { c.Status, c.RejectReason = data.StatusRejected, "spam" }, nil},
	{"unknown status", func(c *data.Client) { c.Status = "archived" }, data.ErrInvalid},
	{"grant types", func(c *data.Client) {
		c.GrantTypes = []string{data.GrantClientCredentials, data.GrantAuthorizationCode}
	}, nil},
	{"client_credentials only, no redirect URI", func(c *data.Client) {
		c.GrantTypes, c.RedirectURIs = []string{data.GrantClientCredentials}, nil
	}, nil},
	{"authorization_code without redirect URI", func(c *data.Client) {
		c.GrantTypes, c.RedirectURIs = []string{data.GrantAuthorizationCode}, nil
	}, data.ErrInvalid},
	{"unknown grant type", func(c *data.Client) { c.GrantTypes = []string{"password"} }, data.ErrInvalid},
	{"duplicate grant type", func(c *data.Client) {
		c.GrantTypes = []string{data.GrantRefreshToken, data.GrantRefreshToken}
	}, data.ErrInvalid},
	{"keys instead of a secret", func(c *data.Client) { c.Secrets, c.JWKSURI = nil, "https://keys.example.com/jwks" }, nil},
	{"keys and a secret", func(c *data.Client) { c.JWKSURI = "https://keys.example.com/jwks" }, data.ErrInvalid},
	{"jwks and jwks_uri", func(c *data.Client) {
		c.Secrets, c.JWKS, c.JWKSURI = nil, `{"keys":[]}`, "https://keys.example.com/jwks"
	}, data.ErrInvalid},
	{"jwks_uri over http", func(c *data.Client) { c.Secrets, c.JWKSURI = nil, "http://keys.example.com/jwks" }, data.ErrInvalid},
	{"jwks not JSON", func(c *data.Client) { c.Secrets, c.JWKS = nil, "{keys" }, data.ErrInvalid},
	{"public client with keys", func(c *data.Client) { c.Type, c.Secrets, c.JWKS = data.Public, nil, `{"keys":[]}` }, data.ErrInvalid},
	{"client_credentials of a public client", func(c *data.Client) {
		c.Type, c.Secrets, c.GrantTypes = data.Public, nil, []string{data.GrantClientCredentials}
	}, data.ErrInvalid},
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
				want = data.Reviewed(orig, c) // the review the store keeps
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
