-- The operator's reviews of AI assistants' hosts (oauthd agents allow):
-- the clients identified by a client ID metadata document on a host may
-- ask for the host's scopes; a host without a row is not available.
CREATE TABLE agent_hosts (
    host text COLLATE "C" PRIMARY KEY, -- data.CanonicalAgentHost
    body jsonb NOT NULL
);
