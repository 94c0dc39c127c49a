package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/cmd/oauthd-bench/internal/loadgen"
)

// runVerify measures the guard middleware with a real access token of the
// in-process server against the raw signature check with the same key
// (loadgen's Verify).
func (o *benchOptions) runVerify(ctx context.Context, s *benchServer, token string, progress io.Writer) (loadgen.VerifyReport, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return loadgen.VerifyReport{}, errors.New("the seeded access token is not a JWT")
	}
	var hdr struct{ Kid, Alg string }
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &hdr) != nil {
		return loadgen.VerifyReport{}, errors.New("the seeded access token has a bad header")
	}
	pub, alg, err := s.w.KM.Key(ctx, hdr.Kid)
	if err != nil {
		return loadgen.VerifyReport{}, fmt.Errorf("signing key: %w", err)
	}
	method := jwt.GetSigningMethod(alg)
	if method == nil {
		return loadgen.VerifyReport{}, fmt.Errorf("unsupported alg %s", alg)
	}
	signed := parts[0] + "." + parts[1]
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return loadgen.VerifyReport{}, errors.New("the seeded access token has a bad signature encoding")
	}
	h := s.w.Guard.HTTP(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	middleware := func() loadgen.Op {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/v2/me", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := &statusWriter{h: http.Header{}}
		return func() bool {
			w.status = http.StatusOK
			h.ServeHTTP(w, req)
			return w.status == http.StatusOK
		}
	}
	if !middleware()() {
		return loadgen.VerifyReport{}, errors.New("the guard refused the seeded access token")
	}
	raw := func() loadgen.Op {
		return func() bool { return method.Verify(signed, sig, pub) == nil }
	}
	return loadgen.Verify(ctx, loadgen.VerifyRun{Workers: o.concurrency, Duration: o.duration, Alg: alg,
		Middleware: middleware, Raw: raw, Progress: loadgen.Progress{W: progress, Every: o.progress}}), nil
}

// statusWriter is a ResponseWriter that keeps only the status.
type statusWriter struct {
	h      http.Header
	status int
}

func (w *statusWriter) Header() http.Header         { return w.h }
func (w *statusWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *statusWriter) WriteHeader(s int)           { w.status = s }
