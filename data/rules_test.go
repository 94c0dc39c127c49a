package data

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestValidateRedirectURI(t *testing.T) {
	tests := []struct {
		uri string
		ok  bool
	}{
		{"https://app.example.com/callback", true},
		{"https://app.example.com:8443/cb?x=1", true},
		{"HTTPS://APP.EXAMPLE.COM/cb", true},
		{"http://localhost/cb", true},
		{"http://LocalHost:3000/cb", true},
		{"http://127.0.0.1:8080/cb", true},
		{"http://127.8.9.10/cb", true},
		{"http://[::1]:8080/cb", true},
		{"http://app.example.com/cb", false},
		{"HTTP://app.example.com/cb", false},
		{"http://localhost.evil.com/cb", false},
		{"http://127.0.0.1.nip.io/cb", false},
		{"http://10.0.0.1/cb", false},
		{"https://app.example.com/cb#frag", false},
		{"https://app.example.com/cb#", false},
		{"javascript:alert(1)", false},
		{"javascript://app.example.com/%0aalert(1)", false},
		{"data:text/html,hi", false},
		{"file:///etc/passwd", false},
		{"ftp://app.example.com/cb", false},
		{"com.example.app:/callback", false},
		{"/callback", false},
		{"//app.example.com/cb", false},
		{"https:///cb", false},
		{"https://user:pass@app.example.com/cb", false},
		{"https://user@app.example.com/cb", false},
		{"https://app.example.com/c b", false},
		{"https://app.example.com/cb\n", false},
		{"https://app.example.com/\x00", false},
		{"https://app.example.com/\x7f", false},
		{"", false},
		{"https://app.example.com/" + strings.Repeat("a", 2000), false},
		{"https://app.example.com/" + string([]byte{0xff}), false},
	}
	for _, tc := range tests {
		err := ValidateRedirectURI(tc.uri)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateRedirectURI(%q) = %v; want ok = %v", tc.uri, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateRedirectURI(%q) = %v; want an ErrInvalid", tc.uri, err)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "127.0.0.1": true, "127.255.0.1": true, "::1": true,
		"": false, "localhost.": false, "example.com": false, "0.0.0.0": false, "::": false, "192.168.1.1": false,
	} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v; want %v", host, got, want)
		}
	}
}

var t0 = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

func validClient() Client {
	return Client{
		ID: "c1", Name: "App", OwnerID: 1, Type: Confidential,
		RedirectURIs: []string{"https://app.example.com/cb"},
		Scopes:       []string{"BOOKING_READ", "TEAM_PROFILE_READ"},
		Status:       StatusPending,
		Secrets:      []ClientSecret{{ID: "cs_1", Hash: Hash("a"), CreatedAt: t0}},
		CreatedAt:    t0, UpdatedAt: t0,
	}
}

// pending returns a valid pending change for validClient, edited by edit.
func pending(edit func(*ClientChange)) *ClientChange {
	p := &ClientChange{AddScopes: []string{"TEAM_BOOKING_READ"}, AddRedirectURIs: []string{"https://new.example.com/cb"},
		ProposedBy: "user 1 (settings page)", ProposedAt: t0}
	edit(p)
	return p
}

func TestValidateClient(t *testing.T) {
	secret := func(id string) ClientSecret { return ClientSecret{ID: id, Hash: Hash(id)} }
	uris := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("https://app.example.com/cb/%d", i))
		}
		return out
	}
	tests := []struct {
		name   string
		change func(*Client)
		want   error  // nil, ErrInvalid, ErrTooManySecrets, ErrLastSecret
		field  string // the RuleError field when want is ErrInvalid
	}{
		{"valid", func(*Client) {}, nil, ""},
		{"no ID", func(c *Client) { c.ID = "" }, ErrInvalid, "client_id"},
		{"blank name", func(c *Client) { c.Name = " \t" }, ErrInvalid, "name"},
		{"name of 200 bytes", func(c *Client) { c.Name = strings.Repeat("é", 100) }, nil, ""},
		{"name of 201 bytes", func(c *Client) { c.Name = strings.Repeat("x", 201) }, ErrInvalid, "name"},
		{"name not UTF-8", func(c *Client) { c.Name = "\xff" }, ErrInvalid, "name"},
		{"no owner", func(c *Client) { c.OwnerID = 0 }, ErrInvalid, "owner"},
		{"unclaimed owner", func(c *Client) { c.OwnerID, c.UnclaimedOwner = 0, "gone@example.com" }, nil, ""},
		{"unknown type", func(c *Client) { c.Type = "hybrid" }, ErrInvalid, "client_type"},
		{"no redirect URI", func(c *Client) { c.RedirectURIs = nil }, ErrInvalid, "redirect_uris"},
		{"10 redirect URIs", func(c *Client) { c.RedirectURIs = uris(10) }, nil, ""},
		{"11 redirect URIs", func(c *Client) { c.RedirectURIs = uris(11) }, ErrInvalid, "redirect_uris"},
		{"bad redirect URI", func(c *Client) { c.RedirectURIs = []string{"http://evil.example.com/cb"} }, ErrInvalid, "redirect_uri"},
		{"duplicate redirect URI", func(c *Client) { c.RedirectURIs = append(uris(2), uris(1)...) }, ErrInvalid, "redirect_uris"},
		{"no scope", func(c *Client) { c.Scopes = []string{} }, ErrInvalid, "scopes"},
		{"legacy, no scope", func(c *Client) { c.Scopes, c.Legacy = nil, true }, nil, ""},
		{"legacy with scopes", func(c *Client) { c.Legacy = true }, nil, ""},
		{"unknown scope", func(c *Client) { c.Scopes = []string{"ADMIN"} }, ErrInvalid, "scopes"},
		{"scope with space", func(c *Client) { c.Scopes = []string{"BOOKING_READ PROFILE_READ"} }, ErrInvalid, "scopes"},
		{"duplicate scope", func(c *Client) { c.Scopes = []string{"BOOKING_READ", "BOOKING_READ"} }, ErrInvalid, "scopes"},
		{"approved", func(c *Client) { c.Status = StatusApproved }, nil, ""},
		{"rejected without reason", func(c *Client) { c.Status = StatusRejected }, ErrInvalid, "reason"},
		{"rejected with blank reason", func(c *Client) { c.Status, c.RejectReason = StatusRejected, "  " }, ErrInvalid, "reason"},
		{"rejected with reason", func(c *Client) { c.Status, c.RejectReason = StatusRejected, "spam" }, nil, ""},
		{"unknown status", func(c *Client) { c.Status = "" }, ErrInvalid, "status"},
		{"two secrets", func(c *Client) { c.Secrets = append(c.Secrets, secret("cs_2")) }, nil, ""},
		{"three secrets", func(c *Client) { c.Secrets = append(c.Secrets, secret("cs_2"), secret("cs_3")) }, ErrTooManySecrets, ""},
		{"duplicate secret ID", func(c *Client) { c.Secrets = append(c.Secrets, secret("cs_1")) }, ErrInvalid, "secrets"},
		{"confidential, no secret", func(c *Client) { c.Secrets = nil }, ErrLastSecret, ""},
		{"public, no secret", func(c *Client) { c.Type, c.Secrets = Public, nil }, nil, ""},
		{"public with secret", func(c *Client) { c.Type = Public }, ErrInvalid, "secrets"},
		{"pending change", func(c *Client) { c.Status, c.Pending = StatusApproved, pending(func(*ClientChange) {}) }, nil, ""},
		{"pending change on a client under review", func(c *Client) { c.Pending = pending(func(*ClientChange) {}) }, ErrInvalid, "pending"},
		{"empty pending change", func(c *Client) {
			c.Status, c.Pending = StatusApproved, &ClientChange{ProposedBy: "u", ProposedAt: t0}
		}, ErrInvalid, "pending"},
		{"pending change without proposer", func(c *Client) {
			c.Status, c.Pending = StatusApproved, pending(func(p *ClientChange) { p.ProposedBy = "" })
		}, ErrInvalid, "pending"},
		{"pending scope already approved", func(c *Client) {
			c.Status, c.Pending = StatusApproved, pending(func(p *ClientChange) { p.AddScopes = c.Scopes[:1] })
		}, ErrInvalid, "pending"},
		{"pending redirect URI already approved", func(c *Client) {
			c.Status, c.Pending = StatusApproved, pending(func(p *ClientChange) { p.AddRedirectURIs = c.RedirectURIs[:1] })
		}, ErrInvalid, "pending"},
		{"pending unknown scope", func(c *Client) {
			c.Status, c.Pending = StatusApproved, pending(func(p *ClientChange) { p.AddScopes = []string{"ADMIN"} })
		}, ErrInvalid, "scopes"},
		{"pending http redirect URI", func(c *Client) {
			c.Status, c.Pending = StatusApproved, pending(func(p *ClientChange) { p.AddRedirectURIs = []string{"http://evil.example/cb"} })
		}, ErrInvalid, "redirect_uri"},
		{"pending URIs beyond 10", func(c *Client) {
			c.Status, c.RedirectURIs, c.Pending = StatusApproved, uris(10), pending(func(p *ClientChange) {})
		}, ErrInvalid, "redirect_uris"},
		{"pending scopes on a legacy client", func(c *Client) {
			c.Status, c.Legacy, c.Scopes, c.Pending = StatusApproved, true, nil, pending(func(*ClientChange) {})
		}, ErrInvalid, "pending"},
		{"pending type: public", func(c *Client) {
			c.Status, c.Pending = StatusApproved, &ClientChange{Type: Public, ProposedBy: "u", ProposedAt: t0}
		}, nil, ""},
		{"pending type: the same", func(c *Client) {
			c.Status, c.Pending = StatusApproved, &ClientChange{Type: Confidential, ProposedBy: "u", ProposedAt: t0}
		}, ErrInvalid, "pending"},
		{"pending type: confidential without its secret", func(c *Client) {
			c.Type, c.Secrets = Public, nil
			c.Status, c.Pending = StatusApproved, &ClientChange{Type: Confidential, ProposedBy: "u", ProposedAt: t0}
		}, ErrInvalid, "pending"},
		{"pending type: confidential with its secret", func(c *Client) {
			c.Type, c.Secrets = Public, nil
			s := secret("cs_9")
			c.Status, c.Pending = StatusApproved, &ClientChange{Type: Confidential, Secret: &s, ProposedBy: "u", ProposedAt: t0}
		}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validClient()
			tc.change(&c)
			err := ValidateClient(c)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ValidateClient = %v; want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("ValidateClient = %v; want %v", err, tc.want)
			}
			if tc.field != "" {
				var re *RuleError
				if !errors.As(err, &re) || re.Field != tc.field {
					t.Fatalf("ValidateClient = %v; want a RuleError on %q", err, tc.field)
				}
				if re.Reason == "" || err.Error() != re.Field+": "+re.Reason {
					t.Fatalf("RuleError.Error() = %q", err.Error())
				}
			}
		})
	}
}

func TestValidateClientChange(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*Client)
		change func(*Client)
		want   error
	}{
		{"no change", nil, func(*Client) {}, nil},
		{"rename, new URIs, new scopes", nil, func(c *Client) {
			c.Name, c.RedirectURIs, c.Scopes = "New", []string{"https://new.example.com/cb"}, []string{"PROFILE_READ"}
		}, nil},
		{"new owner", nil, func(c *Client) { c.OwnerID = 2 }, nil},
		{"pending to approved", nil, func(c *Client) { c.Status = StatusApproved }, nil},
		{"pending to rejected", nil, func(c *Client) { c.Status = StatusRejected }, nil},
		{"approved to rejected", func(c *Client) { c.Status = StatusApproved }, func(c *Client) { c.Status = StatusRejected }, nil},
		{"rejected to approved", func(c *Client) { c.Status = StatusRejected }, func(c *Client) { c.Status = StatusApproved }, nil},
		{"approved to pending", func(c *Client) { c.Status = StatusApproved }, func(c *Client) { c.Status = StatusPending }, ErrConflict},
		{"rejected to pending", func(c *Client) { c.Status = StatusRejected }, func(c *Client) { c.Status = StatusPending }, ErrConflict},
		{"new ID", nil, func(c *Client) { c.ID = "c2" }, ErrInvalid},
		{"new type, approved", func(c *Client) { c.Status = StatusApproved }, func(c *Client) { c.Type = Public }, ErrInvalid},
		{"new type, under review", nil, func(c *Client) { c.Type = Public }, nil},
		{"new type, approved change", func(c *Client) {
			c.Status, c.Pending = StatusApproved, &ClientChange{Type: Public, ProposedBy: "u", ProposedAt: t0}
		}, func(c *Client) { *c = c.WithPending() }, nil},
		{"other type than the approved change", func(c *Client) {
			c.Status, c.Pending = StatusApproved, &ClientChange{AddScopes: []string{"TEAM_BOOKING_READ"}, ProposedBy: "u", ProposedAt: t0}
		}, func(c *Client) { c.Type = Public }, ErrInvalid},
		{"new creation time", nil, func(c *Client) { c.CreatedAt = c.CreatedAt.Add(time.Nanosecond) }, ErrInvalid},
		{"same creation time in another zone", nil, func(c *Client) { c.CreatedAt = c.CreatedAt.In(time.FixedZone("X", 3600)) }, nil},
		{"scoped to legacy", nil, func(c *Client) { c.Legacy = true }, ErrInvalid},
		{"legacy to scoped", func(c *Client) { c.Legacy = true }, func(c *Client) { c.Legacy = false }, nil},
		{"legacy stays legacy", func(c *Client) { c.Legacy = true }, func(*Client) {}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validClient()
			if tc.old != nil {
				tc.old(&old)
			}
			next := old
			tc.change(&next)
			err := ValidateClientChange(old, next)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("ValidateClientChange = %v; want %v", err, tc.want)
			}
		})
	}
}

func TestValidateKeySet(t *testing.T) {
	k := func(kid string, st KeyState) SigningKey { return SigningKey{KID: kid, State: st} }
	tests := []struct {
		name string
		keys []SigningKey
		ok   bool
	}{
		{"empty", nil, true},
		{"active and next", []SigningKey{k("a", KeyActive), k("b", KeyNext)}, true},
		{"retired ones", []SigningKey{k("a", KeyRetired), k("b", KeyActive), k("c", KeyRetired)}, true},
		{"two active", []SigningKey{k("a", KeyActive), k("b", KeyActive)}, false},
		{"duplicate kid", []SigningKey{k("a", KeyActive), k("a", KeyNext)}, false},
		{"no kid", []SigningKey{k("", KeyActive)}, false},
		{"unknown state", []SigningKey{k("a", "removed")}, false},
	}
	for _, tc := range tests {
		err := ValidateKeySet(tc.keys)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: ValidateKeySet = %v; want ok = %v", tc.name, err, tc.ok)
		}
	}
}
