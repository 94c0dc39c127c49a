package consent

import (
	"net/url"
	"strings"
	"testing"

	"oauthd/data"
	"oauthd/issuer"
)

// TestConsentNamesTheVouchingHostAndTheAPI: an AI assistant's consent
// page leads with the host that vouches for it (the name it gives itself
// comes after), and names the API its tokens will reach.
func TestConsentNamesTheVouchingHostAndTheAPI(t *testing.T) {
	en := newEnv(t, "")
	agent := testClient
	agent.ID, agent.Name, agent.OwnerID, agent.Type = "https://claude.example/oauth/client.json", "Totally The Bank", 0, data.Public
	agent.MetadataHost = "claude.example"
	parse := defaultParse(agent)
	en.authz.parse = func(q url.Values) (*issuer.AuthorizeRequest, error) {
		ar, err := parse(q)
		if err == nil {
			ar.Resources = q["resource"]
		}
		return ar, err
	}
	sess := en.login("alice", alicePassword)
	q := authorizeQuery()
	q.Set("client_id", agent.ID)
	q.Set("resource", "https://api.example.com/mcp")
	rec := en.get(authorizePath+"?"+q.Encode(), sess)
	body := rec.Body.String()
	if rec.Code != 200 {
		t.Fatalf("status %d\n%s", rec.Code, body)
	}
	host := strings.Index(body, "An AI assistant from <span class=\"client-name mono\">claude.example</span>")
	name := strings.Index(body, "Totally The Bank")
	if host < 0 || name < 0 || name < host {
		t.Errorf("the page must lead with the vouching host, then the name the document gives:\n%s", body)
	}
	if !strings.Contains(body, `<strong class="mono">https://api.example.com/mcp</strong>`) {
		t.Errorf("the page does not name the API the token will reach:\n%s", body)
	}
	if f := decisionFields(t, body); f.Get("resource") != "https://api.example.com/mcp" {
		t.Errorf("the decision form drops resource: %v", f)
	}
	if strings.Contains(body, "Developed by") {
		t.Error("an assistant has no developer account to show")
	}
}
