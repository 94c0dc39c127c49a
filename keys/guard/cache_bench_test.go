package guard

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkGuard is the whole middleware with a real verifier and its
// verified-token cache: "repeated" sends one ES256 token again and again
// (one client), "distinct" cycles through 10,000 distinct tokens (10,000
// clients, each seen once before the timer starts: the cost of a first
// sight is "uncached"), "uncached" is the repeated token with the cache
// off.
// The /parallel variants run on every core.
func BenchmarkGuard(b *testing.B) {
	const distinct = 10_000
	vc, mintC := es256Issuer(b, 0)
	vu, mintU := es256Issuer(b, -1)
	one := mintC("j1")
	many := make([]string, distinct)
	for i := range many {
		many[i] = mintC("j" + strconv.Itoa(i))
	}
	for _, bc := range []struct {
		name string
		v    Verifier
		toks []string
	}{
		{"repeated", vc, []string{one}},
		{"distinct", vc, many},
		{"uncached", vu, []string{mintU("j1")}},
	} {
		g := New(Config{Verifier: bc.v, Logger: slog.New(slog.DiscardHandler)})
		h := g.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		reqs := make([]*http.Request, len(bc.toks))
		for i, tok := range bc.toks {
			reqs[i] = httptest.NewRequest("GET", "/v2/organizations/1/teams/2/event-types/3", nil)
			reqs[i].Header.Set("Authorization", "Bearer "+tok)
		}
		// Every token once before the clock starts (checking the answer):
		// the cache is warm, as for clients that already called once.
		for _, r := range reqs {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
		b.Run(bc.name, func(b *testing.B) {
			w := discardWriter{h: http.Header{}}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h.ServeHTTP(w, reqs[i])
				if i++; i == len(reqs) {
					i = 0
				}
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := discardWriter{h: http.Header{}}
				i := int(next.Add(int64(len(reqs)/2+1))) % len(reqs)
				for pb.Next() {
					h.ServeHTTP(w, reqs[i])
					if i++; i == len(reqs) {
						i = 0
					}
				}
			})
		})
	}
}
