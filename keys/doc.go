// Package keys owns the issuer's JWT signing keys.
package keys

import (
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/labstack/echo/v4"
	_ "github.com/lestrrat-go/jwx/v2/jwk"
)
