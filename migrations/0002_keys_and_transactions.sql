-- Keystore and the settlement engine's transactions. Portable SQL.

-- Private keys sealed with AES-256-GCM under the master key.
CREATE TABLE wallet_keys (
    name        TEXT PRIMARY KEY,
    address     TEXT NOT NULL,
    sealed      TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

-- Every transaction the service signs, stored before it is broadcast. A
-- retry re-sends `raw`; the unique key makes a second transaction for the
-- same (intent, leg, step) impossible.
CREATE TABLE chain_transactions (
    intent_id   TEXT NOT NULL REFERENCES intents(id),
    leg         TEXT NOT NULL,
    step        INTEGER NOT NULL,
    label       TEXT NOT NULL,
    chain       TEXT NOT NULL,
    sender      TEXT NOT NULL,
    nonce       BIGINT NOT NULL,
    raw         TEXT NOT NULL,
    tx_hash     TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (intent_id, leg, step)
);
CREATE INDEX chain_transactions_by_hash ON chain_transactions(tx_hash);

-- Next nonce per (chain, sender), allocated by compare-and-set so that any
-- number of workers and replicas sharing one relayer never collide.
CREATE TABLE relayer_nonces (
    chain       TEXT NOT NULL,
    sender      TEXT NOT NULL,
    next_nonce  BIGINT NOT NULL,
    PRIMARY KEY (chain, sender)
);
