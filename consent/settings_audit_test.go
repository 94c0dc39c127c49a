package consent

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"oauthd/issuer/admin"
)

// TestSettingsAuditNamesDeveloper: a secret generated on the settings page
// is audited by admin with the developer's user ID as the actor.
func TestSettingsAuditNamesDeveloper(t *testing.T) {
	en := newEnv(t, "https://app.example")
	var buf bytes.Buffer
	adm := admin.NewLocal(en.store, nil, slog.New(slog.NewTextHandler(&buf, nil)), en.clock)
	h, err := New(Config{Store: en.store, Authorizer: en.authz, Logger: slog.New(slog.DiscardHandler),
		Now: en.clock, AppURL: "https://app.example", Clients: adm})
	if err != nil {
		t.Fatal(err)
	}
	en.h, en.e = h, echo.New()
	h.Register(en.e)
	se := &settingsEnv{en, adm}
	a := se.create(se.alice, "Alice App", false)
	sess, csrf := se.session(se.alice)
	if rec := se.post(clientsPath+"/"+a.ClientID+"/secrets", url.Values{csrfField: {csrf}}, sess); rec.Code != http.StatusOK {
		t.Fatalf("generate = %d\n%s", rec.Code, rec.Body)
	}
	var rec string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "event=secret_generated") {
			rec = l
		}
	}
	for _, want := range []string{"actor.via=settings_page", fmt.Sprintf("actor.user_id=%d", se.alice.ID), "actor.remote_addr="} {
		if !strings.Contains(rec, want) {
			t.Errorf("audit record %q; want %q", rec, want)
		}
	}
}
