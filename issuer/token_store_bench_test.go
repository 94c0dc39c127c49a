package issuer

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/cache"
	"oauthd/data/memory"
	"oauthd/keys"
	"oauthd/keys/verify"
)

// prodEnv is the token endpoint as serve wires it: bbolt (group commit,
// fsync) behind data/cache, and *keys.Manager signing ES256.
type prodEnv struct {
	e      *echo.Echo
	store  data.Store
	secret string
}

func newProdEnv(b *testing.B) *prodEnv {
	b.Helper()
	bs, err := bolt.Open(filepath.Join(b.TempDir(), "bench.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return newProdEnvOn(b, bs)
}

func newProdEnvOn(b *testing.B, under data.Store) *prodEnv {
	b.Helper()
	ctx := context.Background()
	store := cache.New(under)
	b.Cleanup(func() { store.Close() })
	logger := slog.New(slog.DiscardHandler)
	km, err := keys.New(ctx, keys.Config{Store: store, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	v, err := verify.New(verify.Config{Issuer: tkIssuer, Keys: km})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{
		Store: store, Signer: km, Verifier: v, Logger: logger, Registerer: prometheus.NewRegistry(),
		MeAuth: func(next echo.HandlerFunc) echo.HandlerFunc { return next },
		Issuer: tkIssuer, AppURL: "https://app.example.com",
		RefreshTokenKey: km.RefreshTokenKey(), RefreshReuseGrace: DefaultRefreshReuseGrace,
	})
	if err != nil {
		b.Fatal(err)
	}
	env := &prodEnv{e: echo.New(), store: store, secret: data.NewSecret(data.PrefixClientSecret)}
	env.e.HTTPErrorHandler = HTTPErrorHandler(logger, nil)
	s.Register(env.e)
	now := time.Now().UTC()
	err = store.CreateClient(ctx, data.Client{
		ID: "conf", Name: "App", OwnerID: 1, Type: data.Confidential,
		RedirectURIs: []string{tkRedirect}, Scopes: []string{"PROFILE_READ", "BOOKING_READ"},
		Status: data.StatusApproved, CreatedAt: now, UpdatedAt: now,
		Secrets: []data.ClientSecret{{ID: "cs_a", Hash: data.Hash(env.secret), CreatedAt: now, LastUsedAt: now.Add(time.Hour)}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return env
}

const benchVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

// code stores a fresh PKCE code for client conf and returns it.
func (env *prodEnv) code(b *testing.B) string {
	code := data.NewAuthCode(time.Now())
	now := time.Now().UTC()
	err := env.store.CreateAuthCode(context.Background(), data.AuthCode{
		Hash: data.AuthCodeKey(code), ClientID: "conf", UserID: 1, RedirectURI: tkRedirect,
		Scopes: []string{"PROFILE_READ", "BOOKING_READ"}, CodeChallenge: tkChallenge(benchVerifier),
		CreatedAt: now, ExpiresAt: now.Add(time.Minute),
	})
	if err != nil {
		b.Fatal(err)
	}
	return code
}

// post runs one token request and returns the new refresh token.
func (env *prodEnv) post(b *testing.B, body string) string {
	return benchTokenPost(b, env.e, body)
}

func (env *prodEnv) codeBody(code string) string {
	return "grant_type=authorization_code&client_id=conf&client_secret=" + env.secret +
		"&code=" + code + "&redirect_uri=" + tkRedirect + "&code_verifier=" + benchVerifier
}

func (env *prodEnv) refreshBody(rt string) string {
	return "grant_type=refresh_token&client_id=conf&client_secret=" + env.secret + "&refresh_token=" + rt
}

// BenchmarkTokenRefreshProd is BenchmarkTokenRefresh as serve runs it:
// bbolt with fsync behind data/cache and *keys.Manager. serial is one
// chain (every grant waits for its own fsync); parallel16/parallel64 run
// that many chains, whose rotations share fsyncs (group commit).
func BenchmarkTokenRefreshProd(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		env := newProdEnv(b)
		rt := env.post(b, env.codeBody(env.code(b)))
		b.ReportAllocs()
		for b.Loop() {
			rt = env.post(b, env.refreshBody(rt))
		}
	})
	for _, chains := range []int{16, 64} {
		b.Run(fmt.Sprint("parallel", chains), func(b *testing.B) {
			env := newProdEnv(b)
			tokens := make(chan string, chains)
			for range chains {
				tokens <- env.post(b, env.codeBody(env.code(b)))
			}
			b.SetParallelism((chains + 1) / 2) // × GOMAXPROCS (2 here)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rt := <-tokens
				for pb.Next() {
					rt = env.post(b, env.refreshBody(rt))
				}
				tokens <- rt
			})
		})
	}
}

// BenchmarkTokenCodeProd is the authorization_code exchange (PKCE S256) as
// serve runs it, shaped like BenchmarkTokenRefreshProd (serial, then 16
// and 64 concurrent exchanges) for the issue's "code exchange within 10% of
// refresh". All b.N codes are stored before the timer starts (64 at a
// time, sharing fsyncs).
func BenchmarkTokenCodeProd(b *testing.B) {
	for _, par := range []int{0, 16, 64} {
		name := "serial"
		if par > 0 {
			name = fmt.Sprint("parallel", par)
		}
		b.Run(name, func(b *testing.B) {
			env := newProdEnv(b)
			bodies := make(chan string, b.N)
			var wg sync.WaitGroup
			for w := range 64 {
				wg.Go(func() {
					for i := w; i < b.N; i += 64 {
						bodies <- env.codeBody(env.code(b))
					}
				})
			}
			wg.Wait()
			b.ReportAllocs()
			b.ResetTimer()
			if par == 0 {
				for range b.N {
					env.post(b, <-bodies)
				}
				return
			}
			b.SetParallelism((par + 1) / 2) // × GOMAXPROCS (2 here)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					env.post(b, <-bodies)
				}
			})
		})
	}
}

// BenchmarkTokenRefreshMem is BenchmarkTokenRefreshProd/serial on
// data/memory behind data/cache (no disk): the CPU cost of one grant with
// the real signer.
func BenchmarkTokenRefreshMem(b *testing.B) {
	env := newProdEnvOn(b, memory.New())
	rt := env.post(b, env.codeBody(env.code(b)))
	b.ReportAllocs()
	for b.Loop() {
		rt = env.post(b, env.refreshBody(rt))
	}
}
