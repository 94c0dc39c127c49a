package wiring

import (
	"crypto/hmac"
	"crypto/sha256"

	"oauthd/issuer/throttle"
)

// sharedThrottle is what serve's limiters share on a shared database. The
// secret their names are hashed with is derived from the refresh-token
// key, which every replica loads from the database (and never stores
// elsewhere).
func sharedThrottle(rows throttle.Rows, refreshKey []byte) (*throttle.Shared, *throttle.RowStore) {
	m := hmac.New(sha256.New, refreshKey)
	m.Write([]byte("oauthd throttle names"))
	st := throttle.NewRowStore(rows)
	return &throttle.Shared{Store: st, Secret: m.Sum(nil)}, st
}
