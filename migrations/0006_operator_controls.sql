-- Operator controls from the CLI. Portable SQL.

-- `account disable` (its agents are disabled in the same transaction).
ALTER TABLE accounts ADD COLUMN status TEXT NOT NULL DEFAULT 'active';

-- `recipient disable`: the email no longer resolves on that chain until it
-- is added again.
ALTER TABLE recipients ADD COLUMN disabled_at BIGINT;
