//! Discovery answers (tokens, chains, connections), cached per query for a
//! configured time. One request refreshes a key while the others wait for
//! it (no thundering herd); when the provider fails, a stale answer is
//! served rather than none.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::SwapError;

pub type Body = Arc<[u8]>;

#[derive(Default)]
struct Slot {
    value: Mutex<Option<(Instant, Body)>>,
    /// Held by the one request refreshing this key.
    refresh: tokio::sync::Mutex<()>,
}

impl Slot {
    fn fresh(&self, ttl: Duration) -> Option<Body> {
        self.value.lock().expect("cache slot").as_ref().filter(|(at, _)| at.elapsed() < ttl).map(|(_, b)| b.clone())
    }

    fn any(&self) -> Option<Body> {
        self.value.lock().expect("cache slot").as_ref().map(|(_, b)| b.clone())
    }
}

pub struct Cache {
    ttl: Duration,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

impl Cache {
    pub fn new(ttl: Duration) -> Cache {
        Cache { ttl, slots: Mutex::default() }
    }

    /// The answer for `key`, fetched with `fetch` only when no fresh one is
    /// cached and no other request is fetching it already.
    pub async fn get<F, Fut>(&self, key: &str, fetch: F) -> Result<Body, SwapError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Body, SwapError>>,
    {
        let slot = self.slots.lock().expect("cache").entry(key.to_string()).or_default().clone();
        if let Some(hit) = slot.fresh(self.ttl) {
            return Ok(hit);
        }
        let _flight = slot.refresh.lock().await;
        // Whoever held the lock before us may have refreshed it.
        if let Some(hit) = slot.fresh(self.ttl) {
            return Ok(hit);
        }
        match fetch().await {
            Ok(body) => {
                *slot.value.lock().expect("cache slot") = Some((Instant::now(), body.clone()));
                Ok(body)
            }
            Err(e) => match slot.any() {
                Some(stale) => {
                    tracing::warn!(key, error = %e, "swap discovery refresh failed; serving the cached answer");
                    Ok(stale)
                }
                None => Err(e),
            },
        }
    }
}
