package consent

import (
	"strings"
	"testing"

	"oauthd/data"
)

// TestPagesNeutraliseBidi: a client stored before names were checked (an
// upgraded database, an older import) is named "Pay\u202egnikooB\u202c
// Sync"; html/template escapes markup but not a bidi override, so the
// consent page showed "PayBooking Sync" to the user deciding whether to
// allow it. Every page's output shows such a character as a visible
// \uXXXX escape instead, in text and in attributes, but for a hidden
// input's value, which goes back to the server as it came.
func TestPagesNeutraliseBidi(t *testing.T) {
	en := newEnv(t, "")
	evil := testClient
	evil.Name = "Pay\u202egnikooB\u202c Sync\u2067x\u2069\u0085"
	en.authz.parse = defaultParse(evil)
	sess := en.login("bob", bobPassword)
	q := authorizeQuery()
	q.Set("state", "st\u202eate") // not shown: goes back unchanged
	rec := en.get(authorizePath+"?"+q.Encode(), sess)
	body := rec.Body.String()
	if !strings.Contains(body, `name="state" value="st`+"\u202e"+`ate"`) {
		t.Errorf("the state's hidden input was changed:\n%s", body)
	}
	for _, r := range strings.ReplaceAll(body, `value="st`+"\u202e"+`ate"`, "") {
		if (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || (r >= 0x80 && r <= 0x9f) {
			t.Fatalf("consent page holds %U as it is:\n%s", r, body)
		}
	}
	if !strings.Contains(body, `Pay\u202EgnikooB\u202C Sync\u2067x\u2069\u0085`) {
		t.Errorf("the client name is not shown with its bidi characters escaped:\n%s", body)
	}
}

// TestConsentPageDeveloperHomograph: the developer's email is what the
// user trusts an app by. The attack: a developer whose email is at
// "exаmple.com" (Cyrillic а, a domain anyone can register) showed on the
// consent page as example.com's; the domain is shown in its ASCII form.
func TestConsentPageDeveloperHomograph(t *testing.T) {
	en := newEnv(t, "")
	dev, err := en.store.CreateUser(t.Context(), data.User{Email: "apps@ex\u0430mple.com", Name: "Dev", TimeZone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	cl := testClient
	cl.OwnerID = dev.ID
	en.authz.parse = defaultParse(cl)
	sess := en.login("bob", bobPassword)
	body := en.get(authorizePath+"?"+authorizeQuery().Encode(), sess).Body.String()
	if strings.Contains(body, "ex\u0430mple.com") || !strings.Contains(body, "apps@xn--exmple-4nf.com") {
		t.Errorf("the consent page does not show the developer's domain in its ASCII form:\n%s", body)
	}
}
