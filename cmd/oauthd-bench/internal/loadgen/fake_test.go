package loadgen

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeAS is a token endpoint that rotates refresh tokens and accepts each
// authorization code once, counting what it answered. A refresh token is
// "CHAIN.GEN"; only a chain's current token is good. Chain "dead" is
// refused at once; chain "flaky" gets a 503 on its 1st, 4th, 7th, …
// request (before rotating), so that it must send the same token again.
type fakeAS struct {
	clientID, secret string
	redirectURI      string

	mu       sync.Mutex
	current  map[string]int            // chain → its current generation
	perChain map[string]int            // chain → requests
	oks      map[string]int            // chain → 200s
	statuses map[int]int64             // status → responses
	codes    map[string]string         // unused code → its verifier
	minted   int                       // codes minted so far
	onOK     func(chain string, n int) // after the n-th 200 of a chain (refresh)
	// drop, when it returns true for the n-th request of a chain, closes
	// the connection without an answer (before rotating); dropped counts
	// them.
	drop    func(chain string, n int) bool
	dropped int
	// closeAfter lists chains answered with "Connection: close".
	closeAfter map[string]bool
	remotes    map[string]bool // the clients' addresses seen (one per connection)
}

func newFakeAS(t *testing.T, chains ...string) (*fakeAS, *httptest.Server) {
	f := &fakeAS{clientID: "cli ent", secret: "s&cret", redirectURI: "http://127.0.0.1:9/cb",
		current: map[string]int{}, perChain: map[string]int{}, oks: map[string]int{}, statuses: map[int]int64{}, codes: map[string]string{}}
	for _, c := range chains {
		f.current[c] = 0
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeAS) endpoint(srv *httptest.Server) Endpoint {
	return Endpoint{HTTP: NewHTTPClient(8), TokenURL: srv.URL, ClientID: f.clientID, ClientSecret: f.secret}
}

// tokens are the chains' current tokens.
func (f *fakeAS) token(chain string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return chain + "." + strconv.Itoa(f.current[chain])
}

func (f *fakeAS) reply(w http.ResponseWriter, status int, body any) {
	f.statuses[status]++
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func (f *fakeAS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var after func()
	defer func() {
		if after != nil {
			after()
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.remotes == nil {
		f.remotes = map[string]bool{}
	}
	f.remotes[r.RemoteAddr] = true
	bad := func(code string) { f.reply(w, http.StatusBadRequest, map[string]string{"error": code}) }
	if r.PostFormValue("client_id") != f.clientID || r.PostFormValue("client_secret") != f.secret {
		f.reply(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	switch r.PostFormValue("grant_type") {
	case "refresh_token":
		chain, gen, _ := strings.Cut(r.PostFormValue("refresh_token"), ".")
		f.perChain[chain]++
		if f.drop != nil && f.drop(chain, f.perChain[chain]) {
			f.dropped++
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if f.closeAfter[chain] {
			w.Header().Set("Connection", "close")
		}
		cur, known := f.current[chain]
		if !known || chain == "dead" || gen != strconv.Itoa(cur) {
			bad("invalid_grant")
			return
		}
		if chain == "flaky" && f.perChain[chain]%3 == 1 {
			f.reply(w, http.StatusServiceUnavailable, map[string]string{"error": "temporarily_unavailable"})
			return
		}
		f.current[chain]++
		f.oks[chain]++
		f.reply(w, http.StatusOK, map[string]string{"access_token": "at", "refresh_token": chain + "." + strconv.Itoa(f.current[chain])})
		if f.onOK != nil {
			n, hook := f.oks[chain], f.onOK
			after = func() { hook(chain, n) }
		}
	case "authorization_code":
		code := r.PostFormValue("code")
		verifier, ok := f.codes[code]
		if !ok || r.PostFormValue("redirect_uri") != f.redirectURI || r.PostFormValue("code_verifier") != verifier {
			bad("invalid_grant")
			return
		}
		delete(f.codes, code)
		f.reply(w, http.StatusOK, map[string]string{"access_token": "at", "refresh_token": "from." + code})
	default:
		bad("unsupported_grant_type")
	}
}

// mint registers n codes and returns them.
func (f *fakeAS) mint(n int) []Code {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Code, n)
	for i := range out {
		f.minted++
		out[i] = Code{Code: "c" + strconv.Itoa(f.minted), Verifier: "v-" + strconv.Itoa(f.minted)}
		f.codes[out[i].Code] = out[i].Verifier
	}
	return out
}

func (f *fakeAS) sent(status int) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statuses[status]
}

func (f *fakeAS) okCount(chain string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.oks[chain]
}
