package issuer

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"oauthd/data/scope"
	"oauthd/keys/verify"
)

// serverMetadata is the RFC 8414 §2 authorization server metadata: exactly
// what the server enforces.
type serverMetadata struct {
	Issuer                                    string   `json:"issuer"`
	AuthorizationEndpoint                     string   `json:"authorization_endpoint"`
	TokenEndpoint                             string   `json:"token_endpoint"`
	RevocationEndpoint                        string   `json:"revocation_endpoint"`
	IntrospectionEndpoint                     string   `json:"introspection_endpoint"`
	JWKSURI                                   string   `json:"jwks_uri"`
	ResponseTypesSupported                    []string `json:"response_types_supported"`
	ResponseModesSupported                    []string `json:"response_modes_supported"`
	GrantTypesSupported                       []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported         []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported    []string `json:"revocation_endpoint_auth_methods_supported"`
	IntrospectionEndpointAuthMethodsSupported []string `json:"introspection_endpoint_auth_methods_supported"`
	// RFC 8414 §2: the algorithms of private_key_jwt's assertions.
	TokenEndpointAuthSigningAlgValuesSupported         []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	RevocationEndpointAuthSigningAlgValuesSupported    []string `json:"revocation_endpoint_auth_signing_alg_values_supported"`
	IntrospectionEndpointAuthSigningAlgValuesSupported []string `json:"introspection_endpoint_auth_signing_alg_values_supported"`
	CodeChallengeMethodsSupported                      []string `json:"code_challenge_methods_supported"`
	ScopesSupported                                    []string `json:"scopes_supported"`
	AuthorizationResponseIssParameterSupported         bool     `json:"authorization_response_iss_parameter_supported"`
	PushedAuthorizationRequestEndpoint                 string   `json:"pushed_authorization_request_endpoint"`
	DeviceAuthorizationEndpoint                        string   `json:"device_authorization_endpoint"` // RFC 8628 §4
	RequirePushedAuthorizationRequests                 bool     `json:"require_pushed_authorization_requests"`
	DPoPSigningAlgValuesSupported                      []string `json:"dpop_signing_alg_values_supported"`
	// ProtectedResources (RFC 9728 §4) are the APIs tokens may be bound
	// to with RFC 8707 resource indicators (Config.Resources); omitted
	// when there are none.
	ProtectedResources []string `json:"protected_resources,omitempty"`
	// ClientIDMetadataDocumentSupported: an https URL may be a client_id
	// (draft-ietf-oauth-client-id-metadata-document; clientmeta.go).
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported"`

	// OpenID Connect Discovery 1.0 §3 (and RP-Initiated Logout 1.0 §3.3).
	UserinfoEndpoint                 string   `json:"userinfo_endpoint"`
	EndSessionEndpoint               string   `json:"end_session_endpoint"`
	IDTokenSigningAlgValuesSupported []string `json:"id_token_signing_alg_values_supported"`
	SubjectTypesSupported            []string `json:"subject_types_supported"`
	ClaimsSupported                  []string `json:"claims_supported"`
	PromptValuesSupported            []string `json:"prompt_values_supported"`
	ClaimsParameterSupported         bool     `json:"claims_parameter_supported"`
	RequestParameterSupported        bool     `json:"request_parameter_supported"`
	RequestURIParameterSupported     bool     `json:"request_uri_parameter_supported"`
}

// buildMetadata renders the metadata document once, at [New].
func buildMetadata(cfg Config) []byte {
	all := scope.All()
	names := make([]string, len(all))
	for i, sc := range all {
		names[i] = sc.Name
	}
	clientAuth := []string{"client_secret_basic", "client_secret_post", "private_key_jwt"}
	// Public clients revoke their refresh tokens with client_id alone
	// (authenticateClient; RFC 7009 §5, RFC 9700 §4.14.2).
	revokeAuth := []string{"client_secret_basic", "client_secret_post", "private_key_jwt", "none"}
	m := serverMetadata{
		Issuer:                            cfg.Issuer,
		AuthorizationEndpoint:             cfg.AppURL + "/auth/oauth2/authorize",
		TokenEndpoint:                     cfg.Issuer + "/v2/auth/oauth2/token",
		RevocationEndpoint:                cfg.Issuer + "/v2/auth/oauth2/revoke",
		IntrospectionEndpoint:             cfg.Issuer + "/v2/auth/oauth2/introspect",
		JWKSURI:                           cfg.Issuer + "/.well-known/jwks.json",
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query"},
		GrantTypesSupported:               grantTypesSupported(),
		TokenEndpointAuthMethodsSupported: []string{"client_secret_basic", "client_secret_post", "private_key_jwt", "none"},
		TokenEndpointAuthSigningAlgValuesSupported:         slices.Clone(verify.AssertionAlgs),
		RevocationEndpointAuthSigningAlgValuesSupported:    slices.Clone(verify.AssertionAlgs),
		IntrospectionEndpointAuthSigningAlgValuesSupported: slices.Clone(verify.AssertionAlgs),
		RevocationEndpointAuthMethodsSupported:             revokeAuth,
		IntrospectionEndpointAuthMethodsSupported:          clientAuth,
		CodeChallengeMethodsSupported:                      []string{"S256"},
		ScopesSupported:                                    names,
		AuthorizationResponseIssParameterSupported:         true,
		// RFC 9126 §5: server-wide false; per client, see
		// require_pushed_authorization_requests on the client.
		PushedAuthorizationRequestEndpoint: cfg.Issuer + parPath,
		DeviceAuthorizationEndpoint:        cfg.Issuer + devicePath,
		RequirePushedAuthorizationRequests: false,
		DPoPSigningAlgValuesSupported:      verify.DPoPAlgs(),
		ProtectedResources:                 cfg.Resources,
		ClientIDMetadataDocumentSupported:  true,

		UserinfoEndpoint:   cfg.Issuer + userinfoPath,
		EndSessionEndpoint: cfg.AppURL + "/auth/logout",
		// The algs a key may have (keys rotate --alg); RS256 is always
		// among them, as Discovery §3 requires.
		IDTokenSigningAlgValuesSupported: []string{verify.ES256, verify.EdDSA, verify.RS256},
		SubjectTypesSupported:            []string{"public"},
		ClaimsSupported: []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "azp",
			"name", "preferred_username", "zoneinfo", "updated_at", "email", "email_verified"},
		PromptValuesSupported:    slices.Clone(promptValues),
		ClaimsParameterSupported: false,
		// Request objects are not supported, by value or by reference
		// (a request_uri is only ever a pushed request's, RFC 9126).
		RequestParameterSupported:    false,
		RequestURIParameterSupported: false,
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic("issuer: marshal metadata: " + err.Error()) // plain strings cannot fail
	}
	return b
}

// handleMetadata is GET /.well-known/oauth-authorization-server (RFC 8414
// §3) and GET /.well-known/openid-configuration (OpenID Connect Discovery
// 1.0 §4): one document, so the two can never disagree (RFC 8414 §2
// includes the OpenID Connect members).
func (s *Server) handleMetadata(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.JSONBlob(http.StatusOK, s.tok.metadata)
}
