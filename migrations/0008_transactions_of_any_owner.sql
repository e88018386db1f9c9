-- A stored transaction belongs to a payment intent or to a `/v2/swap/execute`
-- run (`swx_…`), so `chain_transactions.intent_id` no longer references
-- `intents`. Rebuilt (SQLite cannot drop a constraint); portable SQL.
CREATE TABLE chain_transactions_next (
    intent_id   TEXT NOT NULL,
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
INSERT INTO chain_transactions_next (intent_id, leg, step, label, chain, sender, nonce, raw, tx_hash, status, created_at, updated_at)
    SELECT intent_id, leg, step, label, chain, sender, nonce, raw, tx_hash, status, created_at, updated_at FROM chain_transactions;
DROP TABLE chain_transactions;
ALTER TABLE chain_transactions_next RENAME TO chain_transactions;
CREATE INDEX chain_transactions_by_hash ON chain_transactions(tx_hash);
CREATE INDEX chain_transactions_by_nonce ON chain_transactions(chain, sender, nonce);
