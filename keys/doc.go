// Package keys owns the issuer's JWT signing keys: their lifecycle
// (next → active → retired → removed), sealing their private halves at rest
// with the master key (AES-256-GCM), signing access tokens (RFC 9068) with
// the active key, and publishing the JWKS (RFC 7517) of the next, active
// and retired keys.
//
// A new key is published as "next" before it signs anything, so resource
// servers that cache the JWKS already know it when it becomes active; a
// retired key stays published until every token it signed has expired
// (TokenTTL + Leeway), then [Manager.Prune] removes it. [Manager.Revoke]
// is the emergency exit: the key leaves the JWKS at once.
//
// The key set also holds one record that is not a signing key: the secret
// behind [Manager.RefreshTokenKey], which tags refresh tokens. It is sealed
// like the private keys and never published, listed, rotated or revoked.
//
// Every lifecycle change is one [data.Store.UpdateKeys] transaction, so
// concurrent rotations serialize and there is always exactly one active key.
// Signing and key lookups use an immutable in-memory snapshot and never
// touch the store.
//
// [Manager.Ready] is the readiness rule (the store answers within
// [ReadyTimeout] and holds an active key), served by [Manager.ServeReady]
// at /readyz.
//
// Package keys does not verify tokens (that is package verify) and does not
// read flags or environment variables.
package keys
