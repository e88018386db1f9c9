-- Sign-in tries per email across codes (issue 69): a new code no longer
-- resets an email's failed tries. `attempts` counts the failed tries in the
-- window that began at `window_started`; reaching the budget locks the
-- email for `lockout_seconds` times (`lockouts` + 1), and a row with
-- recent failures or lockouts outlives its code. Portable SQL.
ALTER TABLE sign_in_codes ADD COLUMN window_started BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sign_in_codes ADD COLUMN lockouts INTEGER NOT NULL DEFAULT 0;
