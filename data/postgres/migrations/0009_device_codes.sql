-- Device authorizations (RFC 8628), keyed by the canonical user code.
-- The device_code itself is never stored: body.hash is its key, under
-- which the approval stores an auth_codes row. client_id and expires_ns
-- are copies for the per-client cap (CreateDeviceCode) and the collector.
CREATE TABLE device_codes (
    user_code  text PRIMARY KEY,
    client_id  text NOT NULL,
    expires_ns bigint NOT NULL,
    body       jsonb NOT NULL
);
CREATE INDEX device_codes_client ON device_codes (client_id, expires_ns);
CREATE INDEX device_codes_expiry ON device_codes (expires_ns);
