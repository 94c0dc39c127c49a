package issuer

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"oauthd/data"
)

// tkCommitFails is a store whose grant writes run their callback (so the
// access token is already being signed) and then fail, as a commit that
// fails after the transaction ran would.
type tkCommitFails struct {
	data.Store
	fail atomic.Bool
}

var errTkCommit = errors.New("commit failed")

func (s *tkCommitFails) ExchangeAuthCode(ctx context.Context, hash []byte, issue func(data.AuthCode) (data.Family, error)) (data.AuthCode, data.Family, error) {
	c, f, err := s.Store.ExchangeAuthCode(ctx, hash, issue)
	if err == nil && s.fail.Load() {
		return data.AuthCode{}, data.Family{}, errTkCommit
	}
	return c, f, err
}

func (s *tkCommitFails) RotateRefreshToken(ctx context.Context, id string, update func(data.Family) (data.Family, error)) (data.Family, error) {
	f, err := s.Store.RotateRefreshToken(ctx, id, update)
	if err == nil && s.fail.Load() {
		return data.Family{}, errTkCommit
	}
	return f, err
}

// TestTokenNotSentWhenCommitFails: the access token is signed while the
// grant commits; when the commit fails the response is a server error
// without any token.
func TestTokenNotSentWhenCommitFails(t *testing.T) {
	var store *tkCommitFails
	env := newTkEnv(t, func(c *Config) {
		store = &tkCommitFails{Store: c.Store.(data.Store)}
		c.Store = store
	})
	rt := env.exchange().RefreshToken

	store.fail.Store(true)
	code := env.code(tkCodeOpts{client: "conf"})
	for name, req := range map[string]tkReq{
		"authorization_code": {body: tkForm("grant_type", "authorization_code", "code", code,
			"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)},
		"refresh_token": env.refreshReq("conf", env.secretA, rt),
	} {
		rec := env.do(req)
		if rec.Code != http.StatusInternalServerError {
			t.Errorf("%s: status = %d; want 500", name, rec.Code)
		}
		if body := rec.Body.String(); strings.Contains(body, "access_token") || strings.Contains(body, "refresh_token\"") {
			t.Errorf("%s: a failed grant answered %s", name, body)
		}
	}
}
