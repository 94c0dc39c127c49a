-- Audit records of every replica and of the command line in one place
-- (they are also logged by the process that wrote them).
CREATE TABLE audit_events (
    id    bigserial PRIMARY KEY,
    at    timestamptz NOT NULL,
    event text NOT NULL,
    body  jsonb NOT NULL
);
CREATE INDEX audit_events_at ON audit_events (at);
