package issuer

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"oauthd/keys/verify/dpoptest"
)

// BenchmarkTokenRefreshProdDPoP is BenchmarkTokenRefreshProd with a DPoP
// proof on every request: the proof check (signature, claims) and the jti
// write through the group commit (data.Store.UseNonce), before the
// rotation. The proofs are signed before the timer starts (as a client
// would, off the server); compare with BenchmarkTokenRefreshProd.
func BenchmarkTokenRefreshProdDPoP(b *testing.B) {
	for _, chains := range []int{1, 16, 64} {
		name := "serial"
		if chains > 1 {
			name = fmt.Sprint("parallel", chains)
		}
		b.Run(name, func(b *testing.B) {
			env := newProdEnv(b)
			k := dpoptest.NewES256()
			proofs := make(chan string, b.N+chains)
			for range b.N + chains {
				proofs <- k.Proof("POST", tkIssuer+"/v2/auth/oauth2/token", "")
			}
			post := func(body string) string {
				req := httptest.NewRequest(http.MethodPost, "/v2/auth/oauth2/token", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("DPoP", <-proofs)
				rec := httptest.NewRecorder()
				env.e.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"token_type":"DPoP"`) {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				out := rec.Body.String()
				i := strings.Index(out, "oauthd_rt_")
				return out[i : i+strings.IndexByte(out[i:], '"')]
			}
			tokens := make(chan string, chains)
			for range chains {
				tokens <- post(env.codeBody(env.code(b)))
			}
			b.ReportAllocs()
			b.ResetTimer()
			if chains == 1 {
				rt := <-tokens
				for range b.N {
					rt = post(env.refreshBody(rt))
				}
				return
			}
			b.SetParallelism((chains + 1) / 2)
			b.RunParallel(func(pb *testing.PB) {
				rt := <-tokens
				for pb.Next() {
					rt = post(env.refreshBody(rt))
				}
				tokens <- rt
			})
		})
	}
}
