//! Background upkeep: expire unpaid intents, forget old idempotency keys,
//! and delete what `[retention]` says nobody needs any more.

use std::time::Duration;

use crate::clock::now_ms;
use crate::config::Retention;
use crate::db::Db;
use crate::store::{idempotency, retention};

/// How often a retention pass runs (each deletes at most a batch per kind).
const PRUNE_EVERY: Duration = Duration::from_secs(60);

pub async fn run(db: Db, every: Duration, keep: Retention, sign_in_window: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pruned_at = tokio::time::Instant::now();
    loop {
        tick.tick().await;
        sweep(&db, sign_in_window.as_millis() as i64).await;
        if pruned_at.elapsed() >= PRUNE_EVERY {
            prune(&db, &keep).await;
            pruned_at = tokio::time::Instant::now();
        }
    }
}

pub async fn prune(db: &Db, keep: &Retention) {
    match retention::prune(db, keep, now_ms()).await {
        Ok(p) if p.any() => tracing::info!(
            expired_intents = p.expired_intents,
            payloads_dropped = p.payloads_dropped,
            failed_settlements = p.failed_settlements,
            unseen_swaps = p.unseen_swaps,
            webhook_deliveries = p.webhook_deliveries,
            "retention: deleted what is no longer needed"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "retention pass failed"),
    }
}

pub async fn sweep(db: &Db, sign_in_window_ms: i64) {
    let now = now_ms();
    match crate::store::transition::intents::expire_due(db, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(expired = n, "expired unpaid intents"),
        Err(e) => tracing::warn!(error = %e, "expiry sweep failed"),
    }
    if let Err(e) = idempotency::purge_expired(db, now).await {
        tracing::warn!(error = %e, "idempotency purge failed");
    }
    if let Err(e) = crate::store::dashboard::purge(db, now, sign_in_window_ms).await {
        tracing::warn!(error = %e, "sessions purge failed");
    }
}
