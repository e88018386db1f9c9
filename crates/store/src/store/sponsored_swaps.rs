//! Sponsored same-chain swap runs (`sponsored_swaps`): reads and leases.
//! Their phases change in `store::transition::sponsored_swaps`.

use sqlx::Row;

use super::StoreError;
use crate::db::Db;

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The agent's authorization is stored; the pull may be on its way.
    Pulling,
    /// The input is with the relayer; the swap (or a refund) is next.
    Swapping,
    /// The swap landed.
    Done,
    /// The swap could not be made; the input went back less the fee.
    Refunded,
    /// The pull could not be landed: nothing moved.
    Refused,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pulling => "pulling",
            Phase::Swapping => "swapping",
            Phase::Done => "done",
            Phase::Refunded => "refunded",
            Phase::Refused => "refused",
        }
    }

    pub fn parse(s: &str) -> Option<Phase> {
        [Phase::Pulling, Phase::Swapping, Phase::Done, Phase::Refunded, Phase::Refused].into_iter().find(|p| p.as_str() == s)
    }

    pub fn is_final(self) -> bool {
        matches!(self, Phase::Done | Phase::Refunded | Phase::Refused)
    }
}

#[derive(Debug, Clone)]
pub struct Run {
    pub run: String,
    pub agent_id: String,
    pub chain: String,
    pub asset: String,
    pub from_token: String,
    pub to_token: String,
    /// Base units of the input, decimal.
    pub from_amount: String,
    /// What the service keeps of the input for the gas, base units.
    pub fee: String,
    pub slippage_bps: i32,
    pub proof: String,
    pub phase: Phase,
    pub tx_hash: Option<String>,
    pub estimated_output: Option<String>,
    pub error_code: Option<String>,
    pub created_at: i64,
}

pub(crate) const COLUMNS: &str = "run, agent_id, chain, asset, from_token, to_token, from_amount, fee, slippage_bps, proof, phase, \
                                  tx_hash, estimated_output, error_code, created_at";

pub(crate) fn row(r: &sqlx::any::AnyRow) -> Result<Run, StoreError> {
    let phase: String = r.try_get("phase")?;
    Ok(Run {
        run: r.try_get("run")?,
        agent_id: r.try_get("agent_id")?,
        chain: r.try_get("chain")?,
        asset: r.try_get("asset")?,
        from_token: r.try_get("from_token")?,
        to_token: r.try_get("to_token")?,
        from_amount: r.try_get("from_amount")?,
        fee: r.try_get("fee")?,
        slippage_bps: r.try_get("slippage_bps")?,
        proof: r.try_get("proof")?,
        phase: Phase::parse(&phase).ok_or_else(|| StoreError::Decode(format!("sponsored swap phase `{phase}`")))?,
        tx_hash: r.try_get("tx_hash")?,
        estimated_output: r.try_get("estimated_output")?,
        error_code: r.try_get("error_code")?,
        created_at: r.try_get("created_at")?,
    })
}

pub async fn get(db: &Db, run: &str) -> Result<Option<Run>, StoreError> {
    sqlx::query(&format!("SELECT {COLUMNS} FROM sponsored_swaps WHERE run = $1"))
        .bind(run)
        .fetch_optional(&db.pool)
        .await?
        .map(|r| row(&r))
        .transpose()
}

/// Take `run`'s lease for `holder` until `now + lease_ms` if nobody holds
/// it (compare-and-set); an unfinished run only.
pub async fn lease(db: &Db, run: &str, holder: &str, now: i64, lease_ms: i64) -> Result<bool, StoreError> {
    let n = sqlx::query(
        "UPDATE sponsored_swaps SET lease_until = $1, lease_holder = $2 \
         WHERE run = $3 AND phase IN ('pulling', 'swapping') AND (lease_until < $4 OR lease_holder = $2)",
    )
    .bind(now + lease_ms)
    .bind(holder)
    .bind(run)
    .bind(now)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Unfinished runs whose lease ran out (their driver died), at most `limit`.
pub async fn abandoned(db: &Db, now: i64, limit: i64) -> Result<Vec<String>, StoreError> {
    let rows = sqlx::query(
        "SELECT run FROM sponsored_swaps WHERE phase IN ('pulling', 'swapping') AND lease_until < $1 ORDER BY lease_until LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| Ok(r.try_get("run")?)).collect()
}
