-- Sponsored same-chain swaps (POST /v2/swap/execute, issue 51): the agent's
-- hosted wallet authorizes its input to the relayer, which pays the gas,
-- swaps (input less `fee`) for the agent and refunds the whole input if the
-- swap cannot be made. One row per run (`swx_…`); its transactions are
-- stored under the run in `chain_transactions` (legs `swap-pull`, `swap`,
-- `swap-refund`). `phase`: pulling → swapping → done | refunded, or
-- pulling → refused (nothing moved). A run is driven by whoever holds its
-- lease: the request, or after a crash the swap tracker. Portable SQL.
CREATE TABLE sponsored_swaps (
    run               TEXT PRIMARY KEY,
    agent_id          TEXT NOT NULL,
    chain             TEXT NOT NULL,
    asset             TEXT NOT NULL,
    from_token        TEXT NOT NULL,
    to_token          TEXT NOT NULL,
    from_amount       TEXT NOT NULL,
    fee               TEXT NOT NULL,
    slippage_bps      INTEGER NOT NULL,
    -- The agent's authorization of the input to the relayer, stored before
    -- anything is sent: the one ever used for the run.
    proof             TEXT NOT NULL,
    phase             TEXT NOT NULL,
    tx_hash           TEXT,
    estimated_output  TEXT,
    error_code        TEXT,
    lease_until       BIGINT NOT NULL,
    lease_holder      TEXT NOT NULL,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
CREATE INDEX sponsored_swaps_unfinished ON sponsored_swaps (phase, lease_until);
