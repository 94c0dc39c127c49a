-- Users can be disabled and have an external ID (the platform's), and
-- one-time values (nonces: DPoP proof jti values, pushed request_uris, login
-- assertion jti values) are shared by the replicas.
--
-- users.disabled is what CreateSession, CreateAuthCode and PutGrant check,
-- in their one statement, under a FOR KEY SHARE lock of the user's row;
-- disabling takes FOR UPDATE on that row, so the two serialize (see
-- Store.UpdateUser). user_id on codes, families and sessions is what
-- disabling deletes by; it is set once, at insert, so a rotation (which
-- changes only version, expires_ns and body) stays a HOT update.

ALTER TABLE users
    ADD COLUMN external_id text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN disabled    boolean NOT NULL DEFAULT false;
UPDATE users SET external_id = coalesce(body->>'external_id', ''),
                 disabled = coalesce((body->>'disabled')::boolean, false)
 WHERE body ? 'external_id' OR body ? 'disabled';
CREATE UNIQUE INDEX users_external_id ON users (external_id) WHERE external_id <> '';

ALTER TABLE auth_codes ADD COLUMN user_id bigint NOT NULL DEFAULT 0;
UPDATE auth_codes SET user_id = (body->>'user_id')::bigint WHERE (body->>'user_id')::bigint <> 0;
ALTER TABLE auth_codes ALTER COLUMN user_id DROP DEFAULT;
CREATE INDEX auth_codes_user ON auth_codes (user_id);

ALTER TABLE families ADD COLUMN user_id bigint NOT NULL DEFAULT 0;
UPDATE families SET user_id = (body->>'user_id')::bigint WHERE (body->>'user_id')::bigint <> 0;
ALTER TABLE families ALTER COLUMN user_id DROP DEFAULT;
CREATE INDEX families_user ON families (user_id);

ALTER TABLE sessions ADD COLUMN user_id bigint NOT NULL DEFAULT 0;
UPDATE sessions SET user_id = (body->>'user_id')::bigint WHERE (body->>'user_id')::bigint <> 0;
ALTER TABLE sessions ALTER COLUMN user_id DROP DEFAULT;
CREATE INDEX sessions_user ON sessions (user_id);

-- A nonce is used once: the primary key refuses a second insert from any
-- replica. expires_ns is when the garbage collector may remove it.
CREATE TABLE nonces (
    key        bytea PRIMARY KEY,
    expires_ns bigint NOT NULL
);
CREATE INDEX nonces_expiry ON nonces (expires_ns);
