-- mcp-center schema 1: the shared state of several instances (R-10.1).
-- Applied in one transaction by store/pg_schema.py, which records it in mcp_center.schema_version.
-- Every row's `record` is the same JSON document the file backend keeps in its section files;
-- the other columns repeat what an operator (or a query) wants to see without parsing it.

-- One counter per section, bumped by every commit that changes the section; a commit NOTIFYs the
-- new values on channel 'mcp_center_changes', so every instance knows when its cache is current.
CREATE TABLE mcp_center.generations (
    section    text PRIMARY KEY,
    generation bigint NOT NULL DEFAULT 0
);
INSERT INTO mcp_center.generations (section)
VALUES ('servers'), ('secrets'), ('gateway_tokens'), ('interactions'), ('approvals');

-- Facts about the data set itself: the keyed check value of the secret key (never the key).
CREATE TABLE mcp_center.meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE mcp_center.servers (
    id         text PRIMARY KEY,
    version    integer NOT NULL CHECK (version >= 1),
    enabled    boolean NOT NULL,
    updated_at timestamptz NOT NULL,
    record     jsonb NOT NULL
);

-- Ciphertexts only (AES-GCM under the host key, which never enters the database): secret env and
-- header values, bearer tokens, OAuth client secrets, metadata, registrations and grants.
CREATE TABLE mcp_center.secrets (
    id         text PRIMARY KEY,
    ciphertext text NOT NULL
);

CREATE TABLE mcp_center.gateway_tokens (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    sha256     text NOT NULL UNIQUE,
    created_at text NOT NULL,
    record     jsonb NOT NULL
);

CREATE TABLE mcp_center.interactions (
    id            text PRIMARY KEY,
    state         text NOT NULL,
    host_instance text NOT NULL,
    created_at    timestamptz NOT NULL,
    record        jsonb NOT NULL
);

CREATE TABLE mcp_center.approvals (
    id            text PRIMARY KEY,
    state         text NOT NULL,
    host_instance text NOT NULL,
    created_at    timestamptz NOT NULL,
    record        jsonb NOT NULL
);

-- Process runs (serve instances, CLI commands, scripts) that use the data. A run is alive while it
-- holds the session advisory lock (3, lock_key) on its own connection: PostgreSQL drops it when the
-- run's connection ends, a SIGKILL included.
CREATE TABLE mcp_center.instances (
    id         text PRIMARY KEY,
    lock_key   integer NOT NULL,
    name       text,
    url        text,
    hostname   text NOT NULL,
    pid        integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now()
);

-- Each serve instance's own connection state of each server (connections are per instance).
CREATE TABLE mcp_center.server_states (
    instance   text NOT NULL REFERENCES mcp_center.instances (id) ON DELETE CASCADE,
    server_id  text NOT NULL,
    state      text NOT NULL,
    reason     text,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance, server_id)
);
