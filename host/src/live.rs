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
