-- The x402 facilitator's settlements: a record of their own (not intents).
-- `replay_key` (the chain and the authorization's replay key) is unique, so
-- one authorization settles once whatever replica or request asks; the row
-- is also its own queue entry (`status = 'queued'`, leased by workers). The
-- transactions it sends live in `chain_transactions` under its id, leg `x402`.
CREATE TABLE x402_settlements (
    id             TEXT PRIMARY KEY,
    replay_key     TEXT NOT NULL UNIQUE,
    payload_hash   TEXT NOT NULL,
    payment_id     TEXT,
    client         TEXT NOT NULL,
    chain          TEXT NOT NULL,
    asset          TEXT NOT NULL,
    network        TEXT NOT NULL,
    scheme         TEXT NOT NULL,
    payer          TEXT NOT NULL,
    pay_to         TEXT NOT NULL,
    amount         TEXT NOT NULL,
    requirements   TEXT NOT NULL,
    payload        TEXT NOT NULL,
    status         TEXT NOT NULL,
    error_reason   TEXT,
    tx_hash        TEXT,
    available_at   BIGINT NOT NULL,
    locked_by      TEXT,
    locked_until   BIGINT,
    attempts       INTEGER NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE UNIQUE INDEX x402_settlements_payment_id ON x402_settlements(payer, payment_id);
CREATE INDEX x402_settlements_by_payload ON x402_settlements(payload_hash);
CREATE INDEX x402_settlements_due ON x402_settlements(status, available_at);
CREATE INDEX x402_settlements_by_tx ON x402_settlements(tx_hash);
CREATE INDEX x402_settlements_by_payer ON x402_settlements(payer, created_at);

-- Keys for resource servers that use the facilitator: never an agent's key
-- (those spend hosted wallets). Hashed like agents' secrets.
CREATE TABLE facilitator_keys (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    secret_hash TEXT NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);
