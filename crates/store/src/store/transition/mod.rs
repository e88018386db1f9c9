//! Every write of a status: an intent's, a facilitator settlement's, a
//! registered swap's (a row's first status included). Each is a
//! compare-and-set on the status it expects, and each change appends its
//! event (`events`: subject, version, from, to, code, time) in the same
//! database transaction, so whatever must follow every change (webhooks,
//! live streams) reads one record that can neither miss a change nor show
//! one that did not commit. Nothing outside this module writes a status
//! (`tests/layers.rs` reads the source).

pub mod intents;
pub mod settlements;
pub mod sponsored_swaps;
pub mod swaps;

use crate::db::Backend;
use crate::store::StoreError;

/// Whose status changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Intent,
    Settlement,
    Swap,
}

impl Subject {
    pub fn as_str(self) -> &'static str {
        match self {
            Subject::Intent => "intent",
            Subject::Settlement => "x402_settlement",
            Subject::Swap => "swap",
        }
    }
}

/// One change of a status, as `events` records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub subject: Subject,
    pub id: String,
    /// The subject's version after the change (intents count every write;
    /// settlements and swaps are 1 when recorded, 2 when finished).
    pub version: i64,
    /// `None` for a row's first status.
    pub from: Option<String>,
    pub to: String,
    /// The failure code that came with it, if any.
    pub code: Option<String>,
    /// The trace it happened in (`traceparent`): its webhook deliveries
    /// join it. An intent's changes are in the intent's own trace (its
    /// row's), whatever is given here.
    pub trace: Option<String>,
}

/// Parameters per event row.
/// The last two: the subject again (for its intent's trace), then the
/// trace given, in the order they appear (SQLite's are anonymous).
const EVENT_PARAMS: usize = 10;
/// Rows per statement (under SQLite's and Postgres' parameter limits).
const EVENTS_PER_STATEMENT: usize = 100;

/// Append `changes` inside the caller's transaction.
pub(crate) async fn record(tx: &mut crate::db::Tx, backend: Backend, changes: &[Change], now_ms: i64) -> Result<(), StoreError> {
    for chunk in changes.chunks(EVENTS_PER_STATEMENT) {
        let rows: Vec<String> = (0..chunk.len())
            .map(|r| {
                let first = 1 + r * EVENT_PARAMS;
                let columns = crate::store::ordered_params(backend, first, EVENT_PARAMS - 2);
                let subject = crate::store::ordered_params(backend, first + EVENT_PARAMS - 2, 1);
                let trace = crate::store::ordered_params(backend, first + EVENT_PARAMS - 1, 1);
                format!("({columns}, COALESCE((SELECT trace FROM intents WHERE id = {subject}), {trace}))")
            })
            .collect();
        let sql = format!(
            "INSERT INTO events (id, subject_kind, subject_id, version, from_status, to_status, code, created_at, trace) VALUES {}",
            rows.join(", ")
        );
        let mut q = sqlx::query(&sql);
        for c in chunk {
            q = q
                .bind(format!("evt_{}", ulid::Ulid::new()))
                .bind(c.subject.as_str())
                .bind(&c.id)
                .bind(c.version)
                .bind(c.from.as_deref())
                .bind(&c.to)
                .bind(c.code.as_deref())
                .bind(now_ms)
                .bind((c.subject == Subject::Intent).then_some(c.id.as_str()))
                .bind(c.trace.as_deref());
        }
        q.execute(&mut **tx).await?;
    }
    Ok(())
}

/// A subject's events, oldest first: (version, from, to, code).
pub async fn events_of(
    db: &crate::db::Db,
    subject: Subject,
    id: &str,
) -> Result<Vec<(i64, Option<String>, String, Option<String>)>, StoreError> {
    use sqlx::Row;
    sqlx::query(
        "SELECT version, from_status, to_status, code FROM events WHERE subject_kind = $1 AND subject_id = $2 ORDER BY version, created_at",
    )
    .bind(subject.as_str())
    .bind(id)
    .fetch_all(&db.pool)
    .await?
    .iter()
    .map(|r| Ok((r.try_get("version")?, r.try_get("from_status")?, r.try_get("to_status")?, r.try_get("code")?)))
    .collect()
}

/// One recorded change, with its id (`evt_…`), for live streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub id: String,
    pub subject_kind: String,
    pub subject_id: String,
    pub version: i64,
    pub to: String,
    pub created_at: i64,
}

fn recorded(r: &sqlx::any::AnyRow) -> Result<Recorded, StoreError> {
    use sqlx::Row;
    Ok(Recorded {
        id: r.try_get("id")?,
        subject_kind: r.try_get("subject_kind")?,
        subject_id: r.try_get("subject_id")?,
        version: r.try_get("version")?,
        to: r.try_get("to_status")?,
        created_at: r.try_get("created_at")?,
    })
}

/// A subject's recorded changes with their ids, oldest first.
pub async fn recorded_of(db: &crate::db::Db, subject: Subject, id: &str) -> Result<Vec<Recorded>, StoreError> {
    sqlx::query(
        "SELECT id, subject_kind, subject_id, version, to_status, created_at FROM events \
         WHERE subject_kind = $1 AND subject_id = $2 ORDER BY version, created_at",
    )
    .bind(subject.as_str())
    .bind(id)
    .fetch_all(&db.read)
    .await?
    .iter()
    .map(recorded)
    .collect()
}

/// Changes recorded at or after `since` (ms), oldest first, at most `limit`.
pub async fn recorded_since(db: &crate::db::Db, since: i64, limit: i64) -> Result<Vec<Recorded>, StoreError> {
    sqlx::query(
        "SELECT id, subject_kind, subject_id, version, to_status, created_at FROM events WHERE created_at >= $1 \
         ORDER BY created_at, id LIMIT $2",
    )
    .bind(since)
    .bind(limit)
    .fetch_all(&db.read)
    .await?
    .iter()
    .map(recorded)
    .collect()
}

/// Changes of an agent's intents recorded after (`created_at`, `id`),
/// oldest first, at most `limit`.
pub async fn recorded_for_agent(
    db: &crate::db::Db,
    agent: &str,
    after_at: i64,
    after_id: &str,
    limit: i64,
) -> Result<Vec<Recorded>, StoreError> {
    sqlx::query(
        "SELECT e.id, e.subject_kind, e.subject_id, e.version, e.to_status, e.created_at FROM events e \
         JOIN intents i ON i.id = e.subject_id WHERE e.subject_kind = 'intent' AND i.agent_id = $1 \
         AND (e.created_at > $2 OR (e.created_at = $2 AND e.id > $3)) ORDER BY e.created_at, e.id LIMIT $4",
    )
    .bind(agent)
    .bind(after_at)
    .bind(after_id)
    .bind(limit)
    .fetch_all(&db.read)
    .await?
    .iter()
    .map(recorded)
    .collect()
}

/// One recorded change by its id.
pub async fn recorded_by_id(db: &crate::db::Db, id: &str) -> Result<Option<Recorded>, StoreError> {
    sqlx::query("SELECT id, subject_kind, subject_id, version, to_status, created_at FROM events WHERE id = $1")
        .bind(id)
        .fetch_optional(&db.read)
        .await?
        .as_ref()
        .map(recorded)
        .transpose()
}
