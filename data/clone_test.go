package data

import (
	"reflect"
	"testing"
)

// TestClientClone: a clone equals its client and shares no memory with it.
func TestClientClone(t *testing.T) {
	c := Client{
		ID: "c", RedirectURIs: []string{"https://a.example/cb"}, Scopes: []string{"PROFILE_READ"},
		Secrets: []ClientSecret{{ID: "cs_1", Hash: []byte{1, 2}}}, Usage: []UsageDay{{Day: "2026-11-25", WithScope: 1}},
		Pending:        &ClientChange{AddScopes: []string{"BOOKING_READ"}, AddRedirectURIs: []string{"https://b.example/cb"}, Secret: &ClientSecret{ID: "cs_2", Hash: []byte{3}}},
		RejectedChange: &ClientChange{AddScopes: []string{"APPS_READ"}, RejectReason: "no"},
	}
	d := c.Clone()
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("Clone() = %+v; want %+v", d, c)
	}
	d.RedirectURIs[0], d.Scopes[0], d.Usage[0].WithScope = "x", "x", 9
	d.Secrets[0].Hash[0] = 9
	d.Pending.AddScopes[0], d.Pending.AddRedirectURIs[0], d.Pending.Secret.Hash[0] = "x", "x", 9
	d.RejectedChange.AddScopes[0] = "x"
	if c.RedirectURIs[0] != "https://a.example/cb" || c.Scopes[0] != "PROFILE_READ" || c.Usage[0].WithScope != 1 ||
		c.Secrets[0].Hash[0] != 1 || c.Pending.AddScopes[0] != "BOOKING_READ" || c.Pending.AddRedirectURIs[0] != "https://b.example/cb" ||
		c.Pending.Secret.Hash[0] != 3 || c.RejectedChange.AddScopes[0] != "APPS_READ" {
		t.Fatalf("changing the clone changed the client: %+v", c)
	}
}
