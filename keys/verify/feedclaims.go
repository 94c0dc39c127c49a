package verify

import "github.com/golang-jwt/jwt/v5"

// The issuer's revoked-grants feed (served at {base_url}/.well-known/revoked-grants;
// see [RevocationFeed]) is a JWS signed with the issuer's active access-token key,
// typ [FeedTyp], whose payload is [FeedClaims].
const (
	// FeedTyp is the JOSE typ of the feed. Access tokens are "at+jwt":
	// neither can be taken for the other.
	FeedTyp = "revoked-grants+jwt"
	// FeedPath is the feed's path under the issuer's base URL.
	FeedPath = "/.well-known/revoked-grants"
)

// FeedClaims is the payload of the revoked-grants feed: iss, iat, exp (a
// few minutes after iat), and every grant revoked whose access tokens may
// still be valid (those issued within Window seconds, the access-token
// lifetime plus leeway). It is the whole list each time, not a delta.
type FeedClaims struct {
	jwt.RegisteredClaims
	// Window is how far back, in seconds, the list reaches: a grant whose
	// last token was issued longer ago has no valid token left.
	Window int64 `json:"window"`
	// Revoked lists the grant IDs (the grant_id claim of access tokens),
	// sorted.
	Revoked []string `json:"revoked_grants"`
}
