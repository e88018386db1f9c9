-- The books (issue 68): every on-chain token movement the service credits,
-- pays or sees at its own wallets, one row each, keyed by where the chain
-- put it: (chain, transaction id, log or instruction index). A movement is
-- credited to at most one payment: `purpose` ('source' and 'payout' of an
-- intent, 'x402' of a facilitator settlement) and `owner_id` are set once,
-- by a compare-and-set in the same database transaction as the payment's
-- status change, and (purpose, owner_id) is unique, so a payment points at
-- exactly one movement. Rows the reconciler found at a service wallet that
-- no payment claims keep both NULL (`stablerail books unmatched`).
-- `fee` is the whole transaction's network fee in the chain's native base
-- units when the service's relayer sent it (shared by the rows of one
-- transaction); NULL when someone else paid. Portable SQL.
CREATE TABLE book_movements (
    chain         TEXT NOT NULL,
    tx_id         TEXT NOT NULL,
    log_index     BIGINT NOT NULL,
    token         TEXT NOT NULL,
    from_address  TEXT NOT NULL,
    to_address    TEXT NOT NULL,
    amount        TEXT NOT NULL,
    block         BIGINT NOT NULL,
    purpose       TEXT,
    owner_id      TEXT,
    fee           TEXT,
    created_at    BIGINT NOT NULL,
    credited_at   BIGINT,
    -- When the reconciler read it on chain at a service wallet.
    seen_at       BIGINT,
    PRIMARY KEY (chain, tx_id, log_index)
);
CREATE UNIQUE INDEX book_movements_credit ON book_movements (purpose, owner_id);
CREATE INDEX book_movements_to ON book_movements (chain, to_address, token);
CREATE INDEX book_movements_from ON book_movements (chain, from_address, token);

-- The reconciler's place per (chain, wallet, token): the opening balance it
-- read at `opened_block`, and the last block whose movements it has read.
-- Books balance = opening + movements in - movements out since then.
CREATE TABLE book_cursors (
    chain         TEXT NOT NULL,
    wallet        TEXT NOT NULL,
    token         TEXT NOT NULL,
    opening       TEXT NOT NULL,
    opened_block  BIGINT NOT NULL,
    read_block    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (chain, wallet, token)
);
