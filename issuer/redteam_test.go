package issuer

import (
	"context"
	"net/http"
	"testing"

	"oauthd/data"
)

// rejectDuringExchange is a store whose ExchangeAuthCode lets the client
// "conf" be rejected (status first, then its grants listed and deleted, as
// admin.RejectClient does) after the token endpoint authenticated it and
// before the exchange stores its grant.
type rejectDuringExchange struct {
	data.Store
}

func (s rejectDuringExchange) ExchangeAuthCode(ctx context.Context, key []byte, issue func(data.AuthCode) (data.Family, error)) (data.AuthCode, data.Family, error) {
	if _, err := s.UpdateClient(ctx, "conf", func(c data.Client) (data.Client, error) {
		c.Status, c.RejectReason = data.StatusRejected, "abuse"
		return c, nil
	}); err != nil {
		return data.AuthCode{}, data.Family{}, err
	}
	fams, err := s.ListFamilies(ctx, "conf")
	if err != nil {
		return data.AuthCode{}, data.Family{}, err
	}
	for _, f := range fams {
		if err := s.DeleteFamily(ctx, f.ID); err != nil {
			return data.AuthCode{}, data.Family{}, err
		}
	}
	return s.Store.ExchangeAuthCode(ctx, key, issue)
}

// TestRejectionRacingCodeExchange: a client rejected while one of its code
// exchanges is in flight keeps no grant from it (the rejection's revocation
// listed the grants before this one existed): the exchange is refused, and
// approving the client again brings nothing back.
func TestRejectionRacingCodeExchange(t *testing.T) {
	env := newTkEnv(t, func(c *Config) { c.Store = rejectDuringExchange{c.Store.(data.Store)} })
	code := env.code(tkCodeOpts{client: "conf"})
	rec := env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code,
		"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)})
	if rec.Code != http.StatusUnauthorized || tkOAuthErr(t, rec) != "invalid_client" {
		t.Errorf("exchange by a client rejected meanwhile = %d %s; want 401 invalid_client", rec.Code, rec.Body)
	}
	if fams, _ := env.store.ListFamilies(context.Background(), "conf"); len(fams) != 0 {
		t.Fatalf("grants of the rejected client = %d; want none", len(fams))
	}
}
