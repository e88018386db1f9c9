//! Webhooks: every status change in `events` (written in the change's own
//! transaction) becomes one delivery per subscribed endpoint of its owner,
//! signed as Standard Webhooks and sent at least once, in order per subject,
//! by whichever replica leases it. Delivery runs on its own tasks and reads
//! only `events` and its own tables: it never holds up settlement.

pub mod event;
pub mod guard;
pub mod sign;
mod subject;

use std::sync::Arc;
use std::time::Duration;

use crate::clock::now_ms;
use crate::config::Config;
use crate::db::Db;
use crate::store::webhooks::{self as repo, Attempt, NewDelivery, NewEvent};

/// Events fanned out per pass.
const FAN_OUT_BATCH: i64 = 200;

/// The worker's share of the service.
#[derive(Clone)]
pub struct Deps {
    pub config: Arc<Config>,
    pub db: Db,
    pub sealer: sign::Sealer,
    pub drivers: Arc<crate::family::Drivers>,
}

/// Start this replica's fan-out and deliverers.
pub fn spawn(deps: Deps) {
    if !deps.config.webhooks.enabled {
        return;
    }
    let holder = format!("wh-{}", ulid::Ulid::new());
    tokio::spawn(fan_out_loop(deps.clone()));
    tokio::spawn(deliver_loop(deps, holder));
}

async fn fan_out_loop(d: Deps) {
    let every = Duration::from_millis(d.config.webhooks.poll_ms.max(10));
    let mut gauged = std::time::Instant::now() - Duration::from_secs(60);
    loop {
        match fan_out_pass(&d).await {
            Ok(n) if n as i64 == FAN_OUT_BATCH => continue,
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "webhooks: fan-out pass failed"),
        }
        if gauged.elapsed() >= Duration::from_secs(5) {
            if let Ok(n) = repo::pending_count(&d.db).await {
                crate::telemetry::webhook_pending(n);
            }
            gauged = std::time::Instant::now();
        }
        tokio::time::sleep(every).await;
    }
}

/// Make the deliveries of the events not yet fanned out; how many events
/// were read. The pass's deliveries are written in one transaction; when
/// no endpoint exists at all the subjects are not even read.
pub async fn fan_out_pass(d: &Deps) -> Result<usize, crate::store::StoreError> {
    let events = repo::unfanned(&d.db, FAN_OUT_BATCH).await?;
    if events.is_empty() {
        return Ok(0);
    }
    let now = now_ms();
    let any = repo::any_enabled(&d.db).await?;
    let mut made = Vec::with_capacity(events.len());
    for e in events {
        let deliveries = if any { deliveries_for(d, &e, now).await? } else { vec![] };
        made.push((e, deliveries));
    }
    repo::fan_out(&d.db, &made, now, d.config.webhooks.max_pending_per_endpoint.max(1)).await?;
    Ok(made.len())
}

/// The deliveries one event makes: to each enabled endpoint of the
/// subject's owners that asked for its type.
async fn deliveries_for(d: &Deps, e: &NewEvent, now: i64) -> Result<Vec<NewDelivery>, crate::store::StoreError> {
    let Some(kind) = event::type_of(&e.subject_kind, &e.to_status) else { return Ok(vec![]) };
    let Some(subject) = subject::resolve(d, e, now).await? else { return Ok(vec![]) };
    let mut endpoints = vec![];
    for owner in &subject.owners {
        let theirs = repo::endpoints_of(&d.db, owner.kind, &owner.id).await?;
        endpoints.extend(theirs.into_iter().filter(|p| p.status == "enabled" && event::wanted(&p.events, &kind)));
    }
    if endpoints.is_empty() {
        return Ok(vec![]);
    }
    let body = event::body(&e.id, &kind, e.created_at, e.version, subject.data);
    Ok(endpoints.into_iter().map(|p| NewDelivery { endpoint_id: p.id, body: body.clone() }).collect())
}

/// Each endpoint is its own lane: at most one delivery of it in flight
/// (across replicas: the lease query skips an endpoint with one leased),
/// and its breaker holds it after failures in a row. Attempts run on
/// their own tasks, up to `concurrency` at once; the loop leases more as
/// soon as one ends, so one endpoint that never answers holds one slot for
/// one timeout, not a batch of everyone's deliveries. What the attempts
/// found is written by one task, many at a time (one commit each batch).
async fn deliver_loop(d: Deps, holder: String) {
    let every = Duration::from_millis(d.config.webhooks.poll_ms.max(10));
    let client_timeout = Duration::from_secs(d.config.webhooks.timeout_seconds.max(1));
    let lease_ms = (client_timeout.as_millis() as i64) + 5_000;
    let concurrency = d.config.webhooks.concurrency.max(1);
    let slots = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let wake = Arc::new(tokio::sync::Notify::new());
    let (done_tx, done_rx) = tokio::sync::mpsc::unbounded_channel::<(String, (String, Attempt))>();
    tokio::spawn(record_loop(d.clone(), done_rx, wake.clone()));
    loop {
        let free = slots.available_permits();
        if free == 0 {
            let _ = tokio::time::timeout(every, wake.notified()).await;
            continue;
        }
        // Each lease its own token: a late record of an attempt whose lease
        // lapsed (and was taken again, here or elsewhere) matches nothing.
        let token = format!("{holder}:{}", ulid::Ulid::new());
        let ids = match repo::claim(&d.db, &token, now_ms(), lease_ms, free).await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::warn!(error = %e, "webhooks: claim failed");
                vec![]
            }
        };
        if ids.is_empty() {
            let _ = tokio::time::timeout(every, wake.notified()).await;
            continue;
        }
        // One lease may hold two deliveries of one endpoint (neither was in
        // flight when it was taken): the oldest goes, the others wait.
        let mut lanes = std::collections::HashSet::new();
        let mut extra = vec![];
        for id in ids {
            let delivery = match repo::delivery_by_id(&d.db, &id).await {
                Ok(Some(found)) => found,
                Ok(None) => continue,
                // Unreadable now: the lease lapses into a retry.
                Err(e) => {
                    tracing::warn!(error = %e, "webhooks: a leased delivery could not be read");
                    continue;
                }
            };
            if !lanes.insert(delivery.endpoint_id.clone()) {
                extra.push(id);
                continue;
            }
            let Ok(permit) = slots.clone().try_acquire_owned() else {
                extra.push(id);
                continue;
            };
            let (d, done, token) = (d.clone(), done_tx.clone(), token.clone());
            tokio::spawn(async move {
                if let Some(found) = attempt(&d, delivery, client_timeout).await {
                    let _ = done.send((token, found));
                }
                drop(permit);
            });
        }
        if let Err(e) = repo::release(&d.db, &token, &extra).await {
            tracing::warn!(error = %e, "webhooks: releasing deliveries failed");
        }
    }
}

/// Write what attempts found, as many as have ended at once in one
/// transaction, then wake the deliverer: a lane is free once its attempt
/// is recorded.
async fn record_loop(d: Deps, mut done: tokio::sync::mpsc::UnboundedReceiver<(String, (String, Attempt))>, wake: Arc<tokio::sync::Notify>) {
    while let Some((token, found)) = done.recv().await {
        // Recorded under the lease each attempt was made in.
        let mut by_lease: std::collections::BTreeMap<String, Vec<(String, Attempt)>> = Default::default();
        by_lease.entry(token).or_default().push(found);
        while let Ok((token, found)) = done.try_recv() {
            by_lease.entry(token).or_default().push(found);
        }
        for (token, batch) in by_lease {
            if let Err(e) = repo::finish(&d.db, &token, now_ms(), &batch).await {
                tracing::warn!(error = %e, "webhooks: recording attempts failed");
            }
        }
        wake.notify_one();
    }
}

/// Seconds before attempt `n + 1` (n attempts made): 5 s doubling, at most 6 h.
fn backoff_ms(attempts: i64) -> i64 {
    let n = attempts.clamp(0, 20) as u32;
    (5_000i64.saturating_mul(1i64 << n)).min(6 * 3_600_000)
}

/// One attempt of one leased delivery, and what to record of it.
async fn attempt(d: &Deps, delivery: repo::Delivery, timeout: Duration) -> Option<(String, Attempt)> {
    use tracing::Instrument as _;
    let id = delivery.id.as_str();
    // Each attempt is a span of the trace its change happened in.
    let span = tracing::info_span!("webhook attempt", delivery = id, endpoint = %delivery.endpoint_id, attempt = delivery.attempts + 1);
    crate::traces::set_parent(&span, delivery.trace.as_deref());
    // The whole attempt (the name's lookup included) within the timeout:
    // an endpoint whose DNS never answers holds nothing longer than one
    // that never answers itself.
    let outcome = match tokio::time::timeout(timeout, try_once(d, &delivery, timeout)).instrument(span).await {
        Ok(outcome) => outcome,
        Err(_) => Err("timed out".to_string()),
    };
    let now = now_ms();
    let given_up = now - delivery.created_at > (d.config.webhooks.retry_hours as i64).saturating_mul(3_600_000);
    let (code, error) = match outcome {
        Ok(code) if (200..300).contains(&code) => {
            crate::telemetry::webhook_delivery("delivered", now - delivery.created_at);
            return Some((id.to_string(), Attempt::Delivered { code }));
        }
        Ok(code) => (Some(code), format!("answered {code}")),
        Err(e) => (None, e),
    };
    crate::telemetry::webhook_delivery(if given_up { "given_up" } else { "retry" }, now - delivery.created_at);
    let attempt = if given_up {
        Attempt::GiveUp { code, error }
    } else {
        Attempt::Retry { code, error, retry_at: now + backoff_ms(delivery.attempts) }
    };
    Some((id.to_string(), attempt))
}

/// Send a delivery once: the status code, or why nothing was answered.
async fn try_once(d: &Deps, delivery: &repo::Delivery, timeout: Duration) -> Result<i64, String> {
    // What is recorded (and shown to the owner) is a fixed sentence; the
    // detail goes to the log.
    let internal = |e: &dyn std::fmt::Display| {
        tracing::warn!(error = %e, "webhooks: an attempt could not be made");
        "internal error".to_string()
    };
    let endpoint = repo::endpoint_by_id(&d.db, &delivery.endpoint_id).await.map_err(|e| internal(&e))?.ok_or("endpoint gone")?;
    let cfg = &d.config.webhooks;
    let url = guard::check_url(cfg, &endpoint.url).map_err(|e| e.to_string())?;
    let address = guard::resolve(cfg, &url).await.map_err(|e| e.to_string())?;
    let now = now_ms();
    let timestamp = now / 1000;
    let mut secrets = vec![d.sealer.open(&endpoint.secret).ok_or("secret unreadable")?];
    if let (Some(previous), Some(until)) = (&endpoint.previous_secret, endpoint.previous_until) {
        if until > now {
            secrets.extend(d.sealer.open(previous));
        }
    }
    let signatures: Vec<String> =
        secrets.iter().filter_map(|s| sign::signature(s, &delivery.event_id, timestamp, &delivery.body)).collect();
    // No proxy from the environment (`HTTP(S)_PROXY`): it would connect to
    // the URL's name itself, around the address checked and pinned here.
    let mut client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).no_proxy().timeout(timeout);
    if let Some(url::Host::Domain(host)) = url.host() {
        client = client.resolve(host, address);
    }
    let client = client.build().map_err(|e| internal(&e))?;
    let started = std::time::Instant::now();
    let mut request = client.post(url);
    // The receiver can join the trace (W3C Trace Context); none when off.
    if let Some(traceparent) = crate::traces::current() {
        request = request.header("traceparent", traceparent);
    }
    let resp = request
        .header("content-type", "application/json")
        .header("user-agent", "stablerail-webhooks")
        .header("webhook-id", &delivery.event_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signatures.join(" "))
        .body(delivery.body.clone())
        .send()
        .await
        .map_err(|e| if e.is_timeout() { "timed out".to_string() } else { "could not connect".to_string() })?;
    tracing::debug!(endpoint = %endpoint.id, status = resp.status().as_u16(), ms = started.elapsed().as_millis() as u64, "webhook attempt");
    // The body is not read: only the status counts.
    Ok(i64::from(resp.status().as_u16()))
}
