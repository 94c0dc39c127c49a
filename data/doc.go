// Package data holds the stored types of oauthd (users, clients and their
// secrets, authorization codes, refresh-token families, consent grants,
// login sessions and signing keys), the rules that every stored record obeys,
// the sentinel errors of storage, and [Store]: the contract every storage
// backend fulfils.
//
// Backends live in subpackages (data/bolt, data/memory) and prove themselves
// by passing the conformance suite in data/datatest. Only cmd/ picks a
// backend; every other package consumes the narrow slice of [Store] it needs.
//
// Package data does not know HTTP, OAuth flows or key material: it stores
// opaque hashes and bytes, and it never calls time.Now (callers pass now).
package data
