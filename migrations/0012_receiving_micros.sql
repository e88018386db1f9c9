-- The receiving amount in millionths (it has at most 6 decimals), so the
-- float check at acceptance sums what is promised inside the database, as
-- one integer, instead of reading every promised row. Rows written before
-- (or by a replica without this column) are NULL and make the check fall
-- back to reading the rows.
ALTER TABLE intents ADD COLUMN receiving_micros BIGINT;
UPDATE intents SET receiving_micros = CAST(ROUND(CAST(receiving_amount AS NUMERIC) * 1000000) AS BIGINT);
CREATE INDEX intents_promised ON intents(target_chain, target_asset, status);
