-- One-time values (data.Store.UseNonce): DPoP proof jti values and pushed
-- authorization request_uris, shared by the replicas so that a value used
-- on one is refused on every other. The primary key decides: of two
-- inserts of one key, exactly one succeeds.
CREATE TABLE nonces (
    key        bytea PRIMARY KEY,
    expires_ns bigint NOT NULL
);
CREATE INDEX nonces_expiry ON nonces (expires_ns);
