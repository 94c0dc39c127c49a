package guard

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tbl := DefaultTable()
	for _, tc := range []struct {
		method, path string
		want         string // pattern; "" = no match
		wantScope    string
	}{
		// Static segments beat parameters.
		{"GET", "/v2/organizations/1/teams/me", "/v2/organizations/{orgId}/teams/me", "ORG_PROFILE_READ"},
		{"GET", "/v2/organizations/1/teams/2", "/v2/organizations/{orgId}/teams/{teamId}", "TEAM_PROFILE_READ"},
		{"GET", "/v2/organizations/1/teams/event-types", "/v2/organizations/{orgId}/teams/event-types", "ORG_EVENT_TYPE_READ"},
		{"GET", "/v2/schedules/default", "/v2/schedules/default", "SCHEDULE_READ"},
		{"GET", "/v2/schedules/17", "/v2/schedules/{scheduleId}", "SCHEDULE_READ"},
		{"GET", "/v2/calendars/ics-feed/check", "/v2/calendars/ics-feed/check", "APPS_READ"},
		{"GET", "/v2/calendars/google/check", "/v2/calendars/{calendar}/check", "APPS_READ"},
		{"GET", "/v2/calendars/busy-times", "/v2/calendars/busy-times", "APPS_READ"},
		{"POST", "/v2/calendars/ics-feed/save", "/v2/calendars/ics-feed/save", "APPS_WRITE"},
		{"GET", "/v2/conferencing/default", "/v2/conferencing/default", "APPS_READ"},
		{"POST", "/v2/conferencing/zoom/default", "/v2/conferencing/{app}/default", "APPS_WRITE"},
		{"GET", "/v2/me/ooo", "/v2/me/ooo", "SCHEDULE_READ"},
		// A static branch without a route for the method falls back to the
		// parameter branch, like the upstream router.
		{"PATCH", "/v2/schedules/default", "/v2/schedules/{scheduleId}", "SCHEDULE_WRITE"},
		{"DELETE", "/v2/organizations/1/teams/me", "/v2/organizations/{orgId}/teams/{teamId}", "ORG_PROFILE_WRITE"},
		{"GET", "/v2/calendars/ics-feed/connect", "/v2/calendars/{calendar}/connect", "APPS_WRITE"},
		// Trailing slash: one is ignored.
		{"GET", "/v2/me/", "/v2/me", "PROFILE_READ"},
		{"GET", "/v2/me//", "", ""},
		// HEAD falls back to GET.
		{"HEAD", "/v2/bookings", "/v2/bookings", "BOOKING_READ"},
		// Public.
		{"POST", "/v2/bookings", "/v2/bookings", ""},
		{"GET", "/v2/slots", "/v2/slots", ""},
		// No match.
		{"PUT", "/v2/me", "", ""},
		{"get", "/v2/me", "", ""},
		{"OPTIONS", "/v2/me", "", ""},
		{"GET", "/v2", "", ""},
		{"GET", "/v2/", "", ""},
		{"GET", "/", "", ""},
		{"GET", "", "", ""},
		{"GET", "v2/me", "", ""},
		{"GET", "/v2/me/x", "", ""},
		{"GET", "/v2/schedules/", "/v2/schedules", "SCHEDULE_READ"},
		{"GET", "/v2/me/../teams", "", ""},
		{"GET", "/v2/me/./ooo", "", ""},
		{"GET", "/v2/event-types//webhooks", "", ""},
		{"GET", "/V2/me", "", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			got, ok := tbl.Match(tc.method, tc.path)
			if ok != (tc.want != "") || got.Path != tc.want {
				t.Fatalf("Match(%q, %q) = %q, %v; want %q", tc.method, tc.path, got.Path, ok, tc.want)
			}
			if tc.want != "" && tc.wantScope != "" && !slices.Equal(got.Scopes, []string{tc.wantScope}) {
				t.Errorf("Match(%q, %q).Scopes = %v; want [%s]", tc.method, tc.path, got.Scopes, tc.wantScope)
			}
			if tc.want != "" && tc.wantScope == "" && !got.Public {
				t.Errorf("Match(%q, %q) = %+v; want public", tc.method, tc.path, got)
			}
		})
	}
}

func TestCanonicalPath(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string // "" = refused
	}{
		{"/v2/me", "/v2/me"},
		{"/v2/me/", "/v2/me"},
		{"/", "/"},
		{"/v2/bookings/abc%20def", "/v2/bookings/abc def"},
		{"/v2/me%2F", ""},
		{"/v2/me/%2e%2e/teams", ""},
		{"/v2/me/../teams", ""},
		{"/v2//me", ""},
		{"/v2/me//", ""},
		{"/v2/%5cme", ""},
		{"/v2/%00me", ""},
		{"/v2/.", ""},
		{"/v2/...", "/v2/..."}, // not a dot segment
	} {
		u, err := url.Parse(tc.raw)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", tc.raw, err)
		}
		got, err := CanonicalPath(u)
		if tc.want == "" {
			if !errors.Is(err, ErrBadPath) {
				t.Errorf("CanonicalPath(%q) = %q, %v; want ErrBadPath", tc.raw, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("CanonicalPath(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}

func TestLoadTableErrors(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"not JSON", `{`, "decode JSON"},
		{"object", `{"method":"GET"}`, "decode JSON"},
		{"unknown field", `[{"method":"GET","path":"/v2/x","scopes":["PROFILE_READ"],"scope":"x"}]`, "unknown field"},
		{"unknown scope", `[{"method":"GET","path":"/v2/x","scopes":["PROFILE_READ"]},{"method":"GET","path":"/v2/y","scopes":["PROFILE_REED"]}]`, `row 2 (GET /v2/y): unknown scope "PROFILE_REED"`},
		{"lower-case method", `[{"method":"get","path":"/v2/x","scopes":["PROFILE_READ"]}]`, `row 1 (get /v2/x): method "get" must be upper-case`},
		{"empty method", `[{"path":"/v2/x","scopes":["PROFILE_READ"]}]`, "method is empty"},
		{"not /v2/", `[{"method":"GET","path":"/v1/x","scopes":["PROFILE_READ"]}]`, "must start with /v2/"},
		{"trailing slash", `[{"method":"GET","path":"/v2/x/","scopes":["PROFILE_READ"]}]`, "must not end with /"},
		{"empty segment", `[{"method":"GET","path":"/v2//x","scopes":["PROFILE_READ"]}]`, "empty segment"},
		{"dot segment", `[{"method":"GET","path":"/v2/../x","scopes":["PROFILE_READ"]}]`, "dot segment"},
		{"colon param", `[{"method":"GET","path":"/v2/{a/x","scopes":["PROFILE_READ"]}]`, "whole segment"},
		{"partial param", `[{"method":"GET","path":"/v2/x{a}","scopes":["PROFILE_READ"]}]`, "whole segment"},
		{"bad param name", `[{"method":"GET","path":"/v2/{a-b}","scopes":["PROFILE_READ"]}]`, "name must be"},
		{"empty param", `[{"method":"GET","path":"/v2/{}","scopes":["PROFILE_READ"]}]`, "whole segment"},
		{"percent", `[{"method":"GET","path":"/v2/a%2Fb","scopes":["PROFILE_READ"]}]`, "not allowed"},
		{"neither", `[{"method":"GET","path":"/v2/x"}]`, `needs "scopes" or "public": true`},
		{"both", `[{"method":"GET","path":"/v2/x","scopes":["PROFILE_READ"],"public":true}]`, "not both"},
		{"duplicate scope", `[{"method":"GET","path":"/v2/x","scopes":["PROFILE_READ","PROFILE_READ"]}]`, "listed twice"},
		{"duplicate route", `[{"method":"GET","path":"/v2/x/{a}","scopes":["PROFILE_READ"]},{"method":"GET","path":"/v2/x/{b}","public":true}]`, "row 2 (GET /v2/x/{b}): same method and pattern as row 1"},
		{"trailing data", `[] []`, "trailing data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadTable(strings.NewReader(tc.json))
			if !errors.Is(err, ErrBadTable) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadTable(%s) error = %v; want ErrBadTable containing %q", tc.json, err, tc.want)
			}
		})
	}
}

func TestLoadTableFileAndMerge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes.json")
	extra := `[
  {"method": "GET", "path": "/v2/webhooks/{id}", "scopes": ["EVENT_TYPE_READ", "BOOKING_READ"]},
  {"method": "POST", "path": "/v2/calendars/{cal}/save", "scopes": ["APPS_WRITE"]},
  {"method": "GET", "path": "/v2/me", "scopes": ["PROFILE_WRITE"]}
]`
	if err := os.WriteFile(path, []byte(extra), 0o600); err != nil {
		t.Fatal(err)
	}
	op, err := LoadTableFile(path)
	if err != nil {
		t.Fatalf("LoadTableFile: %v", err)
	}
	def := DefaultTable()
	m := def.Merge(op)
	if n := len(m.Routes()); n != 152 {
		t.Errorf("merged table has %d routes; want 150 + 2 new", n)
	}
	if r, ok := m.Match("GET", "/v2/webhooks/9"); !ok || !slices.Equal(r.Scopes, []string{"EVENT_TYPE_READ", "BOOKING_READ"}) {
		t.Errorf("merged Match(GET /v2/webhooks/9) = %+v, %v", r, ok)
	}
	if r, ok := m.Match("GET", "/v2/me"); !ok || !slices.Equal(r.Scopes, []string{"PROFILE_WRITE"}) {
		t.Errorf("merged Match(GET /v2/me) = %+v; want the operator's row", r)
	}
	// Static beats param across the two tables too.
	if r, ok := m.Match("POST", "/v2/calendars/ics-feed/save"); !ok || r.Path != "/v2/calendars/ics-feed/save" {
		t.Errorf("merged Match(POST /v2/calendars/ics-feed/save) = %q", r.Path)
	}
	if r, ok := m.Match("POST", "/v2/calendars/x/save"); !ok || r.Path != "/v2/calendars/{cal}/save" {
		t.Errorf("merged Match(POST /v2/calendars/x/save) = %q", r.Path)
	}
	// The inputs are unchanged.
	if r, _ := def.Match("GET", "/v2/me"); !slices.Equal(r.Scopes, []string{"PROFILE_READ"}) {
		t.Errorf("Merge changed the default table: %+v", r)
	}
	if _, ok := def.Match("GET", "/v2/webhooks/9"); ok {
		t.Error("Merge added a route to the default table")
	}

	if _, err := LoadTableFile(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadTableFile(missing) = %v; want ErrNotExist", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`[{"method":"GET","path":"/v2/x","scopes":["NOPE"]}]`), 0o600)
	if _, err := LoadTableFile(bad); !errors.Is(err, ErrBadTable) || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadTableFile(bad) = %v; want ErrBadTable naming the file", err)
	}
}

// TestRoutesMatchReference checks that the embedded routes.json holds
// exactly the rows of the reference route table, in order. The reference is
// kept as testdata/api-routes.md, a verbatim copy of the scheduling API's
// api-routes.md: when that table changes, copy it here and update routes.json
// until this test passes.
func TestRoutesMatchReference(t *testing.T) {
	const ref = "testdata/api-routes.md"
	md, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	var want []Route
	public := false
	for line := range strings.Lines(string(md)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## ") {
			public = strings.Contains(strings.ToLower(line), "public")
			continue
		}
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case public && cells[0] != "Method":
			want = append(want, Route{Method: cells[0], Path: cells[1], Public: true})
		case !public && cells[0] != "Scope":
			want = append(want, Route{Method: cells[1], Path: cells[2], Scopes: []string{cells[0]}})
		}
	}
	if len(want) == 0 {
		t.Fatalf("no rows parsed from %s", ref)
	}
	got := DefaultTable().Routes()
	if len(got) != len(want) {
		t.Errorf("routes.json has %d rows; %s has %d", len(got), ref, len(want))
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.Method != w.Method || g.Path != w.Path || g.Public != w.Public || !slices.Equal(g.Scopes, w.Scopes) {
			t.Errorf("row %d: routes.json %+v; api-routes.md %+v", i+1, g, w)
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	tbl := DefaultTable()
	allocs := testing.AllocsPerRun(100, func() {
		tbl.Match("GET", "/v2/organizations/1/teams/2/event-types/3/private-links")
		tbl.Match("PATCH", "/v2/schedules/default")
		tbl.Match("GET", "/v2/unknown/route")
	})
	if allocs != 0 {
		t.Errorf("Match allocates %v times per run; want 0", allocs)
	}
}
