//! Webhook endpoints and their deliveries: the fan-out of `events` (one
//! compare-and-set per event, so one replica fans each out), leases on due
//! deliveries (the settlement queue's), and their outcomes.

use sqlx::Row;

use super::settlement::{lease, Leased};
use super::StoreError;
use crate::db::Db;

/// Whose endpoints.
#[derive(Debug, Clone)]
pub struct Owner {
    pub kind: &'static str,
    pub id: String,
}

impl Owner {
    pub fn agent(id: &str) -> Owner {
        Owner { kind: "agent", id: id.to_string() }
    }

    /// An account's endpoints receive the events of all its agents.
    pub fn account(id: &str) -> Owner {
        Owner { kind: "account", id: id.to_string() }
    }

    /// A facilitator key's endpoints receive its settlements' events.
    pub fn facilitator_key(name: &str) -> Owner {
        Owner { kind: "facilitator_key", id: name.to_string() }
    }
}

/// Endpoints an owner may have.
pub const MAX_ENDPOINTS_PER_OWNER: i64 = 10;

#[derive(Debug, Clone)]
pub struct Endpoint {
    pub id: String,
    pub owner_kind: String,
    pub owner_id: String,
    pub url: String,
    /// Event types, or `["*"]`.
    pub events: Vec<String>,
    /// Sealed secrets (the store never sees them in the clear).
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_until: Option<i64>,
    pub status: String,
    pub disabled_reason: Option<String>,
    pub created_at: i64,
}

const ENDPOINT_COLUMNS: &str =
    "id, owner_kind, owner_id, url, events, secret, previous_secret, previous_until, status, disabled_reason, created_at";

fn endpoint(r: &sqlx::any::AnyRow) -> Result<Endpoint, StoreError> {
    let events: String = r.try_get("events")?;
    Ok(Endpoint {
        id: r.try_get("id")?,
        owner_kind: r.try_get("owner_kind")?,
        owner_id: r.try_get("owner_id")?,
        url: r.try_get("url")?,
        events: serde_json::from_str(&events).map_err(|e| StoreError::Decode(format!("webhook events: {e}")))?,
        secret: r.try_get("secret")?,
        previous_secret: r.try_get("previous_secret")?,
        previous_until: r.try_get("previous_until")?,
        status: r.try_get("status")?,
        disabled_reason: r.try_get("disabled_reason")?,
        created_at: r.try_get("created_at")?,
    })
}

/// Add an endpoint; `false` when the owner has as many as it may.
pub async fn add_endpoint(db: &Db, e: &Endpoint) -> Result<bool, StoreError> {
    let mut tx = db.begin().await?;
    let n: i64 = sqlx::query("SELECT COUNT(*) AS n FROM webhook_endpoints WHERE owner_kind = $1 AND owner_id = $2")
        .bind(&e.owner_kind)
        .bind(&e.owner_id)
        .fetch_one(&mut *tx)
        .await?
        .try_get("n")?;
    if n >= MAX_ENDPOINTS_PER_OWNER {
        tx.rollback().await?;
        return Ok(false);
    }
    sqlx::query(&format!("INSERT INTO webhook_endpoints ({ENDPOINT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"))
        .bind(&e.id)
        .bind(&e.owner_kind)
        .bind(&e.owner_id)
        .bind(&e.url)
        .bind(serde_json::to_string(&e.events).expect("strings serialize"))
        .bind(&e.secret)
        .bind(&e.previous_secret)
        .bind(e.previous_until)
        .bind(&e.status)
        .bind(&e.disabled_reason)
        .bind(e.created_at)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(true)
}

/// An owner's endpoints, oldest first.
pub async fn endpoints_of(db: &Db, owner_kind: &str, owner_id: &str) -> Result<Vec<Endpoint>, StoreError> {
    sqlx::query(&format!(
        "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE owner_kind = $1 AND owner_id = $2 ORDER BY created_at, id"
    ))
    .bind(owner_kind)
    .bind(owner_id)
    .fetch_all(&db.pool)
    .await?
    .iter()
    .map(endpoint)
    .collect()
}

/// One endpoint, by id and owner (another owner's is `None`).
pub async fn endpoint_of(db: &Db, owner_kind: &str, owner_id: &str, id: &str) -> Result<Option<Endpoint>, StoreError> {
    sqlx::query(&format!("SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND owner_kind = $2 AND owner_id = $3"))
        .bind(id)
        .bind(owner_kind)
        .bind(owner_id)
        .fetch_optional(&db.pool)
        .await?
        .as_ref()
        .map(endpoint)
        .transpose()
}

pub async fn endpoint_by_id(db: &Db, id: &str) -> Result<Option<Endpoint>, StoreError> {
    sqlx::query(&format!("SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1"))
        .bind(id)
        .fetch_optional(&db.pool)
        .await?
        .as_ref()
        .map(endpoint)
        .transpose()
}

/// Remove an endpoint and its deliveries; `false` if the owner has no such endpoint.
pub async fn remove_endpoint(db: &Db, owner_kind: &str, owner_id: &str, id: &str) -> Result<bool, StoreError> {
    let mut tx = db.begin().await?;
    sqlx::query("DELETE FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE id = $1 AND owner_kind = $2 AND owner_id = $3)")
        .bind(id)
        .bind(owner_kind)
        .bind(owner_id)
        .execute(&mut *tx)
        .await?;
    let gone = sqlx::query("DELETE FROM webhook_endpoints WHERE id = $1 AND owner_kind = $2 AND owner_id = $3")
        .bind(id)
        .bind(owner_kind)
        .bind(owner_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(gone == 1)
}

/// A new secret; the current one keeps signing until `previous_until`.
pub async fn rotate_secret(db: &Db, id: &str, sealed: &str, previous_until: i64) -> Result<bool, StoreError> {
    let n = sqlx::query("UPDATE webhook_endpoints SET previous_secret = secret, previous_until = $1, secret = $2 WHERE id = $3")
        .bind(previous_until)
        .bind(sealed)
        .bind(id)
        .execute(&db.pool)
        .await?
        .rows_affected();
    Ok(n == 1)
}

/// An event not yet fanned out: what its deliveries need.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub id: String,
    pub subject_kind: String,
    pub subject_id: String,
    pub version: i64,
    pub to_status: String,
    pub created_at: i64,
    /// The trace the change happened in.
    pub trace: Option<String>,
}

/// Events no replica has fanned out, oldest first.
pub async fn unfanned(db: &Db, limit: i64) -> Result<Vec<NewEvent>, StoreError> {
    sqlx::query(
        "SELECT id, subject_kind, subject_id, version, to_status, created_at, trace FROM events WHERE fanned_out = 0 \
         ORDER BY created_at, id LIMIT $1",
    )
    .bind(limit)
    .fetch_all(&db.read)
    .await?
    .iter()
    .map(|r| {
        Ok(NewEvent {
            id: r.try_get("id")?,
            subject_kind: r.try_get("subject_kind")?,
            subject_id: r.try_get("subject_id")?,
            version: r.try_get("version")?,
            to_status: r.try_get("to_status")?,
            created_at: r.try_get("created_at")?,
            trace: r.try_get("trace")?,
        })
    })
    .collect()
}

/// Are there endpoints to deliver to at all?
pub async fn any_enabled(db: &Db) -> Result<bool, StoreError> {
    Ok(sqlx::query("SELECT 1 AS one FROM webhook_endpoints WHERE status = 'enabled' LIMIT 1").fetch_optional(&db.read).await?.is_some())
}

/// A delivery to make: to which endpoint, and the body it sends.
pub struct NewDelivery {
    pub endpoint_id: String,
    pub body: String,
}

/// Fan out a pass's events in one transaction (on SQLite each commit is a
/// sync to disk): each event is marked by a compare-and-set on
/// `fanned_out`, and its deliveries are inserted only if this call won it
/// (another replica may have). Events with no delivery are marked in one
/// statement. How many events this call fanned out.
pub async fn fan_out(db: &Db, events: &[(NewEvent, Vec<NewDelivery>)], now: i64, max_pending: i64) -> Result<usize, StoreError> {
    let mut tx = db.begin().await?;
    let silent: Vec<&str> = events.iter().filter(|(_, d)| d.is_empty()).map(|(e, _)| e.id.as_str()).collect();
    let mut won = 0usize;
    if !silent.is_empty() {
        let sql = format!(
            "UPDATE events SET fanned_out = 1 WHERE id IN ({}) AND fanned_out = 0",
            crate::store::ordered_params(db.backend, 1, silent.len())
        );
        let mut q = sqlx::query(&sql);
        for id in &silent {
            q = q.bind(*id);
        }
        won += q.execute(&mut *tx).await?.rows_affected() as usize;
    }
    // Deliveries pending per endpoint: past `max_pending` the endpoint is
    // disabled with its reason, and gets no more (it cannot keep up, or
    // never answers: one key's endpoints cannot grow the table for ever).
    let mut pending: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    let endpoints: std::collections::BTreeSet<&str> = events.iter().flat_map(|(_, d)| d.iter().map(|d| d.endpoint_id.as_str())).collect();
    for e in &endpoints {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'")
            .bind(*e)
            .fetch_one(&mut *tx)
            .await?;
        pending.insert(e.to_string(), row.try_get("n")?);
    }
    for (event, deliveries) in events.iter().filter(|(_, d)| !d.is_empty()) {
        let marked = sqlx::query("UPDATE events SET fanned_out = 1 WHERE id = $1 AND fanned_out = 0")
            .bind(&event.id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if marked != 1 {
            continue;
        }
        won += 1;
        for d in deliveries {
            let waiting = pending.entry(d.endpoint_id.clone()).or_default();
            if *waiting >= max_pending {
                // Once per endpoint per pass (it may be over the cap already:
                // a redelivery, a lowered cap, two replicas at once).
                if *waiting < i64::MAX {
                    tracing::warn!(endpoint = %d.endpoint_id, max_pending, "webhooks: an endpoint's pending deliveries reached the cap; disabled");
                    sqlx::query(
                        "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'too many deliveries pending' \
                         WHERE id = $1 AND status = 'enabled'",
                    )
                    .bind(&d.endpoint_id)
                    .execute(&mut *tx)
                    .await?;
                    *waiting = i64::MAX;
                }
                continue;
            }
            *waiting += 1;
            sqlx::query(
                "INSERT INTO webhook_deliveries (id, endpoint_id, event_id, subject_id, version, body, status, attempts, available_at, created_at, trace) \
                 VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $7, $8)",
            )
            .bind(format!("del_{}", ulid::Ulid::new()))
            .bind(&d.endpoint_id)
            .bind(&event.id)
            .bind(format!("{}:{}", event.subject_kind, event.subject_id))
            .bind(event.version)
            .bind(&d.body)
            .bind(now)
            .bind(event.trace.as_deref())
            .execute(&mut *tx)
            .await?;
        }
    }
    tx.commit().await?;
    Ok(won)
}

/// Lease due deliveries: pending, their endpoint enabled, no earlier
/// delivery of the same subject to the same endpoint still pending, and no
/// earlier change of the subject not yet fanned out (order per subject,
/// also when another replica is fanning that earlier change out).
pub async fn claim(db: &Db, holder: &str, now: i64, lease_ms: i64, max: usize) -> Result<Vec<String>, StoreError> {
    lease(
        db,
        Leased {
            table: "webhook_deliveries",
            key: "id",
            due: "status = 'pending' \
                  AND endpoint_id IN (SELECT id FROM webhook_endpoints WHERE status = 'enabled' \
                      AND (paused_until IS NULL OR paused_until <= $3)) \
                  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries f WHERE f.endpoint_id = webhook_deliveries.endpoint_id \
                      AND f.status = 'pending' AND f.locked_until >= $3) \
                  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint_id = webhook_deliveries.endpoint_id \
                      AND e.subject_id = webhook_deliveries.subject_id AND e.version < webhook_deliveries.version AND e.status = 'pending') \
                  AND NOT EXISTS (SELECT 1 FROM events ev WHERE ev.fanned_out = 0 \
                      AND ev.subject_kind || ':' || ev.subject_id = webhook_deliveries.subject_id AND ev.version < webhook_deliveries.version)",
            order: "available_at, created_at",
        },
        holder,
        now,
        lease_ms,
        max,
    )
    .await
}

/// Let go of leased deliveries unattempted (a lane already has one in
/// flight): due again at once, their attempts unchanged.
pub async fn release(db: &Db, holder: &str, ids: &[String]) -> Result<(), StoreError> {
    if ids.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "UPDATE webhook_deliveries SET locked_by = NULL, locked_until = NULL WHERE locked_by = $1 AND id IN ({})",
        crate::store::numbered_params(2, ids.len())
    );
    let mut q = sqlx::query(&sql).bind(holder);
    for id in ids {
        q = q.bind(id);
    }
    q.execute(&db.pool).await?;
    Ok(())
}

/// Failed attempts in a row after which an endpoint's breaker opens.
pub const BREAKER_AFTER: i64 = 5;

/// How long an open breaker holds an endpoint after `failures` failed
/// attempts in a row: 5 s doubling from `BREAKER_AFTER`, at most a minute
/// (then one attempt probes it again).
pub fn breaker_pause_ms(failures: i64) -> Option<i64> {
    (failures >= BREAKER_AFTER).then(|| (5_000i64 << (failures - BREAKER_AFTER).clamp(0, 10)).min(60_000))
}

#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: String,
    pub endpoint_id: String,
    pub event_id: String,
    pub body: String,
    pub attempts: i64,
    pub status: String,
    pub last_code: Option<i64>,
    pub last_error: Option<String>,
    pub last_attempt_at: Option<i64>,
    pub delivered_at: Option<i64>,
    pub created_at: i64,
    /// The trace of the change it announces: each attempt joins it.
    pub trace: Option<String>,
}

const DELIVERY_COLUMNS: &str =
    "id, endpoint_id, event_id, body, attempts, status, last_code, last_error, last_attempt_at, delivered_at, created_at, trace";

fn delivery(r: &sqlx::any::AnyRow) -> Result<Delivery, StoreError> {
    Ok(Delivery {
        id: r.try_get("id")?,
        endpoint_id: r.try_get("endpoint_id")?,
        event_id: r.try_get("event_id")?,
        body: r.try_get("body")?,
        attempts: r.try_get("attempts")?,
        status: r.try_get("status")?,
        last_code: r.try_get("last_code")?,
        last_error: r.try_get("last_error")?,
        last_attempt_at: r.try_get("last_attempt_at")?,
        delivered_at: r.try_get("delivered_at")?,
        created_at: r.try_get("created_at")?,
        trace: r.try_get("trace")?,
    })
}

pub async fn delivery_by_id(db: &Db, id: &str) -> Result<Option<Delivery>, StoreError> {
    sqlx::query(&format!("SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = $1"))
        .bind(id)
        .fetch_optional(&db.pool)
        .await?
        .as_ref()
        .map(delivery)
        .transpose()
}

/// An endpoint's deliveries, newest first.
pub async fn deliveries_of(db: &Db, endpoint_id: &str, limit: i64) -> Result<Vec<Delivery>, StoreError> {
    sqlx::query(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
    ))
    .bind(endpoint_id)
    .bind(limit)
    .fetch_all(&db.pool)
    .await?
    .iter()
    .map(delivery)
    .collect()
}

/// What one attempt came to.
#[derive(Debug, Clone)]
pub enum Attempt {
    Delivered {
        code: i64,
    },
    /// Try again at `retry_at`.
    Retry {
        code: Option<i64>,
        error: String,
        retry_at: i64,
    },
    /// Given up: the delivery fails and its endpoint is disabled.
    GiveUp {
        code: Option<i64>,
        error: String,
    },
}

/// Record the attempts of one leased batch, `(delivery id, outcome)`, in
/// one transaction (on SQLite each commit is a sync to disk), each only by
/// the lease's holder (a lost lease records nothing). How many were recorded.
pub async fn finish(db: &Db, holder: &str, now: i64, attempts: &[(String, Attempt)]) -> Result<usize, StoreError> {
    if attempts.is_empty() {
        return Ok(0);
    }
    let mut tx = db.begin().await?;
    let mut recorded = 0;
    for (id, outcome) in attempts {
        let (status, code, error, available, delivered) = match outcome {
            Attempt::Delivered { code } => ("delivered", Some(*code), None, now, Some(now)),
            Attempt::Retry { code, error, retry_at } => ("pending", *code, Some(error.as_str()), *retry_at, None),
            Attempt::GiveUp { code, error } => ("failed", *code, Some(error.as_str()), now, None),
        };
        let n = sqlx::query(
            "UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, last_code = $2, last_error = $3, available_at = $4, \
             delivered_at = $5, last_attempt_at = $6, locked_by = NULL, locked_until = NULL \
             WHERE id = $7 AND locked_by = $8 AND status = 'pending'",
        )
        .bind(status)
        .bind(code)
        .bind(error)
        .bind(available)
        .bind(delivered)
        .bind(now)
        .bind(id)
        .bind(holder)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n == 1 {
            recorded += 1;
            // The endpoint's breaker: reset by a delivery, counted by a
            // failure, open (no lease until `paused_until`) past a few.
            let endpoint = "(SELECT endpoint_id FROM webhook_deliveries WHERE id = $1)";
            if let Attempt::Delivered { .. } = outcome {
                sqlx::query(&format!(
                    "UPDATE webhook_endpoints SET failures = 0, paused_until = NULL WHERE id = {endpoint} AND failures > 0"
                ))
                .bind(id)
                .execute(&mut *tx)
                .await?;
            } else {
                let row =
                    sqlx::query(&format!("UPDATE webhook_endpoints SET failures = failures + 1 WHERE id = {endpoint} RETURNING failures"))
                        .bind(id)
                        .fetch_optional(&mut *tx)
                        .await?;
                let failures: i64 = row.map(|r| r.try_get("failures")).transpose()?.unwrap_or(0);
                if let Some(pause) = breaker_pause_ms(failures) {
                    sqlx::query(&format!("UPDATE webhook_endpoints SET paused_until = $2 WHERE id = {endpoint}"))
                        .bind(id)
                        .bind(now + pause)
                        .execute(&mut *tx)
                        .await?;
                }
            }
            if let Attempt::GiveUp { .. } = outcome {
                sqlx::query(
                    "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'deliveries failed for 3 days' \
                     WHERE id = (SELECT endpoint_id FROM webhook_deliveries WHERE id = $1) AND status = 'enabled'",
                )
                .bind(id)
                .execute(&mut *tx)
                .await?;
            }
        }
    }
    tx.commit().await?;
    Ok(recorded)
}

/// Send an event again: its delivery to this endpoint goes back to pending.
pub async fn redeliver(db: &Db, endpoint_id: &str, event_id: &str, now: i64) -> Result<bool, StoreError> {
    let n = sqlx::query(
        "UPDATE webhook_deliveries SET status = 'pending', available_at = $1 WHERE endpoint_id = $2 AND event_id = $3 AND status <> 'pending'",
    )
    .bind(now)
    .bind(endpoint_id)
    .bind(event_id)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Deliveries waiting, for the metrics.
pub async fn pending_count(db: &Db) -> Result<i64, StoreError> {
    Ok(sqlx::query("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'").fetch_one(&db.read).await?.try_get("n")?)
}
