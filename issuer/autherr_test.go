package issuer

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"oauthd/data"
	"oauthd/data/memory"
)

// authzCodes are the error codes RFC 6749 §4.1.2.1 allows at the
// authorization endpoint.
var authzCodes = []string{"invalid_request", "unauthorized_client", "access_denied",
	"unsupported_response_type", "invalid_scope", "server_error", "temporarily_unavailable"}

// grantsFail is a store whose PutGrant fails as given.
type grantsFail struct {
	*memory.Store
	err error
}

func (s grantsFail) PutGrant(context.Context, data.Grant) error { return s.err }

// TestAuthorizeErrorsCarryTheTypedError: every error of the authorization
// endpoint, page or redirect, carries the one typed *Error (errors.As and
// errors.Is find it), with a §4.1.2.1 code; a redirect's error and
// error_description are that error's code and description, and a page's
// message is its description.
func TestAuthorizeErrorsCarryTheTypedError(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		putGrant error // PutGrant's failure, for Approve
		call     func(s *Server) error
		page     bool
		want     *Error
	}{
		{name: "unknown client (page)", page: true, want: ErrInvalidRequest,
			call: func(s *Server) error {
				_, err := s.ParseAuthorize(ctx, authzQuery("client_id", "nobody", "redirect_uri", "https://app.example.com/callback"))
				return err
			}},
		{name: "unregistered redirect_uri (page)", page: true, want: ErrInvalidRequest,
			call: func(s *Server) error {
				_, err := s.CheckAuthorize(ctx, authzQuery("client_id", "conf", "redirect_uri", "https://evil.example/cb", "scope", "PROFILE_READ"))
				return err
			}},
		{name: "rejected client on Approve (page)", page: true, want: ErrInvalidRequest,
			call: func(s *Server) error {
				_, err := s.Approve(ctx, authzQuery("client_id", "rejected", "redirect_uri", "https://bad.example.com/cb", "scope", "PROFILE_READ"), 1)
				return err
			}},
		{name: "unknown scope", want: ErrInvalidScope,
			call: func(s *Server) error {
				_, err := s.ParseAuthorize(ctx, authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/callback", "state", "xyz", "scope", "NOPE"))
				return err
			}},
		{name: "response_type token", want: ErrUnsupportedResponseType,
			call: func(s *Server) error {
				_, err := s.ParseAuthorize(ctx, authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/callback", "scope", "PROFILE_READ", "response_type", "token"))
				return err
			}},
		{name: "plain PKCE", want: ErrInvalidRequest,
			call: func(s *Server) error {
				_, err := s.Deny(ctx, authzConf("code_challenge", authzTestChallenge, "code_challenge_method", "plain"), 1)
				return err
			}},
		{name: "storage failure on Approve", putGrant: errors.New("disk on fire"), want: ErrServerError,
			call: func(s *Server) error {
				_, err := s.Approve(ctx, authzConf(), 1)
				return err
			}},
		{name: "user disabled while consenting", putGrant: data.ErrUserDisabled, want: ErrAccessDenied,
			call: func(s *Server) error {
				_, err := s.Approve(ctx, authzConf(), 1)
				return err
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newAuthzEnv(t)
			s := env.s
			if tc.putGrant != nil {
				cfg := s.cfg
				cfg.Store = grantsFail{Store: env.store, err: tc.putGrant}
				var err error
				if s, err = New(cfg); err != nil {
					t.Fatal(err)
				}
			}
			err := tc.call(s)
			oe, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("error %T %v: errors.As finds no *issuer.Error", err, err)
			}
			if !errors.Is(err, tc.want) || oe.Code != tc.want.Code {
				t.Errorf("error code %q; want %q", oe.Code, tc.want.Code)
			}
			if !slices.Contains(authzCodes, oe.Code) {
				t.Errorf("code %q is not an RFC 6749 §4.1.2.1 authorization error", oe.Code)
			}
			if oe.Description == "" {
				t.Error("the typed error has no description")
			}
			if pe, isPage := errors.AsType[*PageError](err); isPage != tc.page {
				t.Fatalf("page error = %v; want %v", isPage, tc.page)
			} else if isPage {
				if pe.Err != oe || pe.Message() != oe.Description || oe.Status != http.StatusBadRequest {
					t.Errorf("page %q message %q; want the typed error's description %q, status 400 (got %d)", pe.Title, pe.Message(), oe.Description, oe.Status)
				}
				return
			}
			re, ok := errors.AsType[*RedirectError](err)
			if !ok || re.Err != oe {
				t.Fatalf("error %T %v: want a *RedirectError carrying the typed error", err, err)
			}
			u, perr := url.Parse(re.URL)
			if perr != nil {
				t.Fatal(perr)
			}
			q := u.Query()
			if q.Get("error") != oe.Code || q.Get("error_description") != oe.Description || q.Get("iss") != authzTestIssuer {
				t.Errorf("redirect query %v; want error=%q error_description=%q iss=%q", q, oe.Code, oe.Description, authzTestIssuer)
			}
		})
	}
}

// TestAuthorizeErrorsWithoutErr: a page or redirect error made by hand
// without Err (a consumer's fake) neither panics nor pretends to carry an
// OAuth error.
func TestAuthorizeErrorsWithoutErr(t *testing.T) {
	for _, err := range []error{&PageError{Title: "T"}, &RedirectError{URL: "https://app.example.com/cb"}} {
		if msg := err.Error(); msg == "" {
			t.Errorf("%T.Error() is empty", err)
		}
		if oe, ok := errors.AsType[*Error](err); ok {
			t.Errorf("errors.As(%T without Err) found %v", err, oe)
		}
	}
	if got := (&PageError{Title: "T"}).Message(); got != "" {
		t.Errorf("Message() without Err = %q; want empty", got)
	}
}
