package data

import "time"

// Revocation is the tombstone of a refresh-token family deleted before it
// expired: the grant was revoked (RFC 7009, a replayed refresh token or
// code, a rejected client, a grant left with no scope, …). Stores write it
// in the same transaction as the delete ([Store.DeleteFamily], and the
// delete of [Store.RotateRefreshToken]), so that every replica, and a
// restarted server, can tell offline verifiers which grants' access
// tokens to refuse until they expire (the issuer's revoked-grants feed).
type Revocation struct {
	GrantID  string `json:"grant_id"` // the family ID, the grant_id claim of its access tokens
	ClientID string `json:"client_id"`
	// LastIssuedAt is when the family last issued an access token (its
	// RotatedAt, or CreatedAt before the first rotation): no token of the
	// grant lives past LastIssuedAt + the access-token lifetime.
	LastIssuedAt time.Time `json:"last_issued_at"`
}

// RevocationKeep is how long after LastIssuedAt a [Revocation] is kept
// ([Store.GarbageCollect] removes older ones). It must exceed the access
// token lifetime plus the verifiers' leeway (30 min + 1 min by default);
// the issuer's feed lists only what its own lifetime still needs.
const RevocationKeep = 6 * time.Hour

// RevocationOf returns the tombstone of f.
func RevocationOf(f Family) Revocation {
	at := f.RotatedAt
	if at.IsZero() || at.Before(f.CreatedAt) {
		at = f.CreatedAt
	}
	return Revocation{GrantID: f.ID, ClientID: f.ClientID, LastIssuedAt: at.UTC()}
}
