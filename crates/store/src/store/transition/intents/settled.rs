//! A leg settled: the payout started, a leg's transaction final with its
//! credit in the books, a stored payout that landed after all.

use super::*;

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
        let mut tx = db.begin().await?;
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
        let mut tx = db.begin().await?;
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
    let mut tx = db.begin().await?;
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
