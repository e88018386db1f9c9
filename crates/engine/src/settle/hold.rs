//! This replica's leases on the rows its passes hold, in memory: when each
//! runs out (a park ends before), and a generation per claim, so a wake-up
//! meant for an earlier claim of the same row (one that outlived its
//! lease and was claimed again) does nothing. The database lease stays the
//! truth: each claim writes a holder name of its own (`token`: the
//! replica's name and the claim's number), and a woken pass renews its
//! lease by compare-and-set on that name first, so not even a later claim
//! of the same replica is mistaken for it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A park ends this long before the lease it holds.
const LEASE_MARGIN: Duration = Duration::from_secs(10);
/// Most rows one replica holds at once (at work, queued for a batch or
/// parked): past this, its claim loop takes no more.
pub const MOST_HELD: usize = 20_000;

#[derive(Clone)]
struct Held {
    until: Instant,
    generation: u64,
    token: String,
}

#[derive(Default)]
pub struct Holds {
    held: Mutex<HashMap<String, Held>>,
    next: AtomicU64,
}

impl Holds {
    /// The holder name for a new claim of replica `holder`.
    pub fn token(&self, holder: &str) -> String {
        format!("{holder}.{}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Leases just taken on `ids` under `token`, running out at `until`
    /// (counted from before the claim was asked for: never later than the
    /// database's).
    pub fn taken(&self, ids: &[String], until: Instant, token: &str) {
        let mut held = self.held.lock().expect("holds");
        for id in ids {
            let generation = self.next.fetch_add(1, Ordering::Relaxed);
            held.insert(id.clone(), Held { until, generation, token: token.to_string() });
        }
    }

    /// How long `id` may park (at most `wait`, and never up to its
    /// lease's end), with the claim it parks under; `None`: not at all.
    pub fn park(&self, id: &str, wait: Duration) -> Option<(Instant, u64)> {
        let h = self.held.lock().expect("holds").get(id)?.clone();
        let now = Instant::now();
        let until = h.until.checked_sub(LEASE_MARGIN)?.min(now + wait);
        (until > now).then_some((until, h.generation))
    }

    /// The holder name of claim `generation`, while it is `id`'s current one.
    pub fn current(&self, id: &str, generation: u64) -> Option<String> {
        self.held.lock().expect("holds").get(id).filter(|h| h.generation == generation).map(|h| h.token.clone())
    }

    /// The lease of claim `generation` was renewed to `until`.
    pub fn renewed(&self, id: &str, generation: u64, until: Instant) {
        if let Some(h) = self.held.lock().expect("holds").get_mut(id).filter(|h| h.generation == generation) {
            h.until = until;
        }
    }

    /// Claim `generation` of `id` is over (its row lost, released or done).
    pub fn end(&self, id: &str, generation: u64) {
        let mut held = self.held.lock().expect("holds");
        if held.get(id).is_some_and(|h| h.generation == generation) {
            held.remove(id);
        }
    }

    /// `id`'s pass ended without parking.
    pub fn done(&self, id: &str) {
        self.held.lock().expect("holds").remove(id);
    }

    /// Room for more rows under `MOST_HELD`. Entries whose lease ran out
    /// go first (a pass that died, a wake lost with a follower that
    /// stopped): the database lease is over, and so is this memory of it.
    pub fn room(&self) -> usize {
        let mut held = self.held.lock().expect("holds");
        if held.len() >= MOST_HELD {
            let now = Instant::now();
            held.retain(|_, h| h.until > now);
        }
        MOST_HELD.saturating_sub(held.len())
    }
}
