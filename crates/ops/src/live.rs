//! Live status for streams (Server-Sent Events): one poller per replica
//! reads new rows of `events` (written by any replica) and announces them
//! to this replica's streams. A stream re-reads its own subject's record on
//! each announcement, so a missed announcement costs latency, never a gap.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use crate::db::Db;
use crate::store::transition::{recorded_since, Recorded};

/// How far back each poll looks again: a change committed late by another
/// replica (its clock, its transaction) is still seen.
const MARGIN_MS: i64 = 10_000;
const POLL: Duration = Duration::from_millis(200);

#[derive(Clone)]
pub struct Hub {
    tx: broadcast::Sender<Arc<Recorded>>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub { tx: broadcast::channel(4096).0 }
    }
}

impl Hub {
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Recorded>> {
        self.tx.subscribe()
    }

    /// Poll `events` while anyone listens.
    pub fn spawn(&self, db: Db) {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let mut since = crate::clock::now_ms() - MARGIN_MS;
            let mut seen: HashMap<String, i64> = HashMap::new();
            loop {
                tokio::time::sleep(POLL).await;
                if tx.receiver_count() == 0 {
                    since = crate::clock::now_ms() - MARGIN_MS;
                    seen.clear();
                    continue;
                }
                let rows = match recorded_since(&db, since, 2000).await {
                    Ok(rows) => rows,
                    Err(e) => {
                        tracing::warn!(error = %e, "live: reading events failed");
                        continue;
                    }
                };
                let newest = rows.iter().map(|r| r.created_at).max().unwrap_or(since + MARGIN_MS);
                for r in rows {
                    if seen.insert(r.id.clone(), r.created_at).is_none() {
                        let _ = tx.send(Arc::new(r));
                    }
                }
                since = since.max(newest - MARGIN_MS);
                seen.retain(|_, at| *at >= since);
            }
        });
    }
}

/// Open live streams per key (a keyless client's address, an agent): a
/// stream holds its count until it ends. Its size is the open streams'.
#[derive(Default)]
pub struct StreamCounts(std::sync::Mutex<std::collections::HashMap<String, usize>>);

/// One open stream's place in `StreamCounts`, given back when dropped.
pub struct StreamHeld {
    counts: std::sync::Arc<StreamCounts>,
    key: String,
}

impl StreamCounts {
    /// A place for one more stream of `key`, unless it holds `cap` already.
    pub fn open(self: &std::sync::Arc<Self>, key: String, cap: usize) -> Option<StreamHeld> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(key.clone()).or_default();
        if *n >= cap {
            return None;
        }
        *n += 1;
        Some(StreamHeld { counts: self.clone(), key })
    }
}

impl Drop for StreamHeld {
    fn drop(&mut self) {
        let mut open = self.counts.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// Which agent owns each intent (`None`: a public intent), as read once:
/// an intent's owner never changes, so every agent stream of a replica
/// skips another's change without reading its row. Bounded: past
/// `OWNERS_KEPT` entries it starts over.
#[derive(Default)]
pub struct Owners(std::sync::Mutex<std::collections::HashMap<String, Option<String>>>);

const OWNERS_KEPT: usize = 100_000;

impl Owners {
    pub fn get(&self, intent: &str) -> Option<Option<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(intent).cloned()
    }

    pub fn put(&self, intent: &str, agent: Option<String>) {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if known.len() >= OWNERS_KEPT {
            known.clear();
        }
        known.insert(intent.to_string(), agent);
    }
}
