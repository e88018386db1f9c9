//! Sign-in by emailed code, and sign-out (here or everywhere).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::CookieJar;
use maud::html;
use serde::Deserialize;

use super::error::DashError;
use super::page;
use super::session::{self, Nothing, Posted, SignInForm, Signed};
use crate::ops::signin::{self as op, SignInError};
use crate::state::Shared;

/// Code requests and tries per client address (`sign_in_requests_per_minute`).
pub async fn limit(State(s): State<Shared>, req: Request, next: Next) -> Result<Response, DashError> {
    let ip = crate::client_ip::of(&s.proxies, &req);
    s.sign_in_limiter.check(format!("ip:{ip}")).map_err(DashError::TooMany)?;
    let mut req = req;
    req.extensions_mut().insert(session::Client(format!("ip:{ip}")));
    Ok(next.run(req).await)
}

pub async fn home(signed: Option<Signed>) -> Redirect {
    Redirect::to(if signed.is_some() { "/dashboard/agents" } else { "/dashboard/sign-in" })
}

fn email_form(token: &str, email: &str, problem: Option<&str>) -> maud::Markup {
    html! {
        @if let Some(p) = problem { p.notice.bad role="alert" { (p) } }
        p { "Enter your email. We send it a 6-digit code; no password needed." }
        form.card method="post" action="/dashboard/sign-in" {
            input type="hidden" name="csrf" value=(token);
            label for="email" { "Email" }
            input id="email" name="email" type="email" autocomplete="email" required value=(email);
            button type="submit" { "Send me a code" }
        }
    }
}

pub async fn sign_in_page(signed: Option<Signed>, headers: HeaderMap) -> Response {
    if signed.is_some() {
        return Redirect::to("/dashboard/agents").into_response();
    }
    let (token, set) = session::sign_in_token(&headers);
    let jar = CookieJar::new();
    let jar = match set {
        Some(c) => jar.add(c),
        None => jar,
    };
    (jar, page::public("Sign in", email_form(&token, "", None))).into_response()
}

#[derive(Deserialize)]
pub struct EmailForm {
    email: String,
}

fn code_form(token: &str, email: &str, problem: Option<&str>) -> maud::Markup {
    html! {
        @if let Some(p) = problem { p.notice.bad role="alert" { (p) } }
        p { "If " strong { (email) } " may sign in here, a code is on its way to it. It works once, for 10 minutes." }
        form.card method="post" action="/dashboard/sign-in/code" {
            input type="hidden" name="csrf" value=(token);
            input type="hidden" name="email" value=(email);
            label for="code" { "Code" }
            input id="code" name="code" type="text" inputmode="numeric" pattern="[0-9]{6}" maxlength="6"
                autocomplete="one-time-code" required;
            button type="submit" { "Sign in" }
        }
        p.small { a href="/dashboard/sign-in" { "Use another email" } }
    }
}

pub async fn request_code(State(s): State<Shared>, posted: SignInForm<EmailForm>) -> Result<Response, DashError> {
    if !s.mailer.configured() {
        return Err(DashError::MailNotConfigured);
    }
    let (token, _) = session::sign_in_token(&posted.headers);
    match op::request_code(&s, &posted.form.email).await {
        Ok(email) => Ok(page::public("Check your email", code_form(&token, &email, None)).into_response()),
        Err(SignInError::InvalidEmail) => {
            let form = email_form(&token, &posted.form.email, Some("That is not an email address."));
            Ok((StatusCode::BAD_REQUEST, page::public("Sign in", form)).into_response())
        }
        Err(SignInError::WrongCode) => Err(DashError::Internal("a code request cannot have a wrong code".into())),
        Err(SignInError::Store(e)) => Err(e.into()),
    }
}

#[derive(Deserialize)]
pub struct CodeForm {
    email: String,
    code: String,
}

pub async fn verify_code(State(s): State<Shared>, posted: SignInForm<CodeForm>) -> Result<Response, DashError> {
    let (token, _) = session::sign_in_token(&posted.headers);
    match op::verify_code(&s, &posted.form.email, &posted.form.code, &posted.client).await {
        Ok(opened) => {
            let jar = CookieJar::new().add(session::session_cookie(&posted.headers, opened.token));
            Ok((jar, Redirect::to("/dashboard/agents")).into_response())
        }
        Err(SignInError::WrongCode | SignInError::InvalidEmail) => {
            let email = crate::store::dashboard::normal_email(&posted.form.email);
            let problem = "That code is not valid. Check it, or ask for a new one after a while.";
            Ok((StatusCode::BAD_REQUEST, page::public("Check your email", code_form(&token, &email, Some(problem)))).into_response())
        }
        Err(SignInError::Store(e)) => Err(e.into()),
    }
}

pub async fn sign_out(State(s): State<Shared>, posted: Posted<Nothing>) -> Result<Response, DashError> {
    op::sign_out(&s, &posted.signed.token).await?;
    Ok((CookieJar::new().add(session::cleared(&posted.headers)), Redirect::to("/dashboard/sign-in")).into_response())
}

pub async fn sign_out_everywhere(State(s): State<Shared>, posted: Posted<Nothing>) -> Result<Response, DashError> {
    op::sign_out_everywhere(&s, &posted.signed.session.account.id).await?;
    Ok((CookieJar::new().add(session::cleared(&posted.headers)), Redirect::to("/dashboard/sign-in")).into_response())
}
