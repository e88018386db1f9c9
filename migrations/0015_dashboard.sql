-- The dashboard (issue 49): accounts that sign in by email, their
-- sessions, one-time codes, invitations, payout addresses, and when each
-- API key was last used. Portable SQL.

-- An account made on the dashboard is a verified email; the CLI's accounts
-- may have none. `operator` (0/1) opens the operator pages.
ALTER TABLE accounts ADD COLUMN email TEXT;
ALTER TABLE accounts ADD COLUMN operator INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX accounts_by_email ON accounts(email);

-- Last use of a key, written at most once a minute per key.
ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT;

-- One live code per email: only its HMAC under the pepper is kept.
-- `attempts` counts wrong tries; past the limit the code is dead and
-- `locked_until` holds new codes back.
CREATE TABLE sign_in_codes (
    email         TEXT PRIMARY KEY,
    code_hmac     TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    sent_at       BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    locked_until  BIGINT NOT NULL DEFAULT 0
);

-- Server-side sessions: the cookie carries a random token, the row its
-- SHA-256. `csrf` is the token every form of the session carries.
CREATE TABLE sessions (
    token_hash    TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts(id),
    csrf          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    last_seen_at  BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL
);
CREATE INDEX sessions_by_account ON sessions(account_id);
CREATE INDEX sessions_by_expiry ON sessions(expires_at);

-- `signup = "invite"`: the emails the operator invited.
CREATE TABLE invitations (
    email       TEXT PRIMARY KEY,
    created_at  BIGINT NOT NULL
);

-- Where an account's email is paid, per target chain.
CREATE TABLE payout_addresses (
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    chain       TEXT NOT NULL,
    address     TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (account_id, chain)
);

-- The dashboard's payments page: intents paid to an account's email, and
-- swaps registered from its wallets.
CREATE INDEX intents_by_recipient_email ON intents(recipient_email, created_at);
CREATE INDEX swap_intents_by_payer ON swap_intents(lower(payer_address), created_at);
