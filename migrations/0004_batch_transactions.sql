-- A signed transaction that settles several intents' steps at once (a
-- Multicall3 batch) is stored once, here. Each of those intents still has its
-- own chain_transactions row with the transaction's hash; its `raw` is empty
-- and reads take the bytes from this table.
CREATE TABLE batch_transactions (
    tx_hash     TEXT PRIMARY KEY,
    raw         TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
