package verify

import (
	"encoding/json"
	"testing"
)

// mapHeader is the reference parseHeader must agree with: the generic
// jwt parser's json.Unmarshal into a map and string type assertions.
func mapHeader(b []byte) (header, bool) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return header{}, false
	}
	var h header
	h.alg, h.hasAlg = m["alg"].(string)
	h.kid, _ = m["kid"].(string)
	h.typ, _ = m["typ"].(string)
	return h, true
}

var headerCases = []string{
	`{"alg":"ES256","kid":"k1","typ":"at+jwt"}`,
	` { "alg" : "ES256" , "kid" : "k1" , "typ" : "at+jwt" } `,
	`{}`,
	`{"ALG":"ES256","Kid":"k1","TYP":"at+jwt"}`,
	`{"alg":"ES256","alg":"RS256"}`,
	`{"alg":"ES256","alg":1}`,
	`{"kid":"a","kid":null}`,
	`{"\u0061lg":"ES256","k\u0069d":"k\"1","typ":"at\/jwt"}`,
	`{"alg":"ES256","x":{"alg":"RS256","y":["}",{"kid":"z"}]},"kid":"k"}`,
	`{"alg":["ES256"],"kid":{"v":"k"},"typ":true}`,
	`{"kid":"\xff\xfe","typ":"é"}`,
	`{"alg":"ES256"`,
	`{"alg":"ES256"} x`,
	`["alg","ES256"]`,
	`"alg"`,
	`null`,
	``,
	`{"alg":-1.5e3,"kid":"k"}`,
}

func TestParseHeaderMatchesMap(t *testing.T) {
	for _, in := range headerCases {
		got, gotOK := parseHeader([]byte(in))
		want, wantOK := mapHeader([]byte(in))
		if gotOK != wantOK || (gotOK && got != want) {
			t.Errorf("parseHeader(%q) = %+v, %v; want %+v, %v", in, got, gotOK, want, wantOK)
		}
	}
}

// FuzzParseHeader checks parseHeader against the map-based reference on
// arbitrary input.
func FuzzParseHeader(f *testing.F) {
	for _, in := range headerCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, gotOK := parseHeader(in)
		want, wantOK := mapHeader(in)
		if gotOK != wantOK || (gotOK && got != want) {
			t.Fatalf("parseHeader(%q) = %+v, %v; want %+v, %v", in, got, gotOK, want, wantOK)
		}
	})
}
