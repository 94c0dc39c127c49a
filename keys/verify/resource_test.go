package verify

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

func TestResourceMetadataURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.example.com":          "https://api.example.com/.well-known/oauth-protected-resource",
		"https://api.example.com/":         "https://api.example.com/.well-known/oauth-protected-resource",
		"https://api.example.com/mcp":      "https://api.example.com/.well-known/oauth-protected-resource/mcp",
		"https://api.example.com:8443/a/b": "https://api.example.com:8443/.well-known/oauth-protected-resource/a/b",
	} {
		if got, err := ResourceMetadataURL(in); err != nil || got != want {
			t.Errorf("ResourceMetadataURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"api.example.com", "https://api.example.com/?x=1", "https://api.example.com/#f", "ftp://api.example.com", "https://u@api.example.com"} {
		if _, err := ResourceMetadataURL(bad); err == nil {
			t.Errorf("ResourceMetadataURL(%q) = nil error", bad)
		}
	}
}

func TestResourceChallenge(t *testing.T) {
	const m = "https://api.example.com/.well-known/oauth-protected-resource"
	for _, tc := range []struct {
		www    string
		scopes []string
		want   string
	}{
		{"Bearer", nil, `Bearer resource_metadata="` + m + `"`},
		{"Bearer", []string{"A", "B"}, `Bearer resource_metadata="` + m + `", scope="A B"`},
		{`Bearer error="invalid_token"`, []string{"A"}, `Bearer error="invalid_token", resource_metadata="` + m + `", scope="A"`},
		{`Bearer error="insufficient_scope", scope="A"`, []string{"A"}, `Bearer error="insufficient_scope", scope="A", resource_metadata="` + m + `"`},
	} {
		if got := ResourceChallenge(tc.www, m, tc.scopes); got != tc.want {
			t.Errorf("ResourceChallenge(%q, %q)\n got %s\nwant %s", tc.www, tc.scopes, got, tc.want)
		}
	}
}

func TestResourceMetadataHandler(t *testing.T) {
	h := ResourceMetadata{Resource: "https://api.example.com/mcp", AuthorizationServers: []string{"https://auth.example.com"}}.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	if got["resource"] != "https://api.example.com/mcp" || got["bearer_methods_supported"].([]any)[0] != "header" {
		t.Errorf("document %v", got)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/", nil))
	if rec.Code != 405 {
		t.Errorf("POST: %d; want 405", rec.Code)
	}
}
