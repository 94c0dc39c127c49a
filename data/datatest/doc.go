// Package datatest is the conformance suite of [data.Store]: every backend
// runs [RunStoreTests] and only counts as done when it passes. The suite
// checks the documented semantics of the contract (CRUD, sentinel errors,
// the client rules at create and update, single-use codes, refresh-token
// rotation as a transaction whose update decides (store, abort, or delete
// the family on ErrTokenReused), the family's grace fields (Tagged,
// PrevHash, LegacyHash) stored and cleared, atomic updaters under
// concurrency, garbage
// collection with an injected now, UTC round trips). It knows no backend.
package datatest
