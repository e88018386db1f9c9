//! Background upkeep: expire unpaid intents, forget old idempotency keys.

use std::time::Duration;

use crate::clock::now_ms;
use crate::db::Db;
use crate::store::{idempotency, intents};

pub async fn run(db: Db, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        sweep(&db).await;
    }
}

pub async fn sweep(db: &Db) {
    let now = now_ms();
    match intents::expire_due(db, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(expired = n, "expired unpaid intents"),
        Err(e) => tracing::warn!(error = %e, "expiry sweep failed"),
    }
    if let Err(e) = idempotency::purge_expired(db, now).await {
        tracing::warn!(error = %e, "idempotency purge failed");
    }
}
