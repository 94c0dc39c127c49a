package verify

import (
	"encoding/json"
	"unicode/utf8"
)

// header holds the JOSE header members Verify reads. It is what
// json.Unmarshal into a map[string]any followed by a string type assertion
// would give (the generic jwt parser's way), without the map: member names
// match exactly (case-sensitive), the last of duplicate members wins, and
// a member whose value is not a string counts as absent.
type header struct {
	alg, kid, typ string
	hasAlg        bool
}

// parseHeader parses the decoded JOSE header b, which must be a JSON
// object. Members other than alg, kid and typ are skipped.
func parseHeader(b []byte) (header, bool) {
	var h header
	if !json.Valid(b) {
		return h, false
	}
	// b is valid JSON from here on, so the scanner below only has to find
	// the ends of tokens, not check them.
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return h, false
	}
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return h, true
	}
	for {
		// b[i] is the '"' of a member name.
		kEnd := skipString(b, i)
		name, ok := memberName(b[i:kEnd])
		if !ok {
			return h, false
		}
		i = skipSpace(b, kEnd)
		i = skipSpace(b, i+1) // past ':'
		vEnd := skipValue(b, i)
		if name == "alg" || name == "kid" || name == "typ" {
			var val string
			isStr := b[i] == '"'
			if isStr {
				if val, ok = commonString(b[i:vEnd]); !ok {
					return h, false
				}
			}
			switch name {
			case "alg":
				h.alg, h.hasAlg = val, isStr
			case "kid":
				h.kid = val
			case "typ":
				h.typ = val
			}
		}
		i = skipSpace(b, vEnd)
		if b[i] == '}' {
			return h, true
		}
		i = skipSpace(b, i+1) // past ','
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the JSON string starting at
// b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index just past the JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// memberName returns the member name in the JSON string literal s if it is
// one of alg, kid or typ, and "" for any other name.
func memberName(s []byte) (string, bool) {
	if len(s) == len(`"alg"`) {
		switch string(s) { // no allocation: compared in place
		case `"alg"`:
			return "alg", true
		case `"kid"`:
			return "kid", true
		case `"typ"`:
			return "typ", true
		}
	}
	if !hasEscapeOrNonASCII(s) {
		return "", true
	}
	name, ok := jsonString(s) // escaped, e.g. "\u0061lg" is alg too
	if !ok {
		return "", false
	}
	switch name {
	case "alg", "kid", "typ":
		return name, true
	}
	return "", true
}

func hasEscapeOrNonASCII(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// commonString is jsonString without the copy for the usual alg and typ
// values.
func commonString(s []byte) (string, bool) {
	switch string(s) { // no allocation: compared in place
	case `"ES256"`:
		return ES256, true
	case `"EdDSA"`:
		return EdDSA, true
	case `"RS256"`:
		return RS256, true
	case `"at+jwt"`:
		return "at+jwt", true
	}
	return jsonString(s)
}

// jsonString returns the value of the JSON string literal s (quotes
// included). Plain ASCII without escapes is the common case and costs
// one copy; anything else goes through encoding/json so that escapes and
// invalid UTF-8 come out exactly as json.Unmarshal makes them.
func jsonString(s []byte) (string, bool) {
	if hasEscapeOrNonASCII(s) {
		var v string
		if err := json.Unmarshal(s, &v); err != nil {
			return "", false
		}
		return v, true
	}
	return string(s[1 : len(s)-1]), true
}
