package settings

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestSettingsAuditNamesDeveloper: a secret generated on the settings page
// is audited by admin with the developer's user ID as the actor.
func TestSettingsAuditNamesDeveloper(t *testing.T) {
	var buf bytes.Buffer
	se := newEnv(t, "https://app.example", echo.New(), slog.New(slog.NewTextHandler(&buf, nil)))
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
