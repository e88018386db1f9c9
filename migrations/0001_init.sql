-- stablerail schema v1. Portable SQL: the same file migrates SQLite and Postgres.
-- Times are Unix milliseconds (BIGINT); amounts are exact decimal TEXT.

CREATE TABLE accounts (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    -- Bumped by compare-and-set when an agent is added (at most 10).
    agent_count  INTEGER NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL
);

CREATE TABLE agents (
    id            TEXT PRIMARY KEY,
    agent_number  TEXT NOT NULL UNIQUE,
    account_id    TEXT REFERENCES accounts(id),
    name          TEXT NOT NULL,
    status        TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX agents_by_account ON agents(account_id);

CREATE TABLE api_keys (
    api_key      TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL REFERENCES agents(id),
    secret_hmac  TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT
);
CREATE INDEX api_keys_by_agent ON api_keys(agent_id);

CREATE TABLE recipients (
    email    TEXT NOT NULL,
    chain    TEXT NOT NULL,
    address  TEXT NOT NULL,
    PRIMARY KEY (email, chain)
);

CREATE TABLE intents (
    id                    TEXT PRIMARY KEY,
    agent_id              TEXT REFERENCES agents(id),
    status                TEXT NOT NULL,
    version               BIGINT NOT NULL DEFAULT 0,
    payer_chain           TEXT NOT NULL,
    target_chain          TEXT NOT NULL,
    payer_asset           TEXT NOT NULL,
    target_asset          TEXT NOT NULL,
    merchant_recipient    TEXT NOT NULL,
    recipient_email       TEXT,
    payer_address         TEXT,
    amount_mode           TEXT NOT NULL,
    sending_amount        TEXT NOT NULL,
    receiving_amount      TEXT NOT NULL,
    estimated_fee         TEXT NOT NULL,
    fee_breakdown         TEXT NOT NULL,
    payment_requirements  TEXT NOT NULL,
    settle_proof          TEXT,
    replay_key            TEXT UNIQUE,
    payer                 TEXT,
    source_tx_hash        TEXT,
    source_settled_at     BIGINT,
    target_tx_hash        TEXT,
    target_settle_proof   TEXT,
    target_settled_at     BIGINT,
    error_message         TEXT,
    created_at            BIGINT NOT NULL,
    expires_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL
);
CREATE INDEX intents_by_agent ON intents(agent_id, created_at);
CREATE INDEX intents_awaiting ON intents(status, expires_at);

-- Durable hand-off from the API to the settlement engine.
CREATE TABLE settlement_queue (
    intent_id     TEXT PRIMARY KEY REFERENCES intents(id),
    enqueued_at   BIGINT NOT NULL,
    available_at  BIGINT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    locked_by     TEXT,
    locked_until  BIGINT
);

CREATE TABLE idempotency_keys (
    scope            TEXT NOT NULL,
    idem_key         TEXT NOT NULL,
    request_hash     TEXT NOT NULL,
    response_status  INTEGER NOT NULL,
    response_body    TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    PRIMARY KEY (scope, idem_key)
);
