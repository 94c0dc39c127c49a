// Package postgres is a [data.Store] on PostgreSQL (pgx v5, a connection
// pool, no ORM), for oauthd deployments that run several replicas on one
// database.
//
// Every rule that must hold across processes is kept by the database, never
// by this process's memory: a refresh-token rotation and a code exchange are
// single conditional statements (compare-and-swap on the version read, or
// an UPDATE … WHERE NOT used joined to the INSERT of the family), so that
// of any number of concurrent requests on any number of replicas exactly one
// wins; client and key-set changes lock their row (SELECT … FOR UPDATE) for
// the read-modify-write, so the caps of the seed (10 redirect URIs, 2 active
// secrets, at least one scope) and the one-active-key rule hold under
// concurrent writers; disabling a user holds the user's row FOR UPDATE
// while it deletes their records, and the inserts of sessions, codes and
// grants read that row FOR KEY SHARE in their one statement, so none
// slips in after a disable (users.go). Serialization failures and deadlocks (SQLSTATE 40001,
// 40P01) are retried inside the store.
//
// Every change that other replicas cache (clients, signing keys) or may
// want to hear of (grants) sends a notification on [Channel] in the same transaction;
// [Store.Listen] delivers them, and reports a reconnection as a reset
// after which everything is to be re-read.
//
// The schema lives in embedded, ordered SQL migrations ([Migrate]); a
// record is stored as JSON beside the columns it is looked up, locked or
// expired by, so a new field of a data type needs no migration.
package postgres
