package verify

import "testing"

// TestParseHeader: the members Verify reads, as the generic jwt parser
// reads them.
func TestParseHeader(t *testing.T) {
	tests := []struct {
		in   string
		want header
		ok   bool
	}{
		{`{"alg":"ES256","kid":"k1","typ":"at+jwt"}`, header{alg: "ES256", kid: "k1", typ: "at+jwt", hasAlg: true}, true},
		{` { "alg" : "ES256" , "kid" : "k1" } `, header{alg: "ES256", kid: "k1", hasAlg: true}, true},
		{`{}`, header{}, true},
		{`{"ALG":"ES256","Kid":"k1"}`, header{}, true},
		{`{"alg":"ES256","alg":"RS256"}`, header{alg: "RS256", hasAlg: true}, true},
		{`{"alg":"ES256","alg":1}`, header{}, true},
		{`{"\u0061lg":"ES256","k\u0069d":"k\"1","typ":"at\/jwt"}`, header{alg: "ES256", kid: `k"1`, typ: "at/jwt", hasAlg: true}, true},
		{`{"alg":["ES256"],"kid":{"v":"k"},"typ":true}`, header{}, true},
		{`{"alg":"ES256"`, header{}, false},
		{`{"alg":"ES256"} x`, header{}, false},
		{`["alg","ES256"]`, header{}, false},
		{`null`, header{}, false},
		{``, header{}, false},
	}
	for _, tc := range tests {
		got, ok := parseHeader([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseHeader(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
