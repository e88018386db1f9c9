//! New intents, one multi-row `INSERT` for those created together.

use super::*;

/// Bound parameters per inserted row.
pub(super) const INSERT_PARAMS: usize = 32;

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
                .bind(&i.trace)
                .bind(i.receiving_amount.parse().ok().and_then(micros));
        }
        let mut tx = db.begin().await?;
        q.execute(&mut *tx).await?;
        let events: Vec<Change> = items.iter().map(|i| change(&i.id, 0, None, i.status, None)).collect();
        record(&mut tx, db.backend, &events, crate::clock::now_ms()).await?;
        tx.commit().await?;
        Ok(vec![(); items.len()])
    }
}
