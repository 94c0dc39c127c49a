-- Password checks charged before they run (issue 27's CI failure: a
-- budget must hold for every replica at once), kept apart from the
-- failures: held_ns is, like tat_ns, a GCRA state (Unix nanoseconds at
-- which the held attempts are whole again), raised by a charge and
-- lowered when the check ends, so that a charge a crashed replica never
-- settled lapses by itself. Only tat_ns is announced: failures only rise
-- until they lapse, so every replica's copy may keep the higher of two.
ALTER TABLE throttle ADD COLUMN held_ns bigint NOT NULL DEFAULT 0;
