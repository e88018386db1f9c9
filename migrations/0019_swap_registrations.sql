-- Swap registrations (issue 68): one transaction may be registered with
-- other details by someone else, and that must not block its owner's
-- registration (a squatter's 409). A registration is now unique by its
-- transaction and its details (`details`, a digest of to_chain, tokens,
-- payer, recipient and amount): the same details give the same intent,
-- other details another intent, which the chain and the provider then
-- judge (a mismatch is refused, or ends FAILED `registration_mismatch`).
-- Rows registered before keep `details` empty; the same details registered
-- again find them (`swap::register::store`).
-- The table is rebuilt to change its UNIQUE constraint (SQLite cannot
-- drop one). Portable SQL.
CREATE TABLE swap_intents_next (
    id TEXT PRIMARY KEY,
    from_chain TEXT NOT NULL,
    to_chain TEXT NOT NULL,
    source_tx_hash TEXT NOT NULL,
    from_token TEXT NOT NULL,
    to_token TEXT NOT NULL,
    payer_address TEXT NOT NULL,
    recipient_address TEXT NOT NULL,
    sending_token_amount TEXT NOT NULL,
    status TEXT NOT NULL,
    substatus TEXT,
    dest_tx_hash TEXT,
    received_amount TEXT,
    error_code TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    next_check_at BIGINT NOT NULL,
    lease_until BIGINT NOT NULL DEFAULT 0,
    lease_holder TEXT,
    details TEXT NOT NULL DEFAULT '',
    UNIQUE (from_chain, source_tx_hash, details)
);
INSERT INTO swap_intents_next (id, from_chain, to_chain, source_tx_hash, from_token, to_token, payer_address, recipient_address,
    sending_token_amount, status, substatus, dest_tx_hash, received_amount, error_code, created_at, updated_at, next_check_at,
    lease_until, lease_holder)
SELECT id, from_chain, to_chain, source_tx_hash, from_token, to_token, payer_address, recipient_address, sending_token_amount,
    status, substatus, dest_tx_hash, received_amount, error_code, created_at, updated_at, next_check_at, lease_until, lease_holder
FROM swap_intents;
DROP TABLE swap_intents;
ALTER TABLE swap_intents_next RENAME TO swap_intents;
CREATE INDEX swap_intents_due ON swap_intents (status, next_check_at);
CREATE INDEX swap_intents_by_payer ON swap_intents(lower(payer_address), created_at);
