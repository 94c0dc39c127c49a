// Package ident is the one spelling of a person's identifiers: the
// canonical form under which emails and usernames are unique, looked up
// and compared (docs/IDENTITY.md). Every backend's unique index (bolt's
// index buckets, PostgreSQL's email_lower and username_lower columns, the
// memory store's maps) holds [Key] of the identifier, and every comparison
// in the code goes through [Key]; nothing else folds case.
//
// It is a leaf: it imports only golang.org/x/text and golang.org/x/net/idna,
// and knows nothing of users, stores or HTTP.
package ident
