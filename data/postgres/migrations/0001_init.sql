-- oauthd schema, version 1.
--
-- Each table keeps, as columns, only what the store looks records up by,
-- locks, or compares in SQL (keys, expiry in Unix nanoseconds, a version
-- for compare-and-swap); the record itself is the body, the JSON form of
-- the data type. A field added to a data type therefore needs no
-- migration. Text keys use the "C" collation: byte order, as Go sorts.

CREATE TABLE users (
    id             bigint PRIMARY KEY,
    email_lower    text COLLATE "C" NOT NULL,
    username_lower text COLLATE "C" NOT NULL,
    body           jsonb NOT NULL
);
CREATE UNIQUE INDEX users_email ON users (email_lower) WHERE email_lower <> '';
CREATE UNIQUE INDEX users_username ON users (username_lower) WHERE username_lower <> '';

CREATE TABLE clients (
    id     text COLLATE "C" PRIMARY KEY,
    status text NOT NULL,
    body   jsonb NOT NULL
);

CREATE TABLE auth_codes (
    hash       bytea PRIMARY KEY,
    used       boolean NOT NULL DEFAULT false,
    expires_ns bigint NOT NULL,
    body       jsonb NOT NULL
);
CREATE INDEX auth_codes_expiry ON auth_codes (expires_ns);

-- version counts the writes to a family: every rotation or deletion is
-- conditional on the version it read (compare-and-swap). A rotation
-- changes only columns that no index covers (version, expires_ns, body),
-- so PostgreSQL can update the row in place (a HOT update: no index
-- entry, less WAL) on the room fillfactor leaves in each page. The garbage
-- collector finds candidates by gc_ns, a lower bound of the expiry that it
-- moves up itself; a rotation lowers it only if the expiry moved earlier.
CREATE TABLE families (
    id         text COLLATE "C" PRIMARY KEY,
    client_id  text COLLATE "C" NOT NULL,
    version    bigint NOT NULL DEFAULT 1,
    expires_ns bigint NOT NULL, -- the earlier of the idle and the absolute expiry
    gc_ns      bigint NOT NULL, -- at most expires_ns
    body       jsonb NOT NULL
) WITH (fillfactor = 70);
CREATE INDEX families_client ON families (client_id, id);
CREATE INDEX families_gc ON families (gc_ns);

CREATE TABLE grants (
    user_id   bigint NOT NULL,
    client_id text COLLATE "C" NOT NULL,
    body      jsonb NOT NULL,
    PRIMARY KEY (user_id, client_id)
);

CREATE TABLE sessions (
    hash       bytea PRIMARY KEY,
    expires_ns bigint NOT NULL,
    body       jsonb NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expires_ns);

-- The signing-key set is one row: every change locks it (SELECT … FOR
-- UPDATE), so concurrent rotations from any number of processes
-- serialize, and the row always exists to be locked.
CREATE TABLE key_set (
    id      integer PRIMARY KEY CHECK (id = 1),
    version bigint NOT NULL,
    body    jsonb NOT NULL
);
INSERT INTO key_set (id, version, body) VALUES (1, 0, '[]');
