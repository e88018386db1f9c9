-- The float check at acceptance sums what is promised on the (chain, asset)
-- float. With the amounts in the index, the sum reads the index alone
-- instead of one table row per promised intent (a cost that grew with the
-- backlog of payouts, on the one SQLite writer).
CREATE INDEX intents_promised_sum ON intents(target_chain, target_asset, status, receiving_micros, receiving_amount);
DROP INDEX intents_promised;
