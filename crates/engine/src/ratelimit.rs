//! Request rates per key (a client IP on `/api`, an agent on `/v2`), kept in
//! memory per replica: N replicas allow up to N times the configured rate.
//!
//! The table forgets: a key whose bucket is full again is the same as a key
//! never seen, so it is dropped (`forget_idle`, on a timer and whenever the
//! table outgrows its bound). A flood of fresh keys faster than that (every
//! one of them still mid-window) empties the table rather than let it grow:
//! memory stays bounded, and the cost is that the keys limited at that
//! moment start over, which rotating addresses would have bought them anyway.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// How many checks pass between two looks at the table's size.
pub const SIZE_CHECK_EVERY: usize = 1024;

pub struct Limiter {
    quota: Quota,
    table: RwLock<DefaultKeyedRateLimiter<String>>,
    max_keys: usize,
    checks: AtomicUsize,
}

impl Limiter {
    /// `n` a minute per key, at most about `max_keys` keys remembered.
    pub fn bounded(n: u32, max_keys: usize) -> Limiter {
        let quota = Quota::per_minute(NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN));
        Limiter { quota, table: RwLock::new(RateLimiter::keyed(quota)), max_keys: max_keys.max(1), checks: AtomicUsize::new(0) }
    }

    /// `Err(seconds to wait)` when `key` is over its rate.
    pub fn check(&self, key: String) -> Result<(), u64> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SIZE_CHECK_EVERY == SIZE_CHECK_EVERY - 1 {
            self.bound();
        }
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        table.check_key(&key).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
    }

    /// Drop every key whose bucket has refilled, and give the memory back.
    pub fn forget_idle(&self) {
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        table.retain_recent();
        table.shrink_to_fit();
    }

    /// Keys remembered now.
    pub fn len(&self) -> usize {
        self.table.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn bound(&self) {
        if self.len() <= self.max_keys {
            return;
        }
        self.forget_idle();
        if self.len() > self.max_keys {
            tracing::warn!(
                keys = self.len(),
                bound = self.max_keys,
                "rate-limit table over its bound with every key active; starting over"
            );
            crate::telemetry::limiter_reset();
            *self.table.write().unwrap_or_else(|p| p.into_inner()) = RateLimiter::keyed(self.quota);
        }
    }
}

/// A budget per key per hour (a fixed window): failures (one each), or
/// gas (its amount). Looked at before trying. Bounded like `Limiter`: past
/// `max_keys`, keys whose window ended are forgotten, and if all are live
/// the table starts over.
pub struct Budget {
    per_hour: u64,
    max_keys: usize,
    table: std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, u64)>>,
}

impl Budget {
    pub fn per_hour(per_hour: impl Into<u64>, max_keys: usize) -> Budget {
        Budget { per_hour: per_hour.into().max(1), max_keys: max_keys.max(1), table: Default::default() }
    }

    /// Has `key` spent its budget this window?
    pub fn exhausted(&self, key: &str) -> bool {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table.get(key).is_some_and(|(since, n)| since.elapsed() < HOUR && *n >= self.per_hour)
    }

    /// One failure of `key`.
    pub fn spend(&self, key: &str) {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        self.add(&mut table, key, 1);
    }

    /// `n` from each of `keys` if every one of them has `n` left this
    /// window, at once (two requests cannot both take the last of it);
    /// otherwise nothing, and false.
    pub fn take(&self, keys: &[&str], n: u64) -> bool {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let used = |k: &str| table.get(k).filter(|(since, _)| since.elapsed() < HOUR).map_or(0, |(_, u)| *u);
        if keys.iter().any(|k| used(k).saturating_add(n) > self.per_hour) {
            return false;
        }
        for k in keys {
            self.add(&mut table, k, n);
        }
        true
    }

    /// Give back what `take` took (what it was taken for was not done).
    pub fn give_back(&self, keys: &[&str], n: u64) {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        for k in keys {
            if let Some((_, used)) = table.get_mut(*k) {
                *used = used.saturating_sub(n);
            }
        }
    }

    fn add(&self, table: &mut std::collections::HashMap<String, (std::time::Instant, u64)>, key: &str, n: u64) {
        if table.len() >= self.max_keys && !table.contains_key(key) {
            table.retain(|_, (since, _)| since.elapsed() < HOUR);
            if table.len() >= self.max_keys {
                table.clear();
            }
        }
        let entry = table.entry(key.to_string()).or_insert((std::time::Instant::now(), 0));
        if entry.0.elapsed() >= HOUR {
            *entry = (std::time::Instant::now(), 0);
        }
        entry.1 = entry.1.saturating_add(n);
    }
}

const HOUR: std::time::Duration = std::time::Duration::from_secs(3600);
