package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/oauth2"

	"oauthd/cmd/internal/wiring"
	"oauthd/cmd/oauthd-bench/internal/loadgen"
	"oauthd/data"
	"oauthd/issuer/admin"
)

// benchServer is the real server, wired as serve wires it, serving on a
// loopback port.
type benchServer struct {
	w   *wiring.Wired
	srv *http.Server
	hc  *http.Client
}

// startBenchServer serves a new server on dbPath (no master key), for the
// in-process modes.
func startBenchServer(ctx context.Context, logger *slog.Logger, dbPath string) (*benchServer, error) {
	return serveBench(ctx, logger, dbPath, nil, benchMaxConcurrency)
}

// serveBench wires a server on dbPath with serve's defaults (defaultServeOptions), on a loopback
// port, with a client of up to conns connections.
func serveBench(ctx context.Context, logger *slog.Logger, dbPath string, mk []byte, conns int) (*benchServer, error) {
	so := wiring.DefaultServeOptions()
	so.Addr, so.DB = "127.0.0.1:0", dbPath
	if err := so.Check(); err != nil {
		return nil, err
	}
	w, err := so.Wire(ctx, logger, dbPath, mk)
	if err != nil {
		return nil, err
	}
	s := &benchServer{w: w, srv: w.HTTPServer(logger), hc: loadgen.NewHTTPClient(conns)}
	go s.srv.Serve(w.Ln)
	return s, nil
}

func (s *benchServer) stop(ctx context.Context, logger *slog.Logger) {
	wiring.Shutdown(ctx, logger, s.srv)
	s.hc.CloseIdleConnections()
	if err := s.w.CloseStore(); err != nil {
		logger.Error("bench", "err", err)
	}
}

// endpoint is the token endpoint of s as the seeded client calls it.
func (s *benchServer) endpoint(sd seeded) loadgen.Endpoint {
	return loadgen.Endpoint{HTTP: s.hc, TokenURL: s.w.ListenURL + benchTokenPath, ClientID: sd.clientID, ClientSecret: sd.clientSecret}
}

// seeded is what seedBench made.
type seeded struct {
	clientID, clientSecret string
	tag                    string   // the random part of the seeded names
	users                  []int64  // grant i is of users[i/grantsPerUser]
	tokens                 []string // one refresh token per grant
	accessToken            string   // the last grant's access token
}

// seedBench creates a user and an approved confidential client through the
// admin service, then n grants through the real code path (benchGrants).
func seedBench(ctx context.Context, s *benchServer, n int) (seeded, error) {
	out, err := seedClient(ctx, s)
	if err != nil {
		return seeded{}, err
	}
	out.tokens = make([]string, n)
	if err := benchGrants(ctx, s, &out, 0, n); err != nil {
		return seeded{}, err
	}
	return out, nil
}

// benchGrantWorkers is how many grants benchGrants makes at a time.
const benchGrantWorkers = 16

// grantsPerUser is how many grants of the client one seeded user makes:
// fewer than a (user, client) pair may approve at once (issuer's
// approval budget, 60), so that seeding at any --concurrency runs at full
// speed, as many users' grants do.
const grantsPerUser = 50

// userOf is the user of grant i.
func (sd *seeded) userOf(i int) int64 { return sd.users[i/grantsPerUser] }

// benchGrants makes grants from to to (out.tokens[from:to]) through the
// real code path (benchGrant), benchGrantWorkers at a time; out.tokens
// must have room for them.
func benchGrants(ctx context.Context, s *benchServer, out *seeded, from, to int) error {
	var (
		next     atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	if err := addUsers(ctx, s, out, (to+grantsPerUser-1)/grantsPerUser); err != nil {
		return err
	}
	base := *out // what benchGrant reads; the workers write out's tokens only
	next.Store(int64(from))
	for range min(benchGrantWorkers, max(to-from, 0)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				rt, at, err := benchGrant(ctx, s, base, i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out.tokens[i], out.accessToken = rt, at
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// seedClient creates a user and an approved confidential client of
// theirs through the admin service.
func seedClient(ctx context.Context, s *benchServer) (seeded, error) {
	var rb [6]byte
	rand.Read(rb[:])
	out := seeded{tag: hex.EncodeToString(rb[:])}
	if err := addUsers(ctx, s, &out, 1); err != nil {
		return seeded{}, err
	}
	c, err := s.w.Local.CreateClient(ctx, admin.NewClient{Owner: benchEmail(out.tag, 0), Name: "oauthd bench " + out.tag, RedirectURIs: []string{benchRedirectURI}, Scopes: []string{"PROFILE_READ", "BOOKING_READ"}})
	if err != nil {
		return seeded{}, fmt.Errorf("client: %w", err)
	}
	if _, err := s.w.Local.ApproveClient(ctx, c.ClientID); err != nil {
		return seeded{}, fmt.Errorf("approve client: %w", err)
	}
	out.clientID, out.clientSecret = c.ClientID, c.ClientSecret
	return out, nil
}

// addUsers adds users through the admin service until out has n.
func addUsers(ctx context.Context, s *benchServer, out *seeded, n int) error {
	for k := len(out.users); k < n; k++ {
		suffix := ""
		if k > 0 {
			suffix = "_" + strconv.Itoa(k)
		}
		u, err := s.w.Local.AddUser(ctx, admin.NewUser{Email: benchEmail(out.tag, k), Username: "bench_" + out.tag + suffix, Name: "Bench User", Password: data.NewSecret("")})
		if err != nil {
			return fmt.Errorf("user: %w", err)
		}
		out.users = append(out.users, u.ID)
	}
	return nil
}

// benchEmail is the email of seeded user k.
func benchEmail(tag string, k int) string {
	if k == 0 {
		return "bench-" + tag + "@example.com"
	}
	return "bench-" + tag + "-" + strconv.Itoa(k) + "@example.com"
}

// benchGrant makes grant i of sd's user and client through the real code
// path: issuer Approve mints the code, and the authorization_code exchange
// runs over loopback HTTP against the running server. It returns the
// grant's refresh and access tokens.
func benchGrant(ctx context.Context, s *benchServer, sd seeded, i int) (refresh, access string, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	out := &sd
	verifier := oauth2.GenerateVerifier()
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {out.clientID},
		"redirect_uri":          {benchRedirectURI},
		"scope":                 {"PROFILE_READ BOOKING_READ"},
		"state":                 {strconv.Itoa(i)},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(verifier)},
		"code_challenge_method": {"S256"},
	}
	redirect, err := s.w.Iss.Approve(ctx, q, out.userOf(i))
	if err != nil {
		return "", "", fmt.Errorf("approve grant %d: %w", i, err)
	}
	ru, err := url.Parse(redirect)
	if err != nil || ru.Query().Get("code") == "" {
		return "", "", fmt.Errorf("approve grant %d: no code in the redirect", i)
	}
	form := url.Values{
		"grant_type": {"authorization_code"}, "code": {ru.Query().Get("code")}, "redirect_uri": {benchRedirectURI},
		"code_verifier": {verifier}, "client_id": {out.clientID}, "client_secret": {out.clientSecret},
	}
	status, tr, err := s.endpoint(*out).Post(ctx, form.Encode())
	if err != nil {
		return "", "", fmt.Errorf("exchange code %d: %w", i, err)
	}
	if status != http.StatusOK {
		return "", "", fmt.Errorf("exchange code %d: HTTP %d %s", i, status, tr.Error)
	}
	return tr.RefreshToken, tr.AccessToken, nil
}
