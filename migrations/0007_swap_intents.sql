-- Swaps registered through POST /api/swap/intents, followed by the swap
-- tracker until DONE, FAILED or CANCELED. Portable SQL.
CREATE TABLE swap_intents (
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
    -- When the tracker looks next, and which replica holds it until when.
    next_check_at BIGINT NOT NULL,
    lease_until BIGINT NOT NULL DEFAULT 0,
    lease_holder TEXT,
    -- Registering the same transaction twice gives the same intent.
    UNIQUE (from_chain, source_tx_hash)
);
CREATE INDEX swap_intents_due ON swap_intents (status, next_check_at);
