package verify

import "encoding/json"

// header holds the JOSE header members Verify reads: what the generic jwt
// parser reads, json.Unmarshal into a map[string]any followed by a string
// type assertion (member names match exactly, the last of duplicate
// members wins, and a member whose value is not a string counts as
// absent). A hand-written scanner without the map measured no faster in
// Verify's own figure (docs/decisions/README.md) and was removed.
type header struct {
	alg, kid, typ string
	hasAlg        bool
}

// parseHeader parses the decoded JOSE header b, which must be a JSON
// object. Members other than alg, kid and typ are ignored.
func parseHeader(b []byte) (header, bool) {
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
