//! A facilitator settlement's status: recorded (queued, or refused at
//! once) and finished, each a compare-and-set.

use sqlx::Row;

use super::{record, Change, Subject};
use crate::db::Db;
use crate::store::facilitator::{Outcome, Settlement, COLUMNS};
use crate::store::StoreError;

fn change(id: &str, version: i64, from: Option<&str>, to: &str, code: Option<&str>) -> Change {
    Change {
        subject: Subject::Settlement,
        id: id.into(),
        version,
        from: from.map(Into::into),
        to: to.into(),
        code: code.map(Into::into),
        trace: crate::traces::current(),
    }
}

/// Record a new settlement, queued and due now; with `lease` (holder,
/// until), already leased to that holder, as a claim would. `Duplicate`
/// when its authorization (or the payer's payment id) is already recorded.
pub async fn insert(db: &Db, s: &Settlement, lease: Option<(&str, i64)>) -> Result<(), StoreError> {
    let mut tx = db.begin().await?;
    sqlx::query(&format!(
        "INSERT INTO x402_settlements ({COLUMNS}, available_at, locked_by, locked_until) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $18, $20, $21)"
    ))
    .bind(&s.id)
    .bind(&s.replay_key)
    .bind(&s.payload_hash)
    .bind(&s.payment_id)
    .bind(&s.client)
    .bind(&s.chain)
    .bind(&s.asset)
    .bind(&s.network)
    .bind(&s.scheme)
    .bind(&s.payer)
    .bind(&s.pay_to)
    .bind(&s.amount)
    .bind(&s.requirements)
    .bind(&s.payload)
    .bind(s.status.as_str())
    .bind(&s.error_reason)
    .bind(&s.tx_hash)
    .bind(s.created_at)
    .bind(s.updated_at)
    .bind(lease.map(|l| l.0))
    .bind(lease.map(|l| l.1))
    .execute(&mut *tx)
    .await?;
    let event = change(&s.id, 1, None, s.status.as_str(), s.error_reason.as_deref());
    record(&mut tx, db.backend, &[event], s.created_at).await?;
    tx.commit().await?;
    Ok(())
}

/// Sets a settlement's final columns; `$1`…`$5` are the outcome and time.
const FINISHED: &str = "status = $1, tx_hash = $2, error_reason = $3, updated_at = $4, locked_by = NULL, locked_until = NULL, \
     replay_key = CASE WHEN $5 = 1 THEN id ELSE replay_key END, payment_id = CASE WHEN $5 = 1 THEN NULL ELSE payment_id END";

/// A settlement's end: compare-and-set `queued` → a final status. A
/// settled one is credited its movement in the books (`credit`) in the same
/// database transaction; one whose movement is another payment's ends
/// failed instead (`invalid_transaction_state`). Answered per item: `None`
/// if it was not queued, `Some(true)` when written as asked, `Some(false)`
/// when its credit was refused. Written through a `Group`: settlements
/// ending together (the settlements of one Multicall3 batch end when its
/// receipt lands) take one statement per outcome instead of one each.
#[derive(Debug, Clone)]
pub struct Finish {
    pub id: String,
    pub outcome: Outcome,
    /// The movement claim of a settled outcome.
    pub credit: Option<crate::store::books::Credit>,
}

/// The outcome of a settlement whose movement the books refused.
fn not_credited() -> Outcome {
    Outcome {
        status: crate::store::facilitator::SettlementStatus::Failed,
        tx_hash: None,
        error_reason: Some("invalid_transaction_state".into()),
        refused: false,
    }
}

impl crate::store::group::Write for Finish {
    type Item = Finish;
    type Out = Option<bool>;

    async fn write(db: &Db, items: &[Finish]) -> Result<Vec<Option<bool>>, StoreError> {
        let now_ms = crate::clock::now_ms();
        let mut tx = db.begin().await?;
        let (mut refused, mut fresh) = (std::collections::HashSet::new(), vec![]);
        let mut outcomes = Vec::with_capacity(items.len());
        for f in items {
            let credited = match &f.credit {
                Some(c) => match crate::store::books::credit(&mut tx, c, now_ms).await? {
                    crate::store::books::Credited::New => {
                        fresh.push(f);
                        true
                    }
                    other => other.holds(),
                },
                None => true,
            };
            if !credited {
                refused.insert(f.id.as_str());
            }
            outcomes.push(if credited { f.outcome.clone() } else { not_credited() });
        }
        let mut by_outcome: Vec<(&Outcome, Vec<&str>)> = vec![];
        for (f, outcome) in items.iter().zip(&outcomes) {
            match by_outcome.iter_mut().find(|(o, _)| *o == outcome) {
                Some((_, ids)) => ids.push(&f.id),
                None => by_outcome.push((outcome, vec![&f.id])),
            }
        }
        let mut moved = std::collections::HashSet::new();
        let mut events = vec![];
        for (o, ids) in by_outcome {
            let sql = format!(
                "UPDATE x402_settlements SET {FINISHED} WHERE status = 'queued' AND id IN ({}) RETURNING id",
                crate::store::numbered_params(6, ids.len())
            );
            let mut q =
                sqlx::query(&sql).bind(o.status.as_str()).bind(&o.tx_hash).bind(&o.error_reason).bind(now_ms).bind(i32::from(o.refused));
            for id in ids {
                q = q.bind(id);
            }
            for r in q.fetch_all(&mut *tx).await? {
                let id = r.try_get::<String, _>("id")?;
                events.push(change(&id, 2, Some("queued"), o.status.as_str(), o.error_reason.as_deref()));
                moved.insert(id);
            }
        }
        // A credit given here to a settlement that was not queued any more
        // is taken back with it.
        for f in fresh {
            if !moved.contains(&f.id) {
                crate::store::books::uncredit(&mut tx, crate::store::books::Purpose::X402, &f.id).await?;
            }
        }
        record(&mut tx, db.backend, &events, now_ms).await?;
        tx.commit().await?;
        Ok(items.iter().map(|f| moved.contains(&f.id).then(|| !refused.contains(f.id.as_str()))).collect())
    }
}
