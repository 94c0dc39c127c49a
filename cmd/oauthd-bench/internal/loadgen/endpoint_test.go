package loadgen

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCheckLoopback(t *testing.T) {
	tests := []struct {
		target string
		ok     bool
	}{
		{"http://127.0.0.1:8080/v2/auth/oauth2/token", true},
		{"http://127.3.4.5/token", true},
		{"http://[::1]:8080/token", true},
		{"http://localhost:8080/token", true},
		{"http://192.168.1.1/token", false},
		{"http://[2001:db8::1]/token", false},
		{"ftp://127.0.0.1/token", false},
		{"127.0.0.1:8080", false},
		{"http:///token", false},
	}
	for _, tc := range tests {
		if err := CheckLoopback(t.Context(), tc.target); (err == nil) != tc.ok {
			t.Errorf("CheckLoopback(%q) = %v; want ok=%v", tc.target, err, tc.ok)
		}
	}
}

func TestTokensFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toks")
	if err := os.WriteFile(path, []byte("a\n\n  b  \nc"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTokens(path)
	if want := []string{"a", "b", "c"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("ReadTokens = %q, %v; want %q", got, err, want)
	}
	if err := WriteTokens(path, []string{"x", "y"}); err != nil {
		t.Fatal(err)
	}
	got, err = ReadTokens(path)
	if want := []string{"x", "y"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("after WriteTokens: %q, %v; want %q", got, err, want)
	}
	if _, err := ReadTokens(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("ReadTokens of a missing file: no error")
	}
	// A new file holds live credentials: owner only.
	fresh := filepath.Join(t.TempDir(), "fresh")
	if err := WriteTokens(fresh, []string{"z"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

func TestEndpointPost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Content-Type"); got != "application/x-www-form-urlencoded" {
			t.Errorf("Content-Type %q", got)
		}
		switch r.PostFormValue("case") {
		case "ok":
			w.Write([]byte(`{"access_token":"at","refresh_token":"rt"}`))
		case "no-refresh":
			w.Write([]byte(`{"access_token":"at"}`))
		case "garbage":
			w.Write([]byte(`<html>`))
		case "redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`))
		}
	}))
	defer srv.Close()
	e := Endpoint{HTTP: NewHTTPClient(1), TokenURL: srv.URL}
	tests := []struct {
		body    string
		status  int
		tr      TokenReply
		wantErr bool
	}{
		{"case=ok", 200, TokenReply{AccessToken: "at", RefreshToken: "rt"}, false},
		{"case=no-refresh", 200, TokenReply{AccessToken: "at"}, true},
		{"case=garbage", 200, TokenReply{}, true},
		{"case=redirect", 302, TokenReply{}, false}, // not followed
		{"case=bad", 400, TokenReply{Error: "invalid_grant"}, false},
	}
	for _, tc := range tests {
		status, tr, err := e.Post(t.Context(), tc.body)
		if status != tc.status || tr != tc.tr || (err != nil) != tc.wantErr {
			t.Errorf("Post(%q) = %d, %+v, %v; want %d, %+v, error %v", tc.body, status, tr, err, tc.status, tc.tr, tc.wantErr)
		}
	}

	// A transport error is status 0.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/token"
	ln.Close()
	if status, _, err := (Endpoint{HTTP: NewHTTPClient(1), TokenURL: closed}).Post(t.Context(), "x=1"); status != 0 || err == nil {
		t.Errorf("Post to a closed port = %d, %v; want 0 and an error", status, err)
	}
}
