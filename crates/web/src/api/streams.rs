//! `GET /api/intents/{id}/events`: an intent's public view at each change
//! of its status, as Server-Sent Events, ending at a final status;
//! resumable with `Last-Event-ID` (the changes after it are sent first).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use tokio::sync::broadcast::error::RecvError;

use super::{ApiError, Shared};
use crate::intent::{views, Status};
use crate::store::transition::{recorded_by_id, recorded_for_agent, recorded_of, Recorded, Subject};

/// A stream ends after this long whatever its intent does (reconnect with
/// `Last-Event-ID` to go on).
const MAX_LIFE: Duration = Duration::from_secs(30 * 60);
/// Look again without an announcement (another replica's change seen late).
const RECHECK: Duration = Duration::from_secs(5);

/// A client or agent holding as many streams as it may: 429, in the envelope.
fn too_many() -> ApiError {
    ApiError::Status(axum::http::StatusCode::TOO_MANY_REQUESTS, "too many open streams; close one first".into())
}

fn final_status(status: &str) -> bool {
    matches!(Status::parse(status), Some(Status::TargetSettled | Status::VerificationFailed | Status::Blocked | Status::Expired))
}

struct Follow {
    s: Shared,
    id: String,
    rx: tokio::sync::broadcast::Receiver<Arc<Recorded>>,
    last: i64,
    queue: VecDeque<Recorded>,
    done: bool,
    until: Instant,
    _permit: tokio::sync::OwnedSemaphorePermit,
    _held: crate::live::StreamHeld,
    _site: Option<crate::live::StreamHeld>,
}

impl Follow {
    async fn refill(&mut self) {
        match recorded_of(&self.s.db, Subject::Intent, &self.id).await {
            Ok(all) => self.queue.extend(all.into_iter().filter(|r| r.version > self.last)),
            Err(e) => tracing::warn!(error = %e, "stream: reading an intent's events failed"),
        }
    }

    /// The SSE event for one change: the public view read now, with the
    /// change's status.
    async fn event(&self, r: &Recorded) -> Option<Event> {
        let intent = crate::store::intents::get(&self.s.db, &self.id).await.ok()??;
        let mut data = serde_json::to_value(views::public(views::intent(&self.s.config, &intent, crate::clock::now_ms()))).ok()?;
        data["status"] = r.to.clone().into();
        let kind = crate::webhooks::event::type_of(&r.subject_kind, &r.to)?;
        Some(Event::default().id(&r.id).event(kind).data(data.to_string()))
    }

    async fn next(mut self) -> Option<(Result<Event, Infallible>, Follow)> {
        loop {
            if let Some(r) = self.queue.pop_front() {
                if r.version <= self.last {
                    continue;
                }
                self.last = r.version;
                self.done = final_status(&r.to);
                if let Some(e) = self.event(&r).await {
                    return Some((Ok(e), self));
                }
                continue;
            }
            if self.done || Instant::now() >= self.until {
                return None;
            }
            tokio::select! {
                got = self.rx.recv() => match got {
                    Ok(r) if r.subject_kind != Subject::Intent.as_str() || r.subject_id != self.id => continue,
                    Ok(_) | Err(RecvError::Lagged(_)) => self.refill().await,
                    Err(RecvError::Closed) => return None,
                },
                _ = tokio::time::sleep(RECHECK) => self.refill().await,
            }
        }
    }
}

fn stream(f: Follow) -> impl Stream<Item = Result<Event, Infallible>> {
    futures::stream::unfold(f, Follow::next)
}

/// Follow an intent's status as Server-Sent Events: one `intent.<status>`
/// event per change, its data the public view, its id the event's
/// (`evt_…`); the stream ends after a final status. Without
/// `Last-Event-ID` it starts with the current status; with it, with every
/// change after that event.
#[utoipa::path(get, path = "/api/intents/{id}/events", tag = "intents",
    params(("id" = String, Path, description = "Intent id"),
           ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event")),
    responses(
        (status = 200, description = "`text/event-stream`", content_type = "text/event-stream", body = String),
        (status = 404, description = "No such intent", body = super::docs::ErrorBody)))]
pub async fn intent_events(State(s): State<Shared>, Path(id): Path<String>, req: axum::extract::Request) -> Result<Response, ApiError> {
    let headers = req.headers().clone();
    if crate::store::intents::get(&s.db, &id).await?.is_none() {
        return Err(ApiError::NotFound("intent not found".into()));
    }
    // One client cannot hold the keyless pool: its own cap, then the pool's.
    let client = crate::client_ip::of(&s.proxies, &req);
    let per_client = s.config.limits.streams_per_client.max(1);
    let held = s.stream_counts.open(format!("client:{client}"), per_client).ok_or_else(too_many)?;
    // An IPv6 client has a /64 per key and many /64s per site: a site
    // holds ten clients' share at most.
    let site = match crate::client_ip::site_of(&s.proxies, &req) {
        Some(site) => Some(s.stream_counts.open(format!("site:{site}"), per_client.saturating_mul(10)).ok_or_else(too_many)?),
        None => None,
    };
    let permit =
        s.public_streams.clone().try_acquire_owned().map_err(|_| ApiError::Unavailable("too many open streams; try again later".into()))?;
    // Subscribe first: a change between the read below and the first wait
    // is then announced, not missed.
    let rx = s.live.subscribe();
    let history = recorded_of(&s.db, Subject::Intent, &id).await?;
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let last = match resume {
        Some(after) => history.iter().find(|r| r.id == after).map_or(0, |r| r.version),
        None => history.last().map_or(0, |r| r.version - 1),
    };
    let queue = history.into_iter().filter(|r| r.version > last).collect();
    let follow =
        Follow { s, id, rx, last, queue, done: false, until: Instant::now() + MAX_LIFE, _permit: permit, _held: held, _site: site };
    Ok(Sse::new(stream(follow)).keep_alive(KeepAlive::default()).into_response())
}

/// The agent's stream: every change of its intents.
struct AgentFollow {
    s: Shared,
    agent: String,
    rx: tokio::sync::broadcast::Receiver<Arc<Recorded>>,
    queue: VecDeque<Recorded>,
    /// Ids already sent (replay and announcements overlap), with their time.
    sent: std::collections::HashMap<String, i64>,
    /// The newest change sent: a re-read after a lag starts a little before it.
    cursor: (i64, String),
    until: Instant,
    _permit: tokio::sync::OwnedSemaphorePermit,
    _held: crate::live::StreamHeld,
}

impl AgentFollow {
    async fn replay(&mut self, after_at: i64, after_id: &str) {
        match recorded_for_agent(&self.s.db, &self.agent, after_at, after_id, 500).await {
            Ok(rows) => self.queue.extend(rows),
            Err(e) => tracing::warn!(error = %e, "stream: reading the agent's events failed"),
        }
    }

    async fn event(&self, r: &Recorded) -> Option<Event> {
        // Another's intent is skipped by its known owner, without a read.
        if self.s.owners.get(&r.subject_id).is_some_and(|owner| owner.as_deref() != Some(self.agent.as_str())) {
            return None;
        }
        let intent = crate::store::intents::get(&self.s.db, &r.subject_id).await.ok()??;
        self.s.owners.put(&r.subject_id, intent.agent_id.clone());
        if intent.agent_id.as_deref() != Some(self.agent.as_str()) {
            return None;
        }
        let mut data = serde_json::to_value(views::intent(&self.s.config, &intent, crate::clock::now_ms())).ok()?;
        data["status"] = r.to.clone().into();
        let kind = crate::webhooks::event::type_of(&r.subject_kind, &r.to)?;
        Some(Event::default().id(&r.id).event(kind).data(data.to_string()))
    }

    async fn next(mut self) -> Option<(Result<Event, Infallible>, AgentFollow)> {
        loop {
            if let Some(r) = self.queue.pop_front() {
                if self.sent.contains_key(&r.id) {
                    continue;
                }
                if let Some(e) = self.event(&r).await {
                    self.sent.insert(r.id.clone(), r.created_at);
                    if (r.created_at, r.id.as_str()) > (self.cursor.0, self.cursor.1.as_str()) {
                        self.cursor = (r.created_at, r.id.clone());
                    }
                    let horizon = self.cursor.0 - 60_000;
                    self.sent.retain(|_, at| *at >= horizon);
                    return Some((Ok(e), self));
                }
                continue;
            }
            if Instant::now() >= self.until {
                return None;
            }
            tokio::select! {
                got = self.rx.recv() => match got {
                    Ok(r) if r.subject_kind == Subject::Intent.as_str() => self.queue.push_back((*r).clone()),
                    Ok(_) => continue,
                    // Announcements were dropped: read what this agent missed.
                    Err(RecvError::Lagged(_)) => {
                        let (at, _) = self.cursor.clone();
                        self.replay(at - 10_000, "").await;
                    }
                    Err(RecvError::Closed) => return None,
                },
                _ = tokio::time::sleep(KEEP_READING) => {}
            }
        }
    }
}

/// How long a quiet agent stream waits between looks at its deadline.
const KEEP_READING: Duration = Duration::from_secs(15);

/// The calling agent's stream: one `intent.<status>` event per change of
/// any of its intents (data: the agent's view of the intent), as Server-Sent
/// Events. Without `Last-Event-ID` it starts with the next change; with it,
/// with every change after that event.
#[utoipa::path(get, path = "/v2/events", tag = "webhooks", security(("bearer" = [])),
    params(("Last-Event-ID" = Option<String>, Header, description = "Resume after this event")),
    responses((status = 200, description = "`text/event-stream`", content_type = "text/event-stream", body = String)))]
pub async fn agent_events(
    State(s): State<Shared>,
    axum::Extension(agent): axum::Extension<crate::store::agents::Agent>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let held = s.stream_counts.open(format!("agent:{}", agent.id), s.config.limits.streams_per_agent.max(1)).ok_or_else(too_many)?;
    let permit =
        s.agent_streams.clone().try_acquire_owned().map_err(|_| ApiError::Unavailable("too many open streams; try again later".into()))?;
    let rx = s.live.subscribe();
    let now = crate::clock::now_ms();
    let mut follow = AgentFollow {
        s: s.clone(),
        agent: agent.id.clone(),
        rx,
        queue: VecDeque::new(),
        sent: Default::default(),
        cursor: (now, String::new()),
        until: Instant::now() + MAX_LIFE,
        _permit: permit,
        _held: held,
    };
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    if let Some(after) = resume {
        if let Some(r) = recorded_by_id(&s.db, after).await? {
            follow.cursor = (r.created_at, r.id.clone());
            follow.sent.insert(r.id.clone(), r.created_at);
            follow.replay(r.created_at, &r.id).await;
        }
    }
    Ok(Sse::new(futures::stream::unfold(follow, AgentFollow::next)).keep_alive(KeepAlive::default()).into_response())
}
