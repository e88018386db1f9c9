//! The books: one row per on-chain token movement (`book_movements`), and
//! which payment it is credited to. A credit is a compare-and-set inside
//! the same database transaction as the payment's status change, so one
//! movement never pays for two payments and a payment never holds two.

use sqlx::Row;

use crate::db::Db;
use crate::payment::Movement;
use crate::store::StoreError;

/// What a movement is credited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// An intent's source leg: the payer's money into the collection wallet.
    Source,
    /// An intent's payout: the proxy wallet's money to the merchant.
    Payout,
    /// A facilitator settlement: the payer's money to the resource server.
    X402,
    /// No payment: an operator acknowledged it (`stablerail books acknowledge`).
    Operator,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Source => "source",
            Purpose::Payout => "payout",
            Purpose::X402 => "x402",
            Purpose::Operator => "operator",
        }
    }
}

/// A payment's claim on one of `candidates` (in the order to try them),
/// all on `chain`. `relayer_paid`: the service's relayer sent the
/// transaction, so its fee is the payment's cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credit {
    pub chain: String,
    pub purpose: Purpose,
    pub owner: String,
    pub candidates: Vec<Movement>,
    pub relayer_paid: bool,
}

/// What a credit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credited {
    /// The payment held a movement already (a retried write).
    Held,
    /// The payment holds a movement now, given by this write.
    New,
    /// Every candidate is another payment's, or there was none (the chain
    /// did not prove this payment's movement).
    Refused,
}

impl Credited {
    pub fn holds(self) -> bool {
        self != Credited::Refused
    }
}

/// Inside `tx`: give the payment the first candidate no other payment
/// holds.
pub(crate) async fn credit(tx: &mut crate::db::Tx, c: &Credit, now_ms: i64) -> Result<Credited, StoreError> {
    let held = sqlx::query("SELECT tx_id FROM book_movements WHERE purpose = $1 AND owner_id = $2")
        .bind(c.purpose.as_str())
        .bind(&c.owner)
        .fetch_optional(&mut **tx)
        .await?;
    if held.is_some() {
        return Ok(Credited::Held);
    }
    for m in &c.candidates {
        let fee = if c.relayer_paid { m.fee.as_deref() } else { None };
        let done = sqlx::query(
            "INSERT INTO book_movements (chain, tx_id, log_index, token, from_address, to_address, amount, block, purpose, owner_id, \
             fee, created_at, credited_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12) \
             ON CONFLICT (chain, tx_id, log_index) DO UPDATE SET purpose = $9, owner_id = $10, credited_at = $12, \
             fee = COALESCE(book_movements.fee, $11) WHERE book_movements.owner_id IS NULL",
        )
        .bind(&c.chain)
        .bind(&m.tx)
        .bind(m.index)
        .bind(&m.token)
        .bind(&m.from)
        .bind(&m.to)
        .bind(&m.amount)
        .bind(m.block)
        .bind(c.purpose.as_str())
        .bind(&c.owner)
        .bind(fee)
        .bind(now_ms)
        .execute(&mut **tx)
        .await?;
        if done.rows_affected() == 1 {
            return Ok(Credited::New);
        }
    }
    Ok(Credited::Refused)
}

/// Inside `tx`: take back a credit this transaction gave (its payment did
/// not move after all). The movement stays in the books, credited to
/// nobody: the chain did make it.
pub(crate) async fn uncredit(tx: &mut crate::db::Tx, purpose: Purpose, owner: &str) -> Result<(), StoreError> {
    sqlx::query("UPDATE book_movements SET purpose = NULL, owner_id = NULL, credited_at = NULL WHERE purpose = $1 AND owner_id = $2")
        .bind(purpose.as_str())
        .bind(owner)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Record a movement the reconciler read at a service wallet: new ones are
/// credited to nobody yet; one already in the books is marked seen.
pub async fn observe(db: &Db, chain: &str, m: &Movement, now_ms: i64) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO book_movements (chain, tx_id, log_index, token, from_address, to_address, amount, block, created_at, seen_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) ON CONFLICT (chain, tx_id, log_index) DO UPDATE SET seen_at = $9",
    )
    .bind(chain)
    .bind(&m.tx)
    .bind(m.index)
    .bind(&m.token)
    .bind(&m.from)
    .bind(&m.to)
    .bind(&m.amount)
    .bind(m.block)
    .bind(now_ms)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// An operator's acknowledgement of a movement no payment claims: it is
/// credited to the operator with `note`, so no payment can take it later.
/// Only a movement the reconciler read on chain before `seen_before_ms`
/// (a payment's credit may still be on its way for a younger one). False
/// when there is no such unclaimed movement.
pub async fn acknowledge(
    db: &Db,
    chain: &str,
    tx_id: &str,
    index: i64,
    note: &str,
    seen_before_ms: i64,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let owner = format!("ack:{chain}:{tx_id}:{index}");
    let done = sqlx::query(
        "UPDATE book_movements SET purpose = $4, owner_id = $5, note = $6, credited_at = $7 \
         WHERE chain = $1 AND tx_id = $2 AND log_index = $3 AND owner_id IS NULL AND seen_at IS NOT NULL AND seen_at < $8",
    )
    .bind(chain)
    .bind(tx_id)
    .bind(index)
    .bind(Purpose::Operator.as_str())
    .bind(owner)
    .bind(note)
    .bind(now_ms)
    .bind(seen_before_ms)
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A row of the books.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    pub chain: String,
    pub tx_id: String,
    pub log_index: i64,
    pub token: String,
    pub from: String,
    pub to: String,
    pub amount: String,
    pub block: i64,
    pub purpose: Option<String>,
    pub owner_id: Option<String>,
    pub fee: Option<String>,
}

const ENTRY: &str = "chain, tx_id, log_index, token, from_address, to_address, amount, block, purpose, owner_id, fee";

fn entry(r: &sqlx::any::AnyRow) -> Result<Entry, StoreError> {
    Ok(Entry {
        chain: r.try_get("chain")?,
        tx_id: r.try_get("tx_id")?,
        log_index: r.try_get("log_index")?,
        token: r.try_get("token")?,
        from: r.try_get("from_address")?,
        to: r.try_get("to_address")?,
        amount: r.try_get("amount")?,
        block: r.try_get("block")?,
        purpose: r.try_get("purpose")?,
        owner_id: r.try_get("owner_id")?,
        fee: r.try_get("fee")?,
    })
}

/// The movement credited to a payment, if any.
pub async fn of(db: &Db, purpose: Purpose, owner: &str) -> Result<Option<Entry>, StoreError> {
    let q = format!("SELECT {ENTRY} FROM book_movements WHERE purpose = $1 AND owner_id = $2");
    sqlx::query(&q).bind(purpose.as_str()).bind(owner).fetch_optional(&db.read).await?.as_ref().map(entry).transpose()
}

/// Movements into `wallets` that no payment claims, oldest first.
pub async fn unmatched(db: &Db, limit: i64) -> Result<Vec<Entry>, StoreError> {
    let q = format!("SELECT {ENTRY} FROM book_movements WHERE owner_id IS NULL ORDER BY chain, block, tx_id, log_index LIMIT $1");
    sqlx::query(&q).bind(limit).fetch_all(&db.read).await?.iter().map(entry).collect()
}

/// Every movement of `token` on `chain` into or out of `wallet` from block
/// `after` on (exclusive).
pub async fn of_wallet(db: &Db, chain: &str, wallet: &str, token: &str, after: i64) -> Result<Vec<Entry>, StoreError> {
    let q = format!(
        "SELECT {ENTRY} FROM book_movements WHERE chain = $1 AND token = $3 AND block > $4 \
         AND (to_address = $2 OR from_address = $2) ORDER BY block, tx_id, log_index"
    );
    sqlx::query(&q).bind(chain).bind(wallet).bind(token).bind(after).fetch_all(&db.read).await?.iter().map(entry).collect()
}

/// The reconciler's place for one (chain, wallet, token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub opening: String,
    pub opened_block: i64,
    pub read_block: i64,
    /// The balance on chain at `read_block`, as read (None: not read yet).
    pub held: Option<String>,
}

fn cursor_of(r: &sqlx::any::AnyRow) -> Result<Cursor, StoreError> {
    Ok(Cursor {
        opening: r.try_get("opening")?,
        opened_block: r.try_get("opened_block")?,
        read_block: r.try_get("read_block")?,
        held: r.try_get("held")?,
    })
}

pub async fn cursor(db: &Db, chain: &str, wallet: &str, token: &str) -> Result<Option<Cursor>, StoreError> {
    let row =
        sqlx::query("SELECT opening, opened_block, read_block, held FROM book_cursors WHERE chain = $1 AND wallet = $2 AND token = $3")
            .bind(chain)
            .bind(wallet)
            .bind(token)
            .fetch_optional(&db.pool)
            .await?;
    row.as_ref().map(cursor_of).transpose()
}

/// Open a wallet's books at `block` with the balance it held then; an
/// open one stays as it is.
pub async fn open(db: &Db, chain: &str, wallet: &str, token: &str, opening: &str, block: i64, now_ms: i64) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO book_cursors (chain, wallet, token, opening, opened_block, read_block, held, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $5, $4, $6) ON CONFLICT (chain, wallet, token) DO NOTHING",
    )
    .bind(chain)
    .bind(wallet)
    .bind(token)
    .bind(opening)
    .bind(block)
    .bind(now_ms)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// The reconciler read every movement up to `to`, where the chain's
/// balance is `held` (None: it could not be read there): compare-and-set
/// on where it was, so two replicas do not both move it.
#[allow(clippy::too_many_arguments)]
pub async fn advance(
    db: &Db,
    chain: &str,
    wallet: &str,
    token: &str,
    from: i64,
    to: i64,
    held: Option<&str>,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE book_cursors SET read_block = $1, updated_at = $2, held = $7, stalled_since = NULL \
         WHERE chain = $3 AND wallet = $4 AND token = $5 AND read_block = $6",
    )
    .bind(to)
    .bind(now_ms)
    .bind(chain)
    .bind(wallet)
    .bind(token)
    .bind(from)
    .bind(held)
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The movements read did not add up to the chain's balance: the cursor
/// stays where it was, marked stalled since the first such pass.
pub async fn stall(db: &Db, chain: &str, wallet: &str, token: &str, now_ms: i64) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE book_cursors SET stalled_since = COALESCE(stalled_since, $1), updated_at = $1 \
         WHERE chain = $2 AND wallet = $3 AND token = $4",
    )
    .bind(now_ms)
    .bind(chain)
    .bind(wallet)
    .bind(token)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// What the books cannot explain, for the alarms.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Alarms {
    /// Money out of a service wallet that no payment claims (older than
    /// the grace a credit takes to be written).
    pub unexplained_outgoing: i64,
    /// Money into a service wallet that no payment claims.
    pub unmatched_incoming: i64,
    /// Credits at a service wallet, inside the range the reconciler read,
    /// that it did not find on chain.
    pub unseen_credits: i64,
    /// Wallets whose chain balance has not been what the movements read
    /// add up to (since before `before_ms`): the reconciler holds them back.
    pub stalled_wallets: i64,
}

/// Count what the books cannot explain at the wallets the reconciler
/// reads (`book_cursors`). `before_ms`: only rows recorded before then.
pub async fn alarms(db: &Db, before_ms: i64) -> Result<Alarms, StoreError> {
    let count = |sql: &'static str| async move {
        let row = sqlx::query(sql).bind(before_ms).fetch_one(&db.read).await?;
        Ok::<i64, StoreError>(row.try_get("n")?)
    };
    Ok(Alarms {
        unexplained_outgoing: count(
            "SELECT COUNT(*) AS n FROM book_movements m JOIN book_cursors c ON c.chain = m.chain AND c.token = m.token \
             AND c.wallet = m.from_address WHERE m.owner_id IS NULL AND m.created_at < $1",
        )
        .await?,
        unmatched_incoming: count(
            "SELECT COUNT(*) AS n FROM book_movements m JOIN book_cursors c ON c.chain = m.chain AND c.token = m.token \
             AND c.wallet = m.to_address WHERE m.owner_id IS NULL AND m.created_at < $1",
        )
        .await?,
        unseen_credits: count(
            "SELECT COUNT(*) AS n FROM book_movements m JOIN book_cursors c ON c.chain = m.chain AND c.token = m.token \
             AND (c.wallet = m.to_address OR c.wallet = m.from_address) WHERE m.owner_id IS NOT NULL AND m.seen_at IS NULL \
             AND m.block > c.opened_block AND m.block <= c.read_block AND m.created_at < $1",
        )
        .await?,
        stalled_wallets: count("SELECT COUNT(*) AS n FROM book_cursors WHERE stalled_since IS NOT NULL AND stalled_since < $1").await?,
    })
}

/// Every wallet the reconciler reads.
pub async fn cursors(db: &Db) -> Result<Vec<(String, String, String, Cursor)>, StoreError> {
    sqlx::query("SELECT chain, wallet, token, opening, opened_block, read_block, held FROM book_cursors ORDER BY chain, wallet, token")
        .fetch_all(&db.read)
        .await?
        .iter()
        .map(|r| Ok((r.try_get("chain")?, r.try_get("wallet")?, r.try_get("token")?, cursor_of(r)?)))
        .collect()
}
