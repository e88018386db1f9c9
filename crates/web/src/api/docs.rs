//! The OpenAPI 3.1 document, generated from the handlers' annotations and
//! the response types: routes are registered only through `routes!`, so a
//! route cannot exist without its entry (tests/openapi.rs checks both ways).

use std::sync::LazyLock;

use axum::extract::State;

use axum::http::header;
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi, ToSchema};

/// Every error the API answers with (status 4xx and 5xx).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// The status's reason phrase.
    #[schema(example = "Bad Request")]
    pub error: String,
    /// One fixed sentence; never node errors, URLs or keys.
    #[schema(example = "either email or recipient is required")]
    pub message: String,
    #[schema(example = 400)]
    pub status_code: u16,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "stablerail",
        description = "Cross-chain stablecoin payments. `/api` is public and rate-limited per client IP; \
                       `/v2` takes `Authorization: Bearer <api_key>:<secret_key>` and is rate-limited per agent. \
                       Amounts are decimal strings in whole tokens unless a field says base units. \
                       Every error has the body `{error, message, statusCode}`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    components(schemas(ErrorBody)),
    tags(
        (name = "intents", description = "Public payment intents, paid with an x402 proof"),
        (name = "agents", description = "Agent-owned intents, paid from hosted wallets (Bearer)"),
        (name = "swaps", description = "Swap quotes, approvals, status, discovery and tracked swap intents (through an API speaking LI.FI's)"),
        (name = "tron", description = "TRON payers' one-time Permit2 approval; routed only while TRON is enabled"),
        (name = "facilitator", description = "An x402 v2 facilitator (verify, settle, supported) on the same engine; facilitator keys (Bearer srfk_…) or public access"),
        (name = "webhooks", description = "An agent's endpoints for signed event deliveries (Standard Webhooks); see docs/events.md"),
        (name = "operations", description = "Probes, metrics and this document; not rate-limited"),
    ),
)]
pub struct ApiDoc;

/// What holds for every operation, added once here rather than repeated in
/// each annotation: the Bearer scheme, 401 on `/v2`, 429 where rate
/// limits apply, and the error envelope as the default response. Applied
/// after the routes' paths are merged in.
pub struct Conventions;

fn error_response(description: &str) -> RefOr<Response> {
    let body = ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build();
    ResponseBuilder::new().description(description).content("application/json", body).build().into()
}

impl Modify for Conventions {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("api_key:secret_key").build()),
        );
        for (path, item) in doc.paths.paths.iter_mut() {
            let ops = [&mut item.get, &mut item.post, &mut item.put, &mut item.delete, &mut item.patch];
            for op in ops.into_iter().flatten() {
                let responses = &mut op.responses.responses;
                if path.starts_with("/v2/") {
                    responses.entry("401".into()).or_insert_with(|| error_response("Missing or invalid Bearer token"));
                }
                if path.starts_with("/v2/") || path.starts_with("/x402/") || path.starts_with("/api/") && path != "/api/openapi.json" {
                    responses.entry("429".into()).or_insert_with(|| error_response("Rate limited; see Retry-After"));
                }
                responses.entry("default".into()).or_insert_with(|| error_response("Any other error"));
            }
        }
    }
}

/// Every operation the service has, the TRON approval helpers included.
pub static DOCUMENT: LazyLock<String> = LazyLock::new(|| render(true));
/// What a deployment without TRON routes (and serves).
static WITHOUT_TRON: LazyLock<String> = LazyLock::new(|| render(false));

fn render(tron: bool) -> String {
    super::openapi(tron).to_pretty_json().expect("the OpenAPI document serializes")
}

/// The document of the operations a deployment routes: the TRON helpers
/// only while TRON is enabled.
pub fn document(tron: bool) -> &'static str {
    if tron {
        DOCUMENT.as_str()
    } else {
        WITHOUT_TRON.as_str()
    }
}

/// This document.
#[utoipa::path(get, path = "/api/openapi.json", tag = "operations",
    responses((status = 200, description = "OpenAPI 3.1 document of the operations this deployment routes", content_type = "application/json", body = Object)))]
pub async fn openapi_json(State(s): State<super::Shared>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document(super::tron_approve::enabled(&s)))
}
