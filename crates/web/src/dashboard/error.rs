//! The dashboard's failures, each mapped once to a status and a page with a
//! fixed sentence (details go to the log).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::page;

#[derive(Debug, thiserror::Error)]
pub enum DashError {
    /// No live session: to the sign-in page.
    #[error("sign-in needed")]
    SignInNeeded,
    /// Not found, or not this account's (the same answer).
    #[error("not found")]
    NotFound,
    #[error("form token missing or wrong")]
    Csrf,
    /// A fixed sentence the user can act on.
    #[error("{0}")]
    Invalid(&'static str),
    #[error("too many requests")]
    TooMany(u64),
    #[error("form bodies must be application/x-www-form-urlencoded")]
    MediaType,
    #[error("email sign-in is not configured")]
    MailNotConfigured,
    #[error("internal: {0}")]
    Internal(String),
}

impl From<crate::store::StoreError> for DashError {
    fn from(e: crate::store::StoreError) -> Self {
        DashError::Internal(format!("store: {e}"))
    }
}

impl From<anyhow::Error> for DashError {
    fn from(e: anyhow::Error) -> Self {
        DashError::Internal(format!("{e:#}"))
    }
}

impl DashError {
    fn status_and_sentence(&self) -> (StatusCode, &'static str) {
        match self {
            DashError::SignInNeeded => (StatusCode::SEE_OTHER, "Please sign in."),
            DashError::NotFound => (StatusCode::NOT_FOUND, "There is nothing here, or it is not yours."),
            DashError::Csrf => (StatusCode::FORBIDDEN, "This form has expired. Go back, reload the page and try again."),
            DashError::Invalid(sentence) => (StatusCode::BAD_REQUEST, sentence),
            DashError::TooMany(_) => (StatusCode::TOO_MANY_REQUESTS, "Too many requests. Wait a minute and try again."),
            DashError::MediaType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "This page only takes its own forms."),
            DashError::MailNotConfigured => {
                (StatusCode::SERVICE_UNAVAILABLE, "Email sign-in is not configured on this service. Ask its operator.")
            }
            DashError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong on our side. Try again shortly."),
        }
    }
}

impl IntoResponse for DashError {
    fn into_response(self) -> Response {
        if let DashError::SignInNeeded = self {
            return Redirect::to("/dashboard/sign-in").into_response();
        }
        if let DashError::Internal(detail) = &self {
            tracing::error!(error = %detail, "dashboard request failed");
        }
        let (status, sentence) = self.status_and_sentence();
        let mut resp = (status, page::error(status, sentence)).into_response();
        if let DashError::TooMany(wait) = self {
            resp.headers_mut().insert(header::RETRY_AFTER, wait.into());
        }
        resp
    }
}
