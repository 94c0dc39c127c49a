// Package data holds the stored types of oauthd (users, clients and their
// secrets, authorization codes, refresh-token families, consent grants,
// login sessions and signing keys), the rules that every stored record obeys,
// the sentinel errors of storage, and [Store]: the contract every storage
// backend fulfils.
//
// Backends live in subpackages: data/bolt (an embedded bbolt file, the
// default), data/postgres (PostgreSQL, shared by replicas) and data/memory
// (tests and development); data/cache wraps any of them with a cache of
// client records. Each backend proves itself by passing the conformance
// suite in data/datatest. Only cmd/ picks a backend; every other package
// consumes the narrow slice of [Store] it needs.
//
// What a store does to every record, whichever backend it is (times in
// UTC, deep copies, empty slices), is written once, in [Normalize], which
// every backend calls.
//
// Package data does not know HTTP, OAuth flows or key material: it stores
// opaque hashes and bytes, and it never calls time.Now (callers pass now).
//
// # A new field on a stored record
//
//  1. Add it to the type with a JSON tag: bolt and postgres store records
//     as JSON (add omitempty or omitzero when the zero value means "not
//     set"), so a record written before the field existed reads back with
//     the zero value.
//  2. If it holds a time, a slice, a pointer or a map, give it its line
//     in [Normalize]; TestNormalize fails until it has one.
//  3. Set it in data/datatest's fullRecords (the suite refuses fixtures
//     that leave any field zero): the suite then checks, on every backend,
//     that it comes back as written (RecordsRoundTripNormalized) and, for
//     a time, in UTC (TimesRoundTripInUTC).
//  4. Families and authorization codes are stored by data/bolt in a binary
//     form (families_format.go, codes_format.go): the field needs a new format version
//     there, or bolt drops it (the suite's round trip fails).
//  5. If stores look records up by it or keep it unique: an index in each
//     backend (a bucket in data/bolt, a column and an index in
//     data/postgres through a new migration, a map in data/memory), and a
//     conformance test of the lookup. A PostgreSQL column only copies a
//     field of the body; the record itself is read from the jsonb body.
//  6. If it changes what a rule allows, the rule goes in rules.go, and
//     every backend calls it (as [ValidateClient]).
package data
