//! An intent's status: created, accepted, expired, and each move the engine
//! and the operator make, every one a compare-and-set on the status it
//! expects.

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use sqlx::Row;

use super::{record, Change, Subject};
use crate::db::{Backend, Db};
use crate::failure::Reason;
use crate::intent::{Intent, Status};
use crate::store::books::Credited;
use crate::store::intents::{get, COLUMNS};
use crate::store::StoreError;

fn change(id: &str, version: i64, from: Option<Status>, to: Status, why: Option<&Reason>) -> Change {
    Change {
        subject: Subject::Intent,
        id: id.to_string(),
        version,
        from: from.map(|f| f.as_str().to_string()),
        to: to.as_str().to_string(),
        code: why.map(|r| r.code.code().to_string()),
    }
}

/// `from → to`, recording why when given. `false` if the intent was not in
/// `from` (someone else moved it).
pub async fn transition(db: &Db, id: &str, from: Status, to: Status, why: Option<&Reason>, now_ms: i64) -> Result<bool, StoreError> {
    transition_from(db, id, &[from, from], to, why, now_ms).await
}

/// The same from either of two states, in one compare-and-set (a payout
/// that failed is back to SOURCE_SETTLED whether it had reached
/// TARGET_SETTLING or not).
pub async fn transition_from(
    db: &Db,
    id: &str,
    from: &[Status; 2],
    to: Status,
    why: Option<&Reason>,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let mut tx = db.pool.begin().await?;
    // One statement per state it may be in, in one transaction: the event
    // names the state it was in.
    for (n, f) in from.iter().enumerate() {
        if from[..n].contains(f) {
            continue;
        }
        let moved = sqlx::query(
            "UPDATE intents SET status = $1, error_message = COALESCE($2, error_message), \
             error_code = COALESCE($6, error_code), updated_at = $3, version = version + 1 \
             WHERE id = $4 AND status = $5 RETURNING version",
        )
        .bind(to.as_str())
        .bind(why.map(|r| r.message.as_str()))
        .bind(now_ms)
        .bind(id)
        .bind(f.as_str())
        .bind(why.map(|r| r.code.code()))
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = moved {
            record(&mut tx, db.backend, &[change(id, row.try_get("version")?, Some(*f), to, why)], now_ms).await?;
            tx.commit().await?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// A `/v2` agent's wallet could not pay: PENDING → AWAITING_PAYMENT, its
/// own authorization forgotten, so the agent can fund the wallet and
/// execute again before the intent expires.
pub async fn back_to_awaiting(db: &Db, id: &str, why: &Reason, now_ms: i64) -> Result<bool, StoreError> {
    let mut tx = db.pool.begin().await?;
    let moved = sqlx::query(
        "UPDATE intents SET status = $1, settle_proof = NULL, replay_key = NULL, payer = NULL, error_code = $2, \
         error_message = $3, updated_at = $4, version = version + 1 WHERE id = $5 AND status = $6 AND agent_id IS NOT NULL \
         RETURNING version",
    )
    .bind(Status::AwaitingPayment.as_str())
    .bind(why.code.code())
    .bind(&why.message)
    .bind(now_ms)
    .bind(id)
    .bind(Status::Pending.as_str())
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = moved else { return Ok(false) };
    let event = change(id, row.try_get("version")?, Some(Status::Pending), Status::AwaitingPayment, Some(why));
    record(&mut tx, db.backend, &[event], now_ms).await?;
    tx.commit().await?;
    Ok(true)
}

/// The `/v2` source authorization, made once by the agent's wallet.
pub async fn set_source_proof(db: &Db, id: &str, proof: &str, replay_key: &str, payer: &str) -> Result<bool, StoreError> {
    Ok(sqlx::query(
        "UPDATE intents SET settle_proof = $1, replay_key = $2, payer = $3, version = version + 1 \
         WHERE id = $4 AND status = $5 AND settle_proof IS NULL",
    )
    .bind(proof)
    .bind(replay_key)
    .bind(payer)
    .bind(id)
    .bind(Status::Pending.as_str())
    .execute(&db.pool)
    .await?
    .rows_affected()
        == 1)
}

/// SOURCE_SETTLED (or a TARGET_SETTLING being resumed) → TARGET_SETTLING,
/// storing `proof` as the payout authorization unless one is stored
/// already. Answers the stored authorization, or `None` if the intent is in
/// neither state (someone else moved it). Written through a `Group`:
/// payouts starting together (a batch's source legs settle together) are
/// one statement, each row still a compare-and-set on its status.
#[derive(Debug, Clone)]
pub struct StartPayout {
    pub id: String,
    pub proof: Option<String>,
}

impl crate::store::group::Write for StartPayout {
    type Item = StartPayout;
    type Out = Option<String>;

    async fn write(db: &Db, items: &[StartPayout]) -> Result<Vec<Option<String>>, StoreError> {
        // $1 the new status, $2 time, $3 the status it must be in; then
        // (id, proof) pairs for the CASE, then the ids again for the IN list.
        let n = items.len();
        let case: String = (0..n).map(|k| format!(" WHEN ${} THEN ${}", 4 + 2 * k, 5 + 2 * k)).collect();
        let sql = format!(
            "UPDATE intents SET target_settle_proof = COALESCE(target_settle_proof, CASE id{case} END), status = $1, \
             updated_at = $2, version = version + 1 WHERE status = $3 AND id IN ({}) RETURNING id, target_settle_proof, version",
            crate::store::numbered_params(4 + 2 * n, n)
        );
        let now_ms = crate::clock::now_ms();
        let mut tx = db.pool.begin().await?;
        let mut stored = std::collections::HashMap::new();
        let mut events = vec![];
        // Resumed first (already TARGET_SETTLING: no change of status), then
        // started (SOURCE_SETTLED → TARGET_SETTLING), so none is both.
        for from in [Status::TargetSettling, Status::SourceSettled] {
            let mut q = sqlx::query(&sql).bind(Status::TargetSettling.as_str()).bind(now_ms).bind(from.as_str());
            for p in items {
                q = q.bind(&p.id).bind(p.proof.as_deref());
            }
            for p in items {
                q = q.bind(&p.id);
            }
            for r in q.fetch_all(&mut *tx).await? {
                let id = r.try_get::<String, _>("id")?;
                if from == Status::SourceSettled {
                    events.push(change(&id, r.try_get("version")?, Some(from), Status::TargetSettling, None));
                }
                stored.insert(id, r.try_get::<Option<String>, _>("target_settle_proof")?);
            }
        }
        record(&mut tx, db.backend, &events, now_ms).await?;
        tx.commit().await?;
        Ok(items.iter().map(|p| stored.get(&p.id).cloned().flatten()).collect())
    }
}

/// Which leg of an intent a transaction settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leg {
    Source,
    Target,
}

/// A leg settled by `tx_hash`: the intent moves PENDING → SOURCE_SETTLED
/// (its payout queued, due now, behind due source legs, its retry budget
/// starting) or TARGET_SETTLING → TARGET_SETTLED (out of the queue), each a
/// compare-and-set on its status, in the same database transaction as the
/// leg's credit in the books (`credit`): a leg whose movement the books
/// give to another payment does not move (answered `false`). Legs that land
/// together (a Multicall3 batch's receipt ends many) are written together
/// through a `Group`: one statement per transaction for the intents, one for
/// their queue entries. The two statements need not be one transaction: a
/// crash between them leaves the entry leased, and the next pass, after the
/// lease, finds the leg already settled.
#[derive(Debug, Clone)]
pub struct LegSettled {
    pub id: String,
    pub leg: Leg,
    pub tx_hash: String,
    pub credit: crate::store::books::Credit,
}

impl crate::store::group::Write for LegSettled {
    type Item = LegSettled;
    type Out = bool;

    async fn write(db: &Db, items: &[LegSettled]) -> Result<Vec<bool>, StoreError> {
        let now_ms = crate::clock::now_ms();
        let mut tx = db.pool.begin().await?;
        let (mut credited, mut fresh) = (std::collections::HashSet::new(), vec![]);
        for s in items {
            match crate::store::books::credit(&mut tx, &s.credit, now_ms).await? {
                Credited::Held => {}
                Credited::New => fresh.push(s),
                Credited::Refused => continue,
            }
            credited.insert(s.id.as_str());
        }
        let mut by_tx: Vec<(Leg, &str, Vec<&str>)> = vec![];
        for s in items.iter().filter(|s| credited.contains(s.id.as_str())) {
            match by_tx.iter_mut().find(|(leg, tx, _)| *leg == s.leg && *tx == s.tx_hash) {
                Some((_, _, ids)) => ids.push(&s.id),
                None => by_tx.push((s.leg, &s.tx_hash, vec![&s.id])),
            }
        }
        let mut events = vec![];
        for (leg, tx_hash, ids) in &by_tx {
            let (column, from, to) = match leg {
                Leg::Source => ("source", Status::Pending, Status::SourceSettled),
                Leg::Target => ("target", Status::TargetSettling, Status::TargetSettled),
            };
            let sql = format!(
                "UPDATE intents SET status = $1, {column}_tx_hash = $2, {column}_settled_at = $3, updated_at = $3, \
                 error_message = NULL, error_code = NULL, version = version + 1 WHERE status = $4 AND id IN ({}) RETURNING id, version",
                crate::store::numbered_params(5, ids.len())
            );
            let mut q = sqlx::query(&sql).bind(to.as_str()).bind(*tx_hash).bind(now_ms).bind(from.as_str());
            for id in ids {
                q = q.bind(*id);
            }
            for r in q.fetch_all(&mut *tx).await? {
                events.push(change(&r.try_get::<String, _>("id")?, r.try_get("version")?, Some(from), to, None));
            }
        }
        // A credit given here to a leg that did not move (someone else moved
        // the intent) is taken back with it.
        for s in fresh {
            if !events.iter().any(|e| e.id == s.id) {
                crate::store::books::uncredit(&mut tx, s.credit.purpose, &s.id).await?;
            }
        }
        record(&mut tx, db.backend, &events, now_ms).await?;
        tx.commit().await?;
        for leg in [Leg::Source, Leg::Target] {
            let ids: Vec<&str> = items.iter().filter(|s| s.leg == leg && credited.contains(s.id.as_str())).map(|s| s.id.as_str()).collect();
            if ids.is_empty() {
                continue;
            }
            let params = crate::store::numbered_params(2, ids.len());
            let sql = match leg {
                Leg::Source => format!(
                    "UPDATE settlement_queue SET locked_by = NULL, locked_until = NULL, available_at = $1, priority = 1, \
                     enqueued_at = $1, attempts = 0 WHERE intent_id IN ({params})"
                ),
                // `$1` is the time here too, so both statements bind alike.
                Leg::Target => format!("DELETE FROM settlement_queue WHERE intent_id IN ({params}) AND $1 > 0"),
            };
            let mut q = sqlx::query(&sql).bind(now_ms);
            for id in ids {
                q = q.bind(id);
            }
            q.execute(&db.pool).await?;
        }
        Ok(items.iter().map(|s| credited.contains(s.id.as_str())).collect())
    }
}

/// PARTIAL_SETTLEMENT → TARGET_SETTLED: a stored payout did land after all.
pub async fn reconciled(db: &Db, id: &str, tx_hash: &str, credit: &crate::store::books::Credit, now_ms: i64) -> Result<bool, StoreError> {
    let mut tx = db.pool.begin().await?;
    if !crate::store::books::credit(&mut tx, credit, now_ms).await?.holds() {
        return Ok(false);
    }
    let moved = sqlx::query(
        "UPDATE intents SET status = $1, target_tx_hash = $2, target_settled_at = $3, updated_at = $3, \
         error_message = NULL, error_code = NULL, version = version + 1 WHERE id = $4 AND status = $5 RETURNING version",
    )
    .bind(Status::TargetSettled.as_str())
    .bind(tx_hash)
    .bind(now_ms)
    .bind(id)
    .bind(Status::PartialSettlement.as_str())
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = moved else { return Ok(false) };
    let event = change(id, row.try_get("version")?, Some(Status::PartialSettlement), Status::TargetSettled, None);
    record(&mut tx, db.backend, &[event], now_ms).await?;
    tx.commit().await?;
    Ok(true)
}

/// TARGET_SETTLING with `proof` → TARGET_SETTLING with none: a payout
/// authorization that expired with no transaction of it stored (none was
/// sent, or each was dropped once shown unable to land) is set aside, so
/// that the next pass authorizes a new one. Compare-and-set on the proof and
/// on there being no stored payout transaction: of two replicas, one renews,
/// and never while a transaction of it may still land.
pub async fn renew_payout(db: &Db, id: &str, proof: &str, now_ms: i64) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE intents SET target_settle_proof = NULL, updated_at = $1, version = version + 1 \
         WHERE id = $2 AND status = $3 AND target_settle_proof = $4 \
         AND NOT EXISTS (SELECT 1 FROM chain_transactions WHERE intent_id = $2 AND leg = $5)",
    )
    .bind(now_ms)
    .bind(id)
    .bind(Status::TargetSettling.as_str())
    .bind(proof)
    .bind("target")
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Intents in `status`, oldest first.
pub async fn ids_with_status(db: &Db, status: Status, limit: i64) -> Result<Vec<String>, StoreError> {
    sqlx::query("SELECT id FROM intents WHERE status = $1 ORDER BY created_at, id LIMIT $2")
        .bind(status.as_str())
        .bind(limit)
        .fetch_all(&db.pool)
        .await?
        .iter()
        .map(|r| r.try_get("id").map_err(StoreError::from))
        .collect()
}

/// What `retry` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Retry {
    /// PARTIAL_SETTLEMENT → SOURCE_SETTLED, queued for its payout.
    Reopened,
    /// Still settling: its queue entry is due now.
    Requeued,
    /// Terminal or unpaid: nothing to retry.
    NotRetriable(Status),
    NotFound,
}

/// An operator's retry: re-open a PARTIAL_SETTLEMENT intent, or make a
/// waiting one due now. The payout's retry budget starts again. Running it
/// twice does no harm: the second run finds it waiting and re-queues it.
pub async fn retry(db: &Db, id: &str, now_ms: i64) -> Result<Retry, StoreError> {
    let mut tx = db.pool.begin().await?;
    let Some(row) = sqlx::query("SELECT status FROM intents WHERE id = $1").bind(id).fetch_optional(&mut *tx).await? else {
        return Ok(Retry::NotFound);
    };
    let status = Status::parse(&row.try_get::<String, _>("status")?).unwrap_or(Status::Expired);
    let outcome = match status {
        Status::PartialSettlement => {
            let moved = sqlx::query(
                "UPDATE intents SET status = $1, error_code = NULL, error_message = NULL, updated_at = $2, \
                 version = version + 1 WHERE id = $3 AND status = $4 RETURNING version",
            )
            .bind(Status::SourceSettled.as_str())
            .bind(now_ms)
            .bind(id)
            .bind(Status::PartialSettlement.as_str())
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = moved {
                let event = change(id, row.try_get("version")?, Some(Status::PartialSettlement), Status::SourceSettled, None);
                record(&mut tx, db.backend, &[event], now_ms).await?;
            }
            Retry::Reopened
        }
        Status::Pending | Status::SourceSettled | Status::TargetSettling => Retry::Requeued,
        other => return Ok(Retry::NotRetriable(other)),
    };
    let priority = i32::from(status != Status::Pending);
    sqlx::query(
        "INSERT INTO settlement_queue (intent_id, enqueued_at, available_at, attempts, priority) VALUES ($1, $2, $2, 0, $3) \
         ON CONFLICT (intent_id) DO UPDATE SET enqueued_at = $2, available_at = $2, attempts = 0, locked_by = NULL, locked_until = NULL",
    )
    .bind(id)
    .bind(now_ms)
    .bind(priority)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(outcome)
}

/// The operator says a payout will not happen: SOURCE_SETTLED or
/// TARGET_SETTLING → PARTIAL_SETTLEMENT, out of the queue. If a stored
/// payout lands after all, the keeper's reconciliation still records it.
pub async fn give_up(db: &Db, id: &str, why: &Reason, now_ms: i64) -> Result<bool, StoreError> {
    let mut tx = db.pool.begin().await?;
    for from in [Status::SourceSettled, Status::TargetSettling] {
        let moved = sqlx::query(
            "UPDATE intents SET status = $1, error_code = $2, error_message = $3, updated_at = $4, version = version + 1 \
             WHERE id = $5 AND status = $6 RETURNING version",
        )
        .bind(Status::PartialSettlement.as_str())
        .bind(why.code.code())
        .bind(&why.message)
        .bind(now_ms)
        .bind(id)
        .bind(from.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = moved {
            record(&mut tx, db.backend, &[change(id, row.try_get("version")?, Some(from), Status::PartialSettlement, Some(why))], now_ms)
                .await?;
            sqlx::query("DELETE FROM settlement_queue WHERE intent_id = $1").bind(id).execute(&mut *tx).await?;
            tx.commit().await?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// Bound parameters per inserted row.
const INSERT_PARAMS: usize = 31;

pub async fn insert(db: &Db, i: &Intent) -> Result<(), StoreError> {
    use crate::store::group::Write as _;
    Inserts::write(db, std::slice::from_ref(i)).await.map(|_| ())
}

/// New intents, written through a `Group`: intents created at the same
/// moment are one multi-row `INSERT` (one statement and one commit instead
/// of one each). A failed group (a duplicate id) is retried row by row.
pub struct Inserts;

impl crate::store::group::Write for Inserts {
    type Item = Intent;
    type Out = ();

    async fn write(db: &Db, items: &[Intent]) -> Result<Vec<()>, StoreError> {
        let rows: Vec<String> = (0..items.len())
            .map(|r| format!("({})", crate::store::ordered_params(db.backend, 1 + r * INSERT_PARAMS, INSERT_PARAMS)))
            .collect();
        let sql = format!("INSERT INTO intents ({COLUMNS}, receiving_micros) VALUES {}", rows.join(", "));
        let mut q = sqlx::query(&sql);
        for i in items {
            q = q
                .bind(&i.id)
                .bind(&i.agent_id)
                .bind(i.status.as_str())
                .bind(&i.payer_chain)
                .bind(&i.target_chain)
                .bind(&i.payer_asset)
                .bind(&i.target_asset)
                .bind(&i.merchant_recipient)
                .bind(&i.recipient_email)
                .bind(&i.payer_address)
                .bind(&i.amount_mode)
                .bind(&i.sending_amount)
                .bind(&i.receiving_amount)
                .bind(&i.estimated_fee)
                .bind(&i.fee_breakdown)
                .bind(serde_json::to_string(&i.payment_requirements).expect("requirements serialize"))
                .bind(&i.settle_proof)
                .bind(&i.replay_key)
                .bind(&i.payer)
                .bind(&i.source_tx_hash)
                .bind(i.source_settled_at)
                .bind(&i.target_tx_hash)
                .bind(&i.target_settle_proof)
                .bind(i.target_settled_at)
                .bind(&i.error_message)
                .bind(i.created_at)
                .bind(i.expires_at)
                .bind(i.updated_at)
                .bind(i.error_code.map(|c| c.code()))
                .bind(i64::from(i.payer_listed))
                .bind(i.receiving_amount.parse().ok().and_then(micros));
        }
        let mut tx = db.pool.begin().await?;
        q.execute(&mut *tx).await?;
        let events: Vec<Change> = items.iter().map(|i| change(&i.id, 0, None, i.status, None)).collect();
        record(&mut tx, db.backend, &events, crate::clock::now_ms()).await?;
        tx.commit().await?;
        Ok(vec![(); items.len()])
    }
}

/// What a payer's proof (public flow) or an execute (`/v2`) records: the
/// intent moves AWAITING_PAYMENT → PENDING with it and is handed to
/// settlement (see `Accept::write`).
#[derive(Debug, Clone)]
pub struct Accept {
    pub id: String,
    pub settle_proof: Option<String>,
    pub replay_key: Option<String>,
    pub payer: Option<String>,
    /// The payout this acceptance promises from the proxy wallet's float.
    pub reserve: Option<Reserve>,
    pub now_ms: i64,
}

/// The payout an acceptance promises from the proxy wallet's float.
#[derive(Debug, Clone)]
pub struct Reserve {
    pub target_chain: String,
    pub target_asset: String,
    /// The intent's receiving amount, whole tokens.
    pub amount: Decimal,
    /// The proxy wallet's balance (recently read), whole tokens.
    pub balance: Decimal,
}

/// What an acceptance did.
#[derive(Debug, PartialEq, Eq)]
pub enum Accepted {
    Yes,
    /// Not awaiting payment, or expired: another request won, or too late.
    No,
    /// The float cannot cover this intent beside what is already promised.
    FloatShort,
}

/// Statuses whose receiving amount is promised from the proxy wallet.
const PROMISED: [Status; 3] = [Status::Pending, Status::SourceSettled, Status::TargetSettling];

/// Accept one payment on its own (see `Accept::write`).
pub async fn accept(db: &Db, a: Accept) -> Result<Accepted, StoreError> {
    use crate::store::group::Write as _;
    Accept::write(db, std::slice::from_ref(&a)).await?.pop().ok_or_else(|| StoreError::Decode("no acceptance answer".into()))
}

impl crate::store::group::Write for Accept {
    type Item = Accept;
    type Out = Accepted;

    /// AWAITING_PAYMENT → PENDING and the hand-off to settlement, atomically,
    /// for every acceptance given, in one transaction (proofs arriving
    /// together commit together). With a `reserve`, only if the float covers
    /// the receiving amounts already promised from it plus this one: check
    /// and move are one statement inside a transaction that holds the
    /// (chain, asset) lock (Postgres: advisory locks, taken in one order;
    /// SQLite: the write lock), so two proofs or two replicas cannot both
    /// take the last of the float; within the transaction each acceptance
    /// sees the ones before it. A reused replay key fails the whole
    /// transaction with `Duplicate` (a grouped write is then retried one by
    /// one, so only that acceptance fails).
    async fn write(db: &Db, items: &[Accept]) -> Result<Vec<Accepted>, StoreError> {
        // Postgres takes the advisory locks in one order, so two replicas'
        // groups cannot wait on each other.
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&x, &y| {
            let key = |a: &Accept| a.reserve.as_ref().map(|r| float_lock_key(&r.target_chain, &r.target_asset));
            key(&items[x]).cmp(&key(&items[y]))
        });
        let mut moved = vec![false; items.len()];
        let mut events = vec![];
        let mut tx = db.pool.begin().await?;
        for n in order {
            if let Some(version) = accept_in(db.backend, &mut tx, &items[n]).await? {
                moved[n] = true;
                events.push(change(&items[n].id, version, Some(Status::AwaitingPayment), Status::Pending, None));
            }
        }
        if let Some(now) = items.iter().map(|a| a.now_ms).max() {
            record(&mut tx, db.backend, &events, now).await?;
        }
        // Every accepted intent is handed to settlement by one statement.
        let queued: Vec<&Accept> = items.iter().zip(&moved).filter(|(_, m)| **m).map(|(a, _)| a).collect();
        if !queued.is_empty() {
            let rows: Vec<String> = (0..queued.len()).map(|r| format!("(${}, ${}, ${}, 0)", 3 * r + 1, 3 * r + 2, 3 * r + 3)).collect();
            let sql = format!("INSERT INTO settlement_queue (intent_id, enqueued_at, available_at, attempts) VALUES {}", rows.join(", "));
            let mut q = sqlx::query(&sql);
            for a in queued {
                q = q.bind(&a.id).bind(a.now_ms).bind(a.now_ms);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        let mut out = Vec::with_capacity(items.len());
        for (a, moved) in items.iter().zip(moved) {
            out.push(if moved {
                Accepted::Yes
            } else {
                // Not moved: lost to another request, expired, or the float is short.
                let short = a.reserve.is_some()
                    && get(db, &a.id).await?.is_some_and(|i| i.status == Status::AwaitingPayment && i.expires_at > a.now_ms);
                if short {
                    Accepted::FloatShort
                } else {
                    Accepted::No
                }
            });
        }
        Ok(out)
    }
}

/// One acceptance's move inside the group's transaction: the intent's new
/// version if it moved (its queue entry is written with the others').
async fn accept_in(backend: Backend, tx: &mut sqlx::Transaction<'_, sqlx::Any>, a: &Accept) -> Result<Option<i64>, StoreError> {
    // The float check rides on the move itself: the promised total is summed
    // inside the statement (`receiving_micros`), so on SQLite, one writer at
    // a time, check and move are one step. Postgres serializes the
    // (chain, asset) first, since concurrent statements see their own snapshots.
    let float = match &a.reserve {
        Some(r) => {
            if backend == Backend::Postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(float_lock_key(&r.target_chain, &r.target_asset))
                    .execute(&mut **tx)
                    .await?;
            }
            // Receiving amounts have at most 6 decimals (`fees::PRECISION`).
            let amount = micros(r.amount).ok_or_else(|| StoreError::Decode(format!("receiving amount {} beyond millionths", r.amount)))?;
            let balance = floor_micros(r.balance).ok_or_else(|| StoreError::Decode(format!("float balance {} out of range", r.balance)))?;
            Some((r, balance - amount))
        }
        None => None,
    };
    // A row of a replica that predates `receiving_micros` counts by its text.
    let covered = match float {
        Some(_) => format!(
            " AND (SELECT COALESCE(SUM(COALESCE(receiving_micros, {MICROS_OF_TEXT})), 0) FROM intents \
             WHERE target_chain = $9 AND target_asset = $10 AND status IN ($11, $12, $13)) <= $14"
        ),
        None => String::new(),
    };
    let sql = format!(
        "UPDATE intents SET status = $1, settle_proof = $2, replay_key = $3, payer = $4, updated_at = $5, \
         error_code = NULL, error_message = NULL, version = version + 1 WHERE id = $6 AND status = $7 AND expires_at > $8{covered} \
         RETURNING version"
    );
    let mut q = sqlx::query(&sql)
        .bind(Status::Pending.as_str())
        .bind(a.settle_proof.as_deref())
        .bind(a.replay_key.as_deref())
        .bind(a.payer.as_deref())
        .bind(a.now_ms)
        .bind(&a.id)
        .bind(Status::AwaitingPayment.as_str())
        .bind(a.now_ms);
    if let Some((r, room)) = float {
        q = q.bind(&r.target_chain).bind(&r.target_asset);
        for s in PROMISED {
            q = q.bind(s.as_str());
        }
        q = q.bind(room);
    }
    Ok(q.fetch_optional(&mut **tx).await?.map(|r| r.try_get("version")).transpose()?)
}

/// `receiving_amount` in millionths, in SQL: what migration 0012 filled
/// older rows with (exact: at most 6 decimals, at most 10^12 millionths).
const MICROS_OF_TEXT: &str = "CAST(ROUND(CAST(receiving_amount AS NUMERIC) * 1000000) AS BIGINT)";

/// A decimal amount in millionths, when it has at most 6 decimals.
fn micros(amount: Decimal) -> Option<i64> {
    let m = amount * Decimal::from(1_000_000);
    m.fract().is_zero().then(|| m.to_i64()).flatten()
}

/// A balance in whole millionths, rounded down (what it can cover).
fn floor_micros(balance: Decimal) -> Option<i64> {
    (balance * Decimal::from(1_000_000)).floor().to_i64()
}

/// One advisory-lock key per (chain, asset) float.
fn float_lock_key(chain: &str, asset: &str) -> i64 {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("float\n{chain}\n{asset}"));
    i64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// Record AWAITING_PAYMENT intents past their expiry as EXPIRED.
pub async fn expire_due(db: &Db, now_ms: i64) -> Result<u64, StoreError> {
    let mut tx = db.pool.begin().await?;
    let expired = sqlx::query(
        "UPDATE intents SET status = $1, updated_at = $2, version = version + 1 WHERE status = $3 AND expires_at <= $2 RETURNING id, version",
    )
    .bind(Status::Expired.as_str())
    .bind(now_ms)
    .bind(Status::AwaitingPayment.as_str())
    .fetch_all(&mut *tx)
    .await?;
    let mut events = Vec::with_capacity(expired.len());
    for r in &expired {
        events.push(change(&r.try_get::<String, _>("id")?, r.try_get("version")?, Some(Status::AwaitingPayment), Status::Expired, None));
    }
    record(&mut tx, db.backend, &events, now_ms).await?;
    tx.commit().await?;
    Ok(expired.len() as u64)
}
