package consent

import (
	"context"
	"flag"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"oauthd/consent/consenttest"
	"oauthd/data"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// checkGolden compares got with testdata/name.golden.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	consenttest.Golden(t, filepath.Join("testdata", name+".golden"), got, *update)
}

// Fixed credentials so that the pages render byte for byte the same.
var (
	fixedCSRF    = strings.Repeat("C", 43)
	fixedSession = data.PrefixSession + strings.Repeat("S", 43)
)

func TestGoldenPages(t *testing.T) {
	en := newEnv(t, "https://app.example")
	ctx := context.Background()
	err := en.store.CreateSession(ctx, data.Session{
		Hash: data.Hash(fixedSession), UserID: en.alice.ID, CSRF: fixedCSRF,
		CreatedAt: en.now, ExpiresAt: en.now.Add(en.h.sessionTTL),
	})
	if err != nil {
		t.Fatal(err)
	}
	sess := &http.Cookie{Name: en.h.sessionName, Value: fixedSession}
	csrf := &http.Cookie{Name: en.h.csrfName, Value: fixedCSRF}
	rt := authorizePath + "?" + authorizeQuery().Encode()

	pages := []struct {
		name string
		do   func() (int, []byte)
		want int
	}{
		{"login", func() (int, []byte) {
			r := en.get("/auth/login?return_to="+url.QueryEscape(rt), csrf)
			return r.Code, r.Body.Bytes()
		}, http.StatusOK},
		{"consent", func() (int, []byte) {
			r := en.get(rt, sess)
			return r.Code, r.Body.Bytes()
		}, http.StatusOK},
		{"error", func() (int, []byte) {
			r := en.get(authorizePath+"?client_id=nope", sess)
			return r.Code, r.Body.Bytes()
		}, http.StatusBadRequest},
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			code, body := p.do()
			if code != p.want {
				t.Fatalf("status %d; want %d", code, p.want)
			}
			checkGolden(t, p.name, body)
		})
	}
}
