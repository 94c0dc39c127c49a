-- Failure counters shared by the replicas, so that a lockout rule holds
-- however the load balancer spreads the attempts. Each key is a GCRA
-- (token bucket) state: tat_ns is the theoretical arrival time of the next
-- attempt, in Unix nanoseconds; a key whose tat_ns has passed holds no
-- failures and may be removed.
CREATE TABLE throttle (
    key    bytea PRIMARY KEY,
    tat_ns bigint NOT NULL
);
CREATE INDEX throttle_tat ON throttle (tat_ns);
