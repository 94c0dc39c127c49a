package data

import "context"

// presentedKey is the context key of [WithPresented].
type presentedKey struct{}

// WithPresented returns ctx telling [Store.RotateRefreshToken] the hash of
// the refresh token presented for the rotation, and that the update
// function keeps the rotation promise:
//
// On a family whose TokenHash is hash, update decides, and builds the
// successor, without reading PrevHash, RotatedAt or Generation (it sets
// PrevHash to TokenHash, RotatedAt to its clock, Generation to one more),
// and reads ExpiresAt only to refuse a family whose ExpiresAt has passed
// (a later ExpiresAt never turns a rotation into a refusal).
//
// A store may then rotate a family it has a record of from an earlier
// version (its guess) in one conditional write: it asks update about the
// guess with TokenHash set to hash, and the write applies only where the
// stored family has TokenHash hash, every field but those four equal to
// the guess's, and an ExpiresAt no earlier than the guess's, with the
// stored Generation plus one (data/postgres). Anywhere else the store
// reads the family and asks update again, as without it. The issuer's
// refresh grant keeps the promise (issuer/refresh.go,
// TestRefreshKeepsTheRotationPromise).
func WithPresented(ctx context.Context, hash []byte) context.Context {
	return context.WithValue(ctx, presentedKey{}, hash)
}

// Presented returns the hash given to [WithPresented], or nil.
func Presented(ctx context.Context) []byte {
	h, _ := ctx.Value(presentedKey{}).([]byte)
	return h
}
