-- Source legs before payouts: a source leg holds a payer's authorization,
-- which expires; a payout has no deadline. Lower values are claimed first.
ALTER TABLE settlement_queue ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
