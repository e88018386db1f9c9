-- Exactly once under crashes. Portable SQL.

-- Why an intent failed or waits, as a stable code beside error_message (the
-- fixed sentence users read).
ALTER TABLE intents ADD COLUMN error_code TEXT;

-- Zero-value self-transfers the engine signed to fill a nonce that no stored
-- transaction can use any more, stored before they are broadcast.
CREATE TABLE nonce_fillers (
    chain       TEXT NOT NULL,
    sender      TEXT NOT NULL,
    nonce       BIGINT NOT NULL,
    raw         TEXT NOT NULL,
    tx_hash     TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (chain, sender, nonce)
);

-- Transactions a step no longer uses (it reverted, or its nonce went to
-- another transaction), kept for the audit trail when the step is re-signed.
CREATE TABLE dropped_transactions (
    intent_id   TEXT NOT NULL,
    leg         TEXT NOT NULL,
    step        INTEGER NOT NULL,
    chain       TEXT NOT NULL,
    sender      TEXT NOT NULL,
    nonce       BIGINT NOT NULL,
    tx_hash     TEXT NOT NULL,
    dropped_at  BIGINT NOT NULL
);

CREATE INDEX chain_transactions_by_nonce ON chain_transactions(chain, sender, nonce);
