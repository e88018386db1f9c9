//! A sponsored swap run's phase: started (its authorization stored first,
//! under the request's lease) and moved on by the lease's holder, each a
//! compare-and-set. Runs are the service's own bookkeeping of one
//! `/v2/swap/execute`, not a resource of the API: no event is announced.

use crate::db::Db;
use crate::store::sponsored_swaps::{get, Phase, Run};
use crate::store::StoreError;

/// Record `new` (phase `pulling`) leased to `holder` until `lease_until`,
/// or find the run recorded before under the same id (a retry).
pub async fn start(db: &Db, new: &Run, holder: &str, lease_until: i64) -> Result<Run, StoreError> {
    sqlx::query(
        "INSERT INTO sponsored_swaps (run, agent_id, chain, asset, from_token, to_token, from_amount, fee, slippage_bps, proof, phase, \
         lease_until, lease_holder, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pulling', $11, $12, $13, $13) ON CONFLICT (run) DO NOTHING",
    )
    .bind(&new.run)
    .bind(&new.agent_id)
    .bind(&new.chain)
    .bind(&new.asset)
    .bind(&new.from_token)
    .bind(&new.to_token)
    .bind(&new.from_amount)
    .bind(&new.fee)
    .bind(new.slippage_bps)
    .bind(&new.proof)
    .bind(lease_until)
    .bind(holder)
    .bind(new.created_at)
    .execute(&db.pool)
    .await?;
    get(db, &new.run).await?.ok_or_else(|| StoreError::Decode(format!("sponsored swap {} vanished", new.run)))
}

/// `from` → `to` by the lease's holder; the hash and estimate of the swap
/// (`done`), or why it ended (`refunded`, `refused`). `false` if the run
/// was not in `from` or the lease is another's.
#[allow(clippy::too_many_arguments)]
pub async fn advance(
    db: &Db,
    run: &str,
    holder: &str,
    from: Phase,
    to: Phase,
    tx_hash: Option<&str>,
    estimated_output: Option<&str>,
    error_code: Option<&str>,
    now: i64,
) -> Result<bool, StoreError> {
    let n = sqlx::query(
        "UPDATE sponsored_swaps SET phase = $1, tx_hash = COALESCE($2, tx_hash), estimated_output = COALESCE($3, estimated_output), \
         error_code = $4, updated_at = $5, lease_until = CASE WHEN $6 = 1 THEN 0 ELSE lease_until END \
         WHERE run = $7 AND phase = $8 AND lease_holder = $9",
    )
    .bind(to.as_str())
    .bind(tx_hash)
    .bind(estimated_output)
    .bind(error_code)
    .bind(now)
    .bind(i32::from(to.is_final()))
    .bind(run)
    .bind(from.as_str())
    .bind(holder)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(n == 1)
}
