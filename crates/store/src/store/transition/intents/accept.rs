//! A payment accepted: AWAITING_PAYMENT → PENDING, queued for settlement,
//! its payout reserved from the proxy wallet's float.

use super::*;

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
pub(super) const PROMISED: [Status; 3] = [Status::Pending, Status::SourceSettled, Status::TargetSettling];

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
        let mut tx = db.begin().await?;
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
pub(super) async fn accept_in(backend: Backend, tx: &mut crate::db::Tx, a: &Accept) -> Result<Option<i64>, StoreError> {
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
pub(super) const MICROS_OF_TEXT: &str = "CAST(ROUND(CAST(receiving_amount AS NUMERIC) * 1000000) AS BIGINT)";

/// A decimal amount in millionths, when it has at most 6 decimals.
pub(super) fn micros(amount: Decimal) -> Option<i64> {
    let m = amount * Decimal::from(1_000_000);
    m.fract().is_zero().then(|| m.to_i64()).flatten()
}

/// A balance in whole millionths, rounded down (what it can cover).
pub(super) fn floor_micros(balance: Decimal) -> Option<i64> {
    (balance * Decimal::from(1_000_000)).floor().to_i64()
}

/// One advisory-lock key per (chain, asset) float.
pub(super) fn float_lock_key(chain: &str, asset: &str) -> i64 {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("float\n{chain}\n{asset}"));
    i64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}
