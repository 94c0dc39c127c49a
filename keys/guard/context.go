package guard

import (
	"context"

	"oauthd/keys/verify"
)

type claimsKey struct{}

// WithClaims returns a copy of ctx that carries the verified claims.
func WithClaims(ctx context.Context, c *verify.Claims) context.Context {
	return context.WithValue(ctx, claimsKey{}, c)
}

// ClaimsFrom returns the claims the guard verified for this request, or
// false when the request carried no (valid) token, as on a public route.
func ClaimsFrom(ctx context.Context) (*verify.Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(*verify.Claims)
	return c, ok && c != nil
}
