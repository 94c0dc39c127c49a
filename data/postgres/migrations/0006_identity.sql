-- Identities by ID (issue 22). The unique columns users.email_lower and
-- users.username_lower (names kept) now hold ident.Key of the email and
-- username, and a client's owner is a user ID (body.owner_id, or
-- body.unclaimed_owner) instead of an email (body.owner). Both are
-- computed in Go (upgradeIdentity, identity.go), in this migration's
-- transaction, after this statement: no user or client changes meanwhile.
LOCK TABLE users, clients IN EXCLUSIVE MODE;
