package issuer

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"oauthd/data/scope"
	"oauthd/keys/verify"
)

// serverMetadata is the RFC 8414 §2 authorization server metadata: exactly
// what the server enforces.
type serverMetadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RevocationEndpoint                         string   `json:"revocation_endpoint"`
	IntrospectionEndpoint                      string   `json:"introspection_endpoint"`
	JWKSURI                                    string   `json:"jwks_uri"`
	ResponseTypesSupported                     []string `json:"response_types_supported"`
	ResponseModesSupported                     []string `json:"response_modes_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported     []string `json:"revocation_endpoint_auth_methods_supported"`
	IntrospectionEndpointAuthMethodsSupported  []string `json:"introspection_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	ScopesSupported                            []string `json:"scopes_supported"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
	PushedAuthorizationRequestEndpoint         string   `json:"pushed_authorization_request_endpoint"`
	RequirePushedAuthorizationRequests         bool     `json:"require_pushed_authorization_requests"`
	DPoPSigningAlgValuesSupported              []string `json:"dpop_signing_alg_values_supported"`
}

// buildMetadata renders the metadata document once, at [New].
func buildMetadata(cfg Config) []byte {
	all := scope.All()
	names := make([]string, len(all))
	for i, sc := range all {
		names[i] = sc.Name
	}
	clientAuth := []string{"client_secret_basic", "client_secret_post"}
	// Public clients revoke their refresh tokens with client_id alone
	// (authenticateClient; RFC 7009 §5, RFC 9700 §4.14.2).
	revokeAuth := []string{"client_secret_basic", "client_secret_post", "none"}
	m := serverMetadata{
		Issuer:                                     cfg.Issuer,
		AuthorizationEndpoint:                      cfg.AppURL + "/auth/oauth2/authorize",
		TokenEndpoint:                              cfg.Issuer + "/v2/auth/oauth2/token",
		RevocationEndpoint:                         cfg.Issuer + "/v2/auth/oauth2/revoke",
		IntrospectionEndpoint:                      cfg.Issuer + "/v2/auth/oauth2/introspect",
		JWKSURI:                                    cfg.Issuer + "/.well-known/jwks.json",
		ResponseTypesSupported:                     []string{"code"},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:          []string{"client_secret_basic", "client_secret_post", "none"},
		RevocationEndpointAuthMethodsSupported:     revokeAuth,
		IntrospectionEndpointAuthMethodsSupported:  clientAuth,
		CodeChallengeMethodsSupported:              []string{"S256"},
		ScopesSupported:                            names,
		AuthorizationResponseIssParameterSupported: true,
		// RFC 9126 §5: server-wide false; per client, see
		// require_pushed_authorization_requests on the client.
		PushedAuthorizationRequestEndpoint: cfg.Issuer + parPath,
		RequirePushedAuthorizationRequests: false,
		DPoPSigningAlgValuesSupported:      verify.DPoPAlgs(),
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic("issuer: marshal metadata: " + err.Error()) // plain strings cannot fail
	}
	return b
}

// handleMetadata is GET /.well-known/oauth-authorization-server (RFC 8414 §3).
func (s *Server) handleMetadata(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.JSONBlob(http.StatusOK, s.tok.metadata)
}
