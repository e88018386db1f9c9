-- Whether a settled payment's success was answered to a caller. For schemes
-- whose chain cannot refuse a spent payload at verify (a Solana transaction
-- verifies offline until its blockhash expires), success is answered once;
-- every later settle of it is `duplicate_settlement`.
ALTER TABLE x402_settlements ADD COLUMN answered INTEGER NOT NULL DEFAULT 0;
