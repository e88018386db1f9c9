-- The receivers a facilitator key speaks for: the `batch-settlement`
-- channels whose claims and refunds this facilitator signs as their
-- receiver authorizer when that key asks (the refund authentication the
-- scheme requires of a facilitator that offers itself as authorizer).
-- Addresses are lowercase hex. Keys are never deleted (only revoked), so
-- the name is the key's identity.
CREATE TABLE facilitator_key_receivers (
    key_name   TEXT NOT NULL,
    address    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (key_name, address)
);
