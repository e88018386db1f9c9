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
