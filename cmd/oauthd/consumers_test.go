package main

import (
	"oauthd/consent"
	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/cache"
	"oauthd/data/memory"
	"oauthd/data/postgres"
	"oauthd/issuer"
	"oauthd/issuer/admin"
	"oauthd/keys"
)

// Each consumer declares the slice of the store it uses (issuer.Store,
// admin.Store, keys.Store, consent.Store, issuer.FeedConfig's); every
// backend, and the client cache serve puts in front of them, satisfies
// each one. These are compile-time checks: the test binary does not build
// when a backend misses a method a consumer calls. Likewise the key
// manager is the issuer's Signer and its FeedSigner.
var (
	_ = []issuer.Store{(*bolt.Store)(nil), (*memory.Store)(nil), (*postgres.Store)(nil), (*cache.Store)(nil)}
	_ = []admin.Store{(*bolt.Store)(nil), (*memory.Store)(nil), (*postgres.Store)(nil), (*cache.Store)(nil)}
	_ = []keys.Store{(*bolt.Store)(nil), (*memory.Store)(nil), (*postgres.Store)(nil), (*cache.Store)(nil)}
	_ = []consent.Store{(*bolt.Store)(nil), (*memory.Store)(nil), (*postgres.Store)(nil), (*cache.Store)(nil)}
	_ = []data.Store{(*bolt.Store)(nil), (*memory.Store)(nil), (*postgres.Store)(nil), (*cache.Store)(nil)}

	_ issuer.Signer     = (*keys.Manager)(nil)
	_ issuer.FeedSigner = (*keys.Manager)(nil)
)
