-- The advisory sanctions screen at create: the intent is created and the
-- hit recorded for operators (never shown in public answers); the screen in
-- settlement still ends it BLOCKED. Portable SQL.
ALTER TABLE intents ADD COLUMN payer_listed INTEGER NOT NULL DEFAULT 0;
