//! `/v2/webhook_endpoints` and `/v2/events/{id}/redeliver`: an agent's
//! endpoints for signed event deliveries (docs/events.md).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ApiError, Shared};
use crate::clock::rfc3339;
use crate::ops::webhooks::{self as op, Owner};
use crate::store::agents::Agent;
use crate::store::webhooks::{Delivery, Endpoint};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointBody {
    /// Where deliveries are POSTed: `https://…`.
    #[schema(example = "https://shop.example/hooks/stablerail")]
    url: String,
    /// Event types to send (default: all), e.g. `intent.target_settled`.
    events: Option<Vec<String>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointView {
    #[schema(example = "we_01JD3Q5W8Z6X2V4T7R9P1M3K5H")]
    id: String,
    url: String,
    events: Vec<String>,
    /// `enabled`, or `disabled` (deliveries failed for 3 days).
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    disabled_reason: Option<String>,
    created_at: String,
    /// The signing secret (`whsec_…`): only in the answer that made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
}

fn view(e: Endpoint, secret: Option<String>) -> EndpointView {
    EndpointView {
        id: e.id,
        url: e.url,
        events: e.events,
        status: e.status,
        disabled_reason: e.disabled_reason,
        created_at: rfc3339(e.created_at),
        secret,
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointList {
    data: Vec<EndpointView>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Rotated {
    id: String,
    /// The new signing secret (`whsec_…`), shown once.
    secret: String,
    /// Until when the previous secret also signs.
    previous_secret_valid_until: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    id: String,
    event_id: String,
    /// `pending`, `delivered`, or `failed` (given up).
    status: String,
    attempts: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_status_code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_attempt_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delivered_at: Option<String>,
    created_at: String,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        DeliveryView {
            id: d.id,
            event_id: d.event_id,
            status: d.status,
            attempts: d.attempts,
            last_status_code: d.last_code,
            last_error: d.last_error,
            last_attempt_at: d.last_attempt_at.map(rfc3339),
            delivered_at: d.delivered_at.map(rfc3339),
            created_at: rfc3339(d.created_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    data: Vec<DeliveryView>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Redelivered {
    event_id: String,
    /// Endpoints the event is sent to again.
    endpoints: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Removed {
    id: String,
    deleted: bool,
}

/// Add an endpoint. Its secret is in this answer only.
#[utoipa::path(post, path = "/v2/webhook_endpoints", tag = "webhooks", security(("bearer" = [])),
    request_body = EndpointBody,
    responses(
        (status = 201, description = "Created, with its secret", body = EndpointView),
        (status = 400, description = "A URL that is not https, points to a private address, or an unknown event type", body = super::docs::ErrorBody),
        (status = 409, description = "The agent has as many endpoints as it may (10)", body = super::docs::ErrorBody)))]
pub async fn create(
    State(s): State<Shared>,
    Extension(agent): Extension<Agent>,
    body: Result<Json<EndpointBody>, axum::extract::rejection::JsonRejection>,
) -> Result<(StatusCode, Json<EndpointView>), ApiError> {
    let Json(body) = body?;
    let made = op::create((&*s).into(), &Owner::agent(&agent.id), &body.url, body.events).await?;
    Ok((StatusCode::CREATED, Json(view(made.endpoint, Some(made.secret)))))
}

/// The caller's endpoints.
#[utoipa::path(get, path = "/v2/webhook_endpoints", tag = "webhooks", security(("bearer" = [])),
    responses((status = 200, description = "The caller's endpoints", body = EndpointList)))]
pub async fn list(State(s): State<Shared>, Extension(agent): Extension<Agent>) -> Result<Json<EndpointList>, ApiError> {
    let list = op::list((&*s).into(), &Owner::agent(&agent.id)).await?;
    Ok(Json(EndpointList { data: list.into_iter().map(|e| view(e, None)).collect() }))
}

/// Remove an endpoint and its deliveries.
#[utoipa::path(delete, path = "/v2/webhook_endpoints/{id}", tag = "webhooks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Endpoint id")),
    responses(
        (status = 200, description = "Removed", body = Removed),
        (status = 404, description = "No such endpoint of the caller's", body = super::docs::ErrorBody)))]
pub async fn remove(
    State(s): State<Shared>,
    Extension(agent): Extension<Agent>,
    Path(id): Path<String>,
) -> Result<Json<Removed>, ApiError> {
    op::remove((&*s).into(), &Owner::agent(&agent.id), &id).await?;
    Ok(Json(Removed { id, deleted: true }))
}

/// A new signing secret; the previous one also signs for 24 hours.
#[utoipa::path(post, path = "/v2/webhook_endpoints/{id}/rotate_secret", tag = "webhooks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Endpoint id")),
    responses(
        (status = 200, description = "The new secret", body = Rotated),
        (status = 404, description = "No such endpoint of the caller's", body = super::docs::ErrorBody)))]
pub async fn rotate(
    State(s): State<Shared>,
    Extension(agent): Extension<Agent>,
    Path(id): Path<String>,
) -> Result<Json<Rotated>, ApiError> {
    let (secret, until) = op::rotate((&*s).into(), &Owner::agent(&agent.id), &id).await?;
    Ok(Json(Rotated { id, secret, previous_secret_valid_until: rfc3339(until) }))
}

/// An endpoint's latest deliveries (100), newest first.
#[utoipa::path(get, path = "/v2/webhook_endpoints/{id}/deliveries", tag = "webhooks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Endpoint id")),
    responses(
        (status = 200, description = "Deliveries", body = DeliveryList),
        (status = 404, description = "No such endpoint of the caller's", body = super::docs::ErrorBody)))]
pub async fn deliveries(
    State(s): State<Shared>,
    Extension(agent): Extension<Agent>,
    Path(id): Path<String>,
) -> Result<Json<DeliveryList>, ApiError> {
    let list = op::deliveries((&*s).into(), &Owner::agent(&agent.id), &id).await?;
    Ok(Json(DeliveryList { data: list.into_iter().map(DeliveryView::from).collect() }))
}

/// Send an event again to the caller's endpoints that had it.
#[utoipa::path(post, path = "/v2/events/{id}/redeliver", tag = "webhooks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Event id (`evt_…`)")),
    responses(
        (status = 200, description = "Queued again", body = Redelivered),
        (status = 404, description = "No delivery of this event to the caller's endpoints", body = super::docs::ErrorBody)))]
pub async fn redeliver(
    State(s): State<Shared>,
    Extension(agent): Extension<Agent>,
    Path(id): Path<String>,
) -> Result<Json<Redelivered>, ApiError> {
    let endpoints = op::redeliver((&*s).into(), &Owner::agent(&agent.id), &id).await?;
    Ok(Json(Redelivered { event_id: id, endpoints }))
}
