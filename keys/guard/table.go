package guard

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"oauthd/data/oauth"
	"oauthd/data/scope"
)

//go:embed routes.json
var defaultRoutes []byte

// ErrBadTable is wrapped by every error of [LoadTable] and [LoadTableFile]
// about the content of a route table.
var ErrBadTable = errors.New("bad route table")

// Route is one row of the route table: an HTTP method and a path pattern
// with the scopes a token needs to call it (all of them), or Public when
// the route needs no token at all.
//
// Path patterns start with "/v2/"; a segment "{name}" matches any one
// non-empty segment. Callers must not modify Scopes.
type Route struct {
	Method string   `json:"method"`
	Path   string   `json:"path"`
	Scopes []string `json:"scopes,omitempty"`
	Public bool     `json:"public,omitempty"`
}

// Table maps requests to routes. A Table is immutable once built and safe
// for concurrent use.
type Table struct {
	routes []Route // in load order; later rows replace earlier ones with the same key
	root   *node
}

// node is one segment of the trie. Static children beat the parameter
// child; when the static branch does not lead to a route for the method,
// Match backtracks to the parameter child, the way the upstream router
// would.
type node struct {
	static  map[string]*node
	param   *node
	methods map[string]*entry
}

type entry struct {
	route Route
	// wwwAuthenticate is the precomputed header of a 403 on this route.
	wwwAuthenticate string
}

// DefaultTable returns the table of the scheduling API's routes (every row
// of api-routes.md), embedded in the binary.
func DefaultTable() *Table {
	t, err := LoadTable(bytes.NewReader(defaultRoutes))
	if err != nil {
		// The embedded table is checked by the tests; this is a build defect.
		panic("guard: embedded routes.json: " + err.Error())
	}
	return t
}

// LoadTable reads a route table in the format of the embedded routes.json:
// a JSON array of {"method", "path", "scopes": [...]} or
// {"method", "path", "public": true}. Every row is validated: the method
// is upper-case letters, the path starts with "/v2/" and has no empty,
// "." or ".." segments, parameters are whole segments "{name}", and every
// scope is one of the scopes of package scope. A row must have scopes or
// be public, not both; two rows for the same method and pattern (ignoring
// parameter names) are an error. Errors wrap [ErrBadTable] and name the row.
func LoadTable(r io.Reader) (*Table, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var rows []Route
	if err := dec.Decode(&rows); err != nil {
		return nil, fmt.Errorf("%w: decode JSON: %w", ErrBadTable, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON array", ErrBadTable)
	}
	seen := make(map[string]int, len(rows))
	for i := range rows {
		rt := &rows[i]
		if err := validateRoute(rt); err != nil {
			return nil, fmt.Errorf("%w: row %d (%s %s): %w", ErrBadTable, i+1, rt.Method, rt.Path, err)
		}
		k := routeKey(*rt)
		if j, dup := seen[k]; dup {
			return nil, fmt.Errorf("%w: row %d (%s %s): same method and pattern as row %d (%s)",
				ErrBadTable, i+1, rt.Method, rt.Path, j+1, rows[j].Path)
		}
		seen[k] = i
	}
	return build(rows), nil
}

// LoadTableFile reads a route table from the file at path; see [LoadTable].
func LoadTableFile(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load route table: %w", err)
	}
	defer f.Close()
	t, err := LoadTable(f)
	if err != nil {
		return nil, fmt.Errorf("load route table %s: %w", path, err)
	}
	return t, nil
}

// Merge returns a new table holding the routes of t and then those of
// other: a route of other with the same method and pattern as a route of t
// (parameter names ignored) replaces it, so an operator's file can add
// routes to the default table and correct the scope of an existing one.
// Neither t nor other is modified; a nil other returns t.
func (t *Table) Merge(other *Table) *Table {
	if other == nil {
		return t
	}
	idx := make(map[string]int, len(t.routes)+len(other.routes))
	rows := make([]Route, 0, len(t.routes)+len(other.routes))
	for _, rs := range [][]Route{t.routes, other.routes} {
		for _, r := range rs {
			k := routeKey(r)
			if i, ok := idx[k]; ok {
				rows[i] = r
				continue
			}
			idx[k] = len(rows)
			rows = append(rows, r)
		}
	}
	return build(rows)
}

// Routes returns a copy of the table's rows in load order.
func (t *Table) Routes() []Route {
	out := make([]Route, len(t.routes))
	copy(out, t.routes)
	return out
}

// Match finds the route for a request. path must be canonical (see
// [CanonicalPath]); a path with empty, "." or ".." segments matches
// nothing. A single trailing slash is ignored ("/v2/me/" matches
// "/v2/me"). Static segments beat parameters: "/v2/schedules/default" is
// the default-schedule route, not "{scheduleId}"; when a static branch has
// no route for the method, the parameter branch is tried. A HEAD request
// matches the GET route when there is no HEAD route. Methods are
// case-sensitive. Match does not allocate.
func (t *Table) Match(method, path string) (Route, bool) {
	e := t.match(method, path)
	if e == nil {
		return Route{}, false
	}
	return e.route, true
}

func (t *Table) match(method, path string) *entry {
	if len(path) == 0 || path[0] != '/' {
		return nil
	}
	rest := strings.TrimSuffix(path[1:], "/")
	if rest == "" {
		return nil
	}
	if e := t.root.lookup(method, rest); e != nil {
		return e
	}
	if method == "HEAD" {
		return t.root.lookup("GET", rest)
	}
	return nil
}

// lookup matches rest (the path without its leading slash) below n.
func (n *node) lookup(method, rest string) *entry {
	seg, tail, more := strings.Cut(rest, "/")
	if seg == "" || seg == "." || seg == ".." {
		return nil
	}
	if c := n.static[seg]; c != nil {
		if e := c.at(method, tail, more); e != nil {
			return e
		}
	}
	if n.param != nil {
		return n.param.at(method, tail, more)
	}
	return nil
}

func (n *node) at(method, tail string, more bool) *entry {
	if !more {
		return n.methods[method]
	}
	return n.lookup(method, tail)
}

func build(rows []Route) *Table {
	t := &Table{routes: rows, root: &node{}}
	for _, r := range rows {
		n := t.root
		for _, seg := range strings.Split(strings.TrimPrefix(r.Path, "/"), "/") {
			if isParam(seg) {
				if n.param == nil {
					n.param = &node{}
				}
				n = n.param
				continue
			}
			if n.static == nil {
				n.static = make(map[string]*node)
			}
			c := n.static[seg]
			if c == nil {
				c = &node{}
				n.static[seg] = c
			}
			n = c
		}
		if n.methods == nil {
			n.methods = make(map[string]*entry)
		}
		e := &entry{route: r}
		if !r.Public {
			e.wwwAuthenticate = `Bearer error="` + oauth.InsufficientScope + `", scope="` + scope.Join(r.Scopes) + `"`
		}
		n.methods[r.Method] = e
	}
	return t
}

// routeKey identifies a route by method and pattern, ignoring parameter
// names.
func routeKey(r Route) string {
	segs := strings.Split(r.Path, "/")
	for i, s := range segs {
		if isParam(s) {
			segs[i] = "{}"
		}
	}
	return r.Method + " " + strings.Join(segs, "/")
}

func isParam(seg string) bool {
	return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

func validateRoute(r *Route) error {
	if r.Method == "" {
		return errors.New("method is empty")
	}
	for _, c := range []byte(r.Method) {
		if c < 'A' || c > 'Z' {
			return fmt.Errorf("method %q must be upper-case letters", r.Method)
		}
	}
	if !strings.HasPrefix(r.Path, "/v2/") {
		return fmt.Errorf("path %q must start with /v2/", r.Path)
	}
	if strings.HasSuffix(r.Path, "/") {
		return fmt.Errorf("path %q must not end with /", r.Path)
	}
	for _, seg := range strings.Split(r.Path[1:], "/") {
		if err := validateSegment(seg); err != nil {
			return fmt.Errorf("path %q: %w", r.Path, err)
		}
	}
	switch {
	case r.Public && len(r.Scopes) > 0:
		return errors.New("a route is either public or has scopes, not both")
	case !r.Public && len(r.Scopes) == 0:
		return errors.New(`a route needs "scopes" or "public": true`)
	}
	for i, s := range r.Scopes {
		if !scope.Known(s) {
			return fmt.Errorf("unknown scope %q", s)
		}
		for _, prev := range r.Scopes[:i] {
			if prev == s {
				return fmt.Errorf("scope %q listed twice", s)
			}
		}
	}
	return nil
}

func validateSegment(seg string) error {
	switch seg {
	case "":
		return errors.New("empty segment")
	case ".", "..":
		return fmt.Errorf("dot segment %q", seg)
	}
	if seg[0] == '{' || seg[len(seg)-1] == '}' {
		if !isParam(seg) {
			return fmt.Errorf("parameter %q must be a whole segment {name}", seg)
		}
		for _, c := range seg[1 : len(seg)-1] {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
				return fmt.Errorf("parameter %q: name must be letters, digits or _", seg)
			}
		}
		return nil
	}
	for _, c := range seg {
		if c == '{' || c == '}' || c == '%' || c == '\\' || c == '?' || c == '#' || c <= ' ' || c == 0x7f {
			return fmt.Errorf("segment %q: character %q not allowed", seg, c)
		}
	}
	return nil
}
