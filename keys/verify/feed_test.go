package verify_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/keys/verify"
)

// feedServer serves a feed document that the test sets.
type feedServer struct {
	*httptest.Server
	mu     sync.Mutex
	doc    string
	status int
	hits   int
}

func newFeedServer(t *testing.T) *feedServer {
	fs := &feedServer{status: http.StatusOK}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		fs.hits++
		w.WriteHeader(fs.status)
		_, _ = w.Write([]byte(fs.doc))
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *feedServer) set(doc string, status int) {
	fs.mu.Lock()
	fs.doc, fs.status = doc, status
	fs.mu.Unlock()
}

// feedDoc signs a feed document with k.
func feedDoc(t *testing.T, k testKey, iat time.Time, ids []string, hdr map[string]any) string {
	t.Helper()
	return mint(t, k, jwt.MapClaims{
		"iss": issuer, "iat": iat.Unix(), "exp": iat.Add(5 * time.Minute).Unix(),
		"window": 1860, "revoked_grants": ids,
	}, with(jwt.MapClaims{"typ": verify.FeedTyp}, func() []any {
		var kv []any
		for h, v := range hdr {
			kv = append(kv, h, v)
		}
		return kv
	}()...))
}

func TestRevocationFeed(t *testing.T) {
	es, ed, _ := fixedKeys(t)
	c := newClock()
	srv := newFeedServer(t)
	feed, err := verify.NewRevocationFeed(verify.FeedConfig{URL: srv.URL, Issuer: issuer, Keys: staticKeys{es.kid: es, ed.kid: ed}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	v, err := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now, Revoked: feed})
	if err != nil {
		t.Fatal(err)
	}
	revokedTok := mint(t, es, with(validClaims(c.Now()), "grant_id", "g-revoked"), nil)
	liveTok := mint(t, es, with(validClaims(c.Now()), "grant_id", "g-live"), nil)
	oldTok := mint(t, es, validClaims(c.Now()), nil) // no grant_id

	// Before any fetch nothing is refused (fail open). This success also
	// lets any cache of verified tokens remember revokedTok: the refusal
	// below must hold for a token verified before its grant was revoked.
	if _, err := v.Verify(t.Context(), revokedTok); err != nil {
		t.Fatalf("Verify before the first fetch: %v", err)
	}
	doc := feedDoc(t, es, c.Now(), []string{"g-other", "g-revoked"}, nil)
	srv.set(doc, http.StatusOK)
	// The feed is not an access token (typ), whatever it carries.
	if _, err := v.Verify(t.Context(), doc); !errors.Is(err, verify.ErrInvalidToken) {
		t.Fatalf("Verify(the feed document) = %v; want ErrInvalidToken", err)
	}
	if err := feed.Refresh(t.Context()); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if _, err := v.Verify(t.Context(), revokedTok); !errors.Is(err, verify.ErrGrantRevoked) || !errors.Is(err, verify.ErrInvalidToken) {
		t.Fatalf("Verify(revoked grant) = %v; want ErrInvalidToken wrapping ErrGrantRevoked", err)
	}
	for name, tok := range map[string]string{"live grant": liveTok, "no grant_id": oldTok} {
		if _, err := v.Verify(t.Context(), tok); err != nil {
			t.Fatalf("Verify(%s) = %v; want nil", name, err)
		}
	}

	// Documents that must not replace the list in use.
	later := c.Now().Add(time.Second)
	bad := []struct {
		name string
		doc  string
	}{
		{"access-token typ", mint(t, es, jwt.MapClaims{"iss": issuer, "iat": later.Unix(), "exp": later.Add(time.Minute).Unix(), "revoked_grants": []string{}}, nil)},
		{"wrong issuer", mint(t, es, jwt.MapClaims{"iss": "https://evil.test", "iat": later.Unix(), "exp": later.Add(time.Minute).Unix(), "revoked_grants": []string{}}, map[string]any{"typ": verify.FeedTyp})},
		{"no exp", mint(t, es, jwt.MapClaims{"iss": issuer, "iat": later.Unix(), "revoked_grants": []string{}}, map[string]any{"typ": verify.FeedTyp})},
		{"expired", feedDoc(t, es, c.Now().Add(-time.Hour), []string{}, nil)},
		{"older than the one in use", feedDoc(t, es, c.Now().Add(-10*time.Second), []string{}, nil)},
		{"unknown kid", feedDoc(t, es, later, []string{}, map[string]any{"kid": "nope"})},
		{"alg none", "eyJhbGciOiJub25lIiwidHlwIjoicmV2b2tlZC1ncmFudHMrand0In0." + b64(map[string]any{"iss": issuer, "iat": later.Unix(), "exp": later.Add(time.Minute).Unix(), "revoked_grants": []string{}}) + "."},
		{"bad signature", feedDoc(t, es, later, []string{}, nil)[:40] + "x" + feedDoc(t, es, later, []string{}, nil)[41:]},
		{"garbage", "not a jws"},
	}
	for _, tc := range bad {
		srv.set(tc.doc, http.StatusOK)
		if err := feed.Refresh(t.Context()); err == nil {
			t.Errorf("Refresh(%s) = nil; want an error", tc.name)
		}
		if _, err := v.Verify(t.Context(), revokedTok); !errors.Is(err, verify.ErrGrantRevoked) {
			t.Errorf("after a %s document: Verify(revoked) = %v; want ErrGrantRevoked still", tc.name, err)
		}
	}
	// The issuer down: the last list stays in use (fail open on staleness
	// only when MaxStale is set).
	srv.set("", http.StatusServiceUnavailable)
	c.Add(time.Hour)
	if err := feed.Refresh(t.Context()); err == nil {
		t.Fatal("Refresh from a 503 = nil")
	}
	if err := feed.CheckGrant("g-revoked"); !errors.Is(err, verify.ErrGrantRevoked) {
		t.Fatalf("CheckGrant(revoked) while the issuer is down = %v", err)
	}
	// A newer list, signed by another published key, replaces it.
	srv.set(feedDoc(t, ed, c.Now(), []string{"g-live"}, nil), http.StatusOK)
	if err := feed.Refresh(t.Context()); err != nil {
		t.Fatalf("Refresh(newer list): %v", err)
	}
	if err := feed.CheckGrant("g-revoked"); err != nil {
		t.Fatalf("CheckGrant(g-revoked) after it left the list = %v", err)
	}
	if err := feed.CheckGrant("g-live"); !errors.Is(err, verify.ErrGrantRevoked) {
		t.Fatalf("CheckGrant(g-live) = %v; want ErrGrantRevoked", err)
	}
	st := feed.Status()
	if st.Grants != 1 || !st.Checked.Equal(c.Now()) || st.Failures == 0 {
		t.Fatalf("Status = %+v", st)
	}
}

func TestRevocationFeedMaxStale(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	srv := newFeedServer(t)
	feed, err := verify.NewRevocationFeed(verify.FeedConfig{URL: srv.URL, Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now, MaxStale: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := feed.CheckGrant("g"); !errors.Is(err, verify.ErrFeedStale) {
		t.Fatalf("CheckGrant before any fetch with MaxStale = %v; want ErrFeedStale", err)
	}
	srv.set(feedDoc(t, es, c.Now(), nil, nil), http.StatusOK)
	if err := feed.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := feed.CheckGrant("g"); err != nil {
		t.Fatalf("CheckGrant on a fresh feed = %v", err)
	}
	c.Add(2 * time.Minute)
	if err := feed.CheckGrant("g"); !errors.Is(err, verify.ErrFeedStale) {
		t.Fatalf("CheckGrant on a feed 2 min old with MaxStale 1 min = %v; want ErrFeedStale", err)
	}
}

// BenchmarkVerifyFeed compares Verify without a revoked-grants feed and
// with one holding 3000 revoked grants (the token's grant not among them).
func BenchmarkVerifyFeed(b *testing.B) {
	es, _, _ := fixedKeys(b)
	c := newClock()
	ids := make([]string, 3000)
	for i := range ids {
		ids[i] = "g" + time.Duration(i).String()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(mint(b, es, jwt.MapClaims{"iss": issuer, "iat": c.Now().Unix(), "exp": c.Now().Add(time.Minute).Unix(), "revoked_grants": ids}, map[string]any{"typ": verify.FeedTyp})))
	}))
	defer srv.Close()
	feed, err := verify.NewRevocationFeed(verify.FeedConfig{URL: srv.URL, Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now})
	if err != nil {
		b.Fatal(err)
	}
	if err := feed.Refresh(b.Context()); err != nil {
		b.Fatal(err)
	}
	tok := mint(b, es, with(validClaims(c.Now()), "grant_id", "g-live-grant-0123456789"), nil)
	for _, mode := range []struct {
		name string
		rev  verify.RevokedGrants
	}{{"off", nil}, {"on", feed}} {
		v, err := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now, Revoked: mode.rev})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("feed="+mode.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := b.Context()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := v.Verify(ctx, tok); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkVerifyFeedRatio alternates blocks of Verify without and with a
// feed of 3000 revoked grants, in the same loop, so that the load of a
// shared machine falls on both alike, and reports the throughput with the
// feed over the throughput without it ("on/off"; the target is ≥ 0.95),
// from the CPU time of the benchmark's thread (RUSAGE_THREAD: time spent
// descheduled by other work on the machine is not counted), and from
// wall-clock time ("on/off-wall").
func BenchmarkVerifyFeedRatio(b *testing.B) {
	es, _, _ := fixedKeys(b)
	c := newClock()
	ids := make([]string, 3000)
	for i := range ids {
		ids[i] = "g" + time.Duration(i).String()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(mint(b, es, jwt.MapClaims{"iss": issuer, "iat": c.Now().Unix(), "exp": c.Now().Add(time.Minute).Unix(), "revoked_grants": ids}, map[string]any{"typ": verify.FeedTyp})))
	}))
	defer srv.Close()
	feed, err := verify.NewRevocationFeed(verify.FeedConfig{URL: srv.URL, Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now})
	if err != nil {
		b.Fatal(err)
	}
	if err := feed.Refresh(b.Context()); err != nil {
		b.Fatal(err)
	}
	off, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now})
	on, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now, Revoked: feed})
	tok := mint(b, es, with(validClaims(c.Now()), "grant_id", "g-live-grant-0123456789"), nil)
	ctx := b.Context()
	const block = 200
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	threadCPU := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var cpuOff, cpuOn, wallOff, wallOn time.Duration
	block1 := func(v *verify.Verifier, cpu, wall *time.Duration) {
		c0, w0 := threadCPU(), time.Now()
		for range block {
			if _, err := v.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
		*cpu += threadCPU() - c0
		*wall += time.Since(w0)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			block1(off, &cpuOff, &wallOff)
			block1(on, &cpuOn, &wallOn)
		} else {
			block1(on, &cpuOn, &wallOn)
			block1(off, &cpuOff, &wallOff)
		}
	}
	n := float64(b.N * block)
	b.ReportMetric(float64(cpuOff)/float64(cpuOn), "on/off")
	b.ReportMetric(float64(wallOff)/float64(wallOn), "on/off-wall")
	b.ReportMetric(float64(cpuOff.Nanoseconds())/n, "cpu-ns/verify-off")
	b.ReportMetric(float64(cpuOn.Nanoseconds())/n, "cpu-ns/verify-on")
}
