//! Request rates per key (a client IP on `/api`, an agent on `/v2`), kept in
//! memory per replica: N replicas allow up to N times the configured rate.

use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

pub struct Limiter(DefaultKeyedRateLimiter<String>);

impl Limiter {
    pub fn per_minute(n: u32) -> Limiter {
        let n = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
        Limiter(RateLimiter::keyed(Quota::per_minute(n)))
    }

    /// `Err(seconds to wait)` when `key` is over its rate.
    pub fn check(&self, key: String) -> Result<(), u64> {
        self.0.check_key(&key).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
    }
}
