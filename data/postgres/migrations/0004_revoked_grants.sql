-- Tombstones of refresh-token families deleted before they expired (the
-- revoked grants), written in the delete's transaction; the issuer's
-- revoked-grants feed lists those whose access tokens may still live.
CREATE TABLE revoked_grants (
    grant_id  text COLLATE "C" PRIMARY KEY,
    issued_ns bigint NOT NULL, -- LastIssuedAt in Unix nanoseconds
    body      jsonb NOT NULL
);
CREATE INDEX revoked_grants_issued ON revoked_grants (issued_ns);
