//! The one error type of the HTTP API, and its mapping to the spec's
//! envelope `{error, message, statusCode}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    PaymentRequired(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Any other status, with a fixed sentence.
    #[error("{1}")]
    Status(StatusCode, String),
    #[error("{0}")]
    Unprocessable(String),
    #[error("rate limited; retry in {0} s")]
    RateLimited(u64),
    /// The detail is logged; the public message is fixed.
    #[error("{0}")]
    Internal(String),
    #[error("{0}")]
    BadGateway(String),
    #[error("{0}")]
    Unavailable(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::PaymentRequired(_) => StatusCode::PAYMENT_REQUIRED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Status(s, _) => *s,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl ApiError {
    /// The spec's envelope: `{error, message, statusCode}`.
    pub fn envelope(&self) -> serde_json::Value {
        let status = self.status();
        let message = match self {
            ApiError::Internal(_) => "internal error; the request was not completed".to_string(),
            other => other.to_string(),
        };
        json!({
            "error": status.canonical_reason().unwrap_or("Error"),
            "message": message,
            "statusCode": status.as_u16(),
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(status = status.as_u16(), error = %self, "request failed");
        }
        let mut resp = (status, Json(self.envelope())).into_response();
        if let ApiError::RateLimited(secs) = self {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(r: axum::extract::rejection::JsonRejection) -> Self {
        use axum::extract::rejection::JsonRejection as J;
        match r {
            J::BytesRejection(b) if b.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                ApiError::PayloadTooLarge("request body is too large".into())
            }
            J::MissingJsonContentType(_) => ApiError::UnsupportedMediaType("Content-Type must be application/json".into()),
            other => ApiError::BadRequest(format!("invalid JSON body: {}", other.body_text())),
        }
    }
}

impl From<axum::extract::rejection::QueryRejection> for ApiError {
    fn from(r: axum::extract::rejection::QueryRejection) -> Self {
        ApiError::BadRequest(format!("invalid query: {}", r.body_text()))
    }
}

use crate::adapter::CallError;
use crate::payment::{AdapterError, ProofError};

/// An adapter call that did not answer is the service's failure.
impl From<CallError> for ApiError {
    fn from(e: CallError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

impl From<AdapterError> for ApiError {
    fn from(e: AdapterError) -> Self {
        match e {
            AdapterError::InvalidAddress(m) => ApiError::BadRequest(format!("invalid address: {m}")),
            AdapterError::InvalidAmount(m) => ApiError::BadRequest(format!("invalid amount: {m}")),
            AdapterError::Unsupported(m) | AdapterError::Malformed(m) => ApiError::BadRequest(m),
            AdapterError::Config(m) => ApiError::Internal(format!("adapter configuration: {m}")),
            AdapterError::ChainUnavailable(m) => {
                tracing::warn!(detail = %m, "adapter could not reach its chain");
                ApiError::Unavailable(crate::failure::CHAIN_UNAVAILABLE.into())
            }
        }
    }
}

impl From<ProofError> for ApiError {
    fn from(e: ProofError) -> Self {
        if let ProofError::ChainUnavailable(m) = &e {
            tracing::warn!(detail = %m, "adapter could not reach its chain");
            return ApiError::Unavailable(crate::failure::CHAIN_UNAVAILABLE.into());
        }
        ApiError::BadRequest(crate::failure::proof_message(&e))
    }
}

impl From<crate::ops::create_intent::CreateError> for ApiError {
    fn from(e: crate::ops::create_intent::CreateError) -> Self {
        use crate::ops::create_intent::CreateError as E;
        match e {
            E::Invalid(m) => ApiError::BadRequest(m),
            e @ (E::ChainWithheld(_) | E::AssetWithheld { .. }) => ApiError::Unavailable(e.to_string()),
            E::Adapter(e) => e.into(),
            E::Call(e) => e.into(),
            E::Store(e) => e.into(),
            E::Internal(m) => ApiError::Internal(m),
            E::Declined => ApiError::Forbidden(e.to_string()),
        }
    }
}

impl From<crate::ops::intent_error::IntentError> for ApiError {
    fn from(e: crate::ops::intent_error::IntentError) -> Self {
        use crate::ops::intent_error::IntentError as E;
        match e {
            E::NotFound => ApiError::NotFound(e.to_string()),
            E::Invalid(m) => ApiError::BadRequest(m),
            E::Expired => ApiError::BadRequest(e.to_string()),
            E::NotPayable | E::AuthorizationUsed => ApiError::Conflict(e.to_string()),
            E::NotServed(..) => ApiError::Unavailable(e.to_string()),
            E::FloatShort => ApiError::Unavailable(crate::failure::Failure::PayoutWalletShort.sentence().into()),
            E::Proof(e) => e.into(),
            E::Declined | E::RecipientUnknown => ApiError::Forbidden(e.to_string()),
            E::WalletShort => ApiError::PaymentRequired(crate::failure::Failure::AgentWalletShort.sentence().into()),
            E::Call(e) => e.into(),
            E::Store(e) => e.into(),
        }
    }
}

impl From<crate::ops::webhooks::WebhookError> for ApiError {
    fn from(e: crate::ops::webhooks::WebhookError) -> Self {
        use crate::ops::webhooks::WebhookError as W;
        match e {
            W::Url(r) => ApiError::BadRequest(r.to_string()),
            W::UnknownEvent => ApiError::BadRequest(e.to_string()),
            W::TooMany => ApiError::Conflict(e.to_string()),
            W::NotFound => ApiError::NotFound(e.to_string()),
            W::Store(s) => s.into(),
        }
    }
}

impl From<crate::ops::balances::BalancesError> for ApiError {
    fn from(e: crate::ops::balances::BalancesError) -> Self {
        use crate::ops::balances::BalancesError as E;
        match e {
            E::NoOwner => ApiError::Forbidden(e.to_string()),
            E::Chain(ref detail) => {
                tracing::warn!(error = %detail, "wallet balances");
                ApiError::BadGateway(e.to_string())
            }
            E::Store(e) => e.into(),
        }
    }
}

impl From<crate::swap::SwapError> for ApiError {
    fn from(e: crate::swap::SwapError) -> Self {
        use crate::swap::SwapError;
        match e {
            SwapError::NotFound => ApiError::NotFound(e.to_string()),
            SwapError::Unavailable(detail) => {
                tracing::warn!(%detail, "swap provider unavailable");
                ApiError::BadGateway(SwapError::Unavailable(String::new()).to_string())
            }
            SwapError::Refused(ref detail) => {
                tracing::warn!(%detail, "swap route refused");
                ApiError::BadGateway(e.to_string())
            }
            SwapError::Internal(detail) => ApiError::Internal(detail),
            SwapError::WalletNotReady | SwapError::NoTronWallet => ApiError::Forbidden(e.to_string()),
            SwapError::Refunded => ApiError::BadGateway(e.to_string()),
            SwapError::SendFailed(ref detail) => {
                tracing::warn!(%detail, "hosted wallet could not send a swap transaction");
                ApiError::BadGateway(e.to_string())
            }
            other => ApiError::BadRequest(other.to_string()),
        }
    }
}

impl From<crate::ops::tron_approve::ApproveError> for ApiError {
    fn from(e: crate::ops::tron_approve::ApproveError) -> Self {
        use crate::ops::tron_approve::ApproveError;
        match e {
            ApproveError::Refused(r) => ApiError::BadRequest(r.to_string()),
            ApproveError::Node(detail) => {
                tracing::warn!(%detail, "TRON node unavailable for an approval helper");
                ApiError::Unavailable(crate::failure::CHAIN_UNAVAILABLE.into())
            }
        }
    }
}
