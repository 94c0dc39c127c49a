package consent

import (
	"context"
	"flag"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"oauthd/data"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// checkGolden compares got with testdata/name.golden.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./consent -update)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from %s (run go test ./consent -update and review the diff)\ngot:\n%s", name, path, got)
	}
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
