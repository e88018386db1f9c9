//! A view read at most once per `max_age`, however often it is asked for:
//! a probe anyone may call (`/readyz`, `/metrics`) costs the database and
//! the chains' RPC quota one read per interval, not one per request.
//! Concurrent askers wait for the one read in progress.

use std::future::Future;
use std::time::{Duration, Instant};

pub struct Cached<T: Clone> {
    slot: tokio::sync::Mutex<Option<(Instant, T)>>,
}

impl<T: Clone> Default for Cached<T> {
    fn default() -> Self {
        Cached { slot: tokio::sync::Mutex::new(None) }
    }
}

impl<T: Clone> Cached<T> {
    pub async fn get<F, Fut>(&self, max_age: Duration, read: F) -> T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let mut slot = self.slot.lock().await;
        if let Some((at, v)) = slot.as_ref() {
            if at.elapsed() < max_age {
                return v.clone();
            }
        }
        let v = read().await;
        *slot = Some((Instant::now(), v.clone()));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn reads_once_per_interval() {
        let cache = Cached::<usize>::default();
        let reads = AtomicUsize::new(0);
        let read = || async { reads.fetch_add(1, Ordering::SeqCst) };
        for _ in 0..100 {
            assert_eq!(cache.get(Duration::from_secs(60), read).await, 0);
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        assert_eq!(cache.get(Duration::ZERO, read).await, 1, "stale: read again");
    }
}
