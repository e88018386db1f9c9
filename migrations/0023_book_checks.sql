-- The books check every read against the chain (issue 68). `held` is the
-- wallet's balance on chain at `read_block`, as the reconciler read it; a
-- pass moves on only when the balance at its last block is `held` plus the
-- movements it read (a provider that lacks a block answers no logs for it,
-- and the books would pass it by for ever). `stalled_since` is when they
-- first disagreed, NULL while they agree: a wallet stalled past the grace
-- a lagging provider needs is an alarm. NULL `held`: not read yet.
ALTER TABLE book_cursors ADD COLUMN held TEXT;
ALTER TABLE book_cursors ADD COLUMN stalled_since BIGINT;
