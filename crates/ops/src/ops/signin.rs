//! Dashboard sign-in: a 6-digit code mailed to the email, and the
//! server-side session it opens.
//!
//! Asking for a code answers the same whoever asks (a known email, an
//! unknown one, one locked out): only the mailbox learns anything. A code
//! is kept as its HMAC under the pepper and lives `code_ttl_seconds`. An
//! email has `code_attempts` tries per `attempts_window_seconds` across its
//! codes (a new code gives none back); the try that spends them locks it for
//! `lockout_seconds`, longer each time, and mails its account's owner once
//! per lockout. Wrong codes are also budgeted per client address and for
//! everyone, per hour, so guesses spread over many emails meet a limit too.

use base64::Engine as _;
use rand::Rng;
use sha2::{Digest, Sha256};

use crate::clock::now_ms;
use crate::config::Signup;
use crate::state::AppState;
use crate::store::dashboard::{self as repo, normal_email, Session};
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error("not an email address")]
    InvalidEmail,
    /// A wrong, expired, used-up or locked-out code: one answer for all.
    #[error("that code is not valid")]
    WrongCode,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A session just opened: the cookie's token (shown once, to the browser).
pub struct Opened {
    pub token: String,
    pub session: Session,
}

fn random_token() -> String {
    let bytes: [u8; 32] = rand::thread_rng().gen();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// What the sessions table keeps of a cookie's token.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

fn code_mac(s: &AppState, email: &str, code: &str) -> String {
    s.pepper.hash(&format!("sign-in\n{email}\n{code}"))
}

fn checked_email(email: &str) -> Result<String, SignInError> {
    let email = normal_email(email);
    if email.len() > 254 || email.parse::<lettre::Address>().is_err() {
        return Err(SignInError::InvalidEmail);
    }
    Ok(email)
}

/// May this email get a code? Its account's, if it has one; else the
/// signup rule's.
async fn may_sign_in(s: &AppState, email: &str) -> Result<bool, StoreError> {
    if let Some(a) = repo::account_by_email(&s.db, email).await? {
        return Ok(a.status == "active");
    }
    Ok(match s.config.dashboard.signup {
        Signup::Open => true,
        Signup::Invite => repo::invited(&s.db, email).await?,
    })
}

/// Send a code to `email` if it may sign in and is not held back. The
/// answer is the same either way; the mail goes out off the request's path
/// so that its time tells nothing either.
pub async fn request_code(s: &AppState, email: &str) -> Result<String, SignInError> {
    let email = checked_email(email)?;
    let d = &s.config.dashboard;
    if !may_sign_in(s, &email).await? {
        tracing::info!("sign-in code not sent: the email may not sign in");
        return Ok(email);
    }
    let code = format!("{:06}", rand::thread_rng().gen_range(0..1_000_000u32));
    let (ttl, resend) = (secs_ms(d.code_ttl_seconds), secs_ms(d.resend_seconds));
    if !repo::put_code(&s.db, &email, &code_mac(s, &email, &code), now_ms(), ttl, resend).await? {
        tracing::info!("sign-in code not sent: locked out or sent moments ago");
        return Ok(email);
    }
    let (mailer, to) = (s.mailer.clone(), email.clone());
    let minutes = d.code_ttl_seconds.div_ceil(60);
    tokio::spawn(async move {
        let body = format!(
            "Your stablerail sign-in code is {code}\n\nIt works once, for {minutes} minutes. If you did not ask for it, ignore this email.\n"
        );
        if let Err(e) = mailer.send(&to, &format!("{code} is your stablerail sign-in code"), body).await {
            tracing::warn!(error = %e, "sending a sign-in code failed");
        }
    });
    Ok(email)
}

/// Check a code and open a session for its email's account (made now for
/// a new email the signup rule lets in). `client`: the limit key of the
/// address it comes from.
pub async fn verify_code(s: &AppState, email: &str, code: &str, client: &str) -> Result<Opened, SignInError> {
    let email = checked_email(email).map_err(|_| SignInError::WrongCode)?;
    let d = &s.config.dashboard;
    let now = now_ms();
    // Past the client's or everyone's budget of wrong codes: refused, the
    // same answer, without spending the email's tries.
    if s.sign_in_failures.exhausted(client) || s.sign_in_failures_all.exhausted("all") {
        tracing::warn!("sign-in: the budget of wrong codes is spent; refused unchecked");
        return Err(SignInError::WrongCode);
    }
    let wrong = || {
        s.sign_in_failures.spend(client);
        s.sign_in_failures_all.spend("all");
        SignInError::WrongCode
    };
    // Every try counts, a malformed one too.
    let (attempts, window) = (i64::from(d.code_attempts), secs_ms(d.attempts_window_seconds));
    let Some(tried) = repo::try_code(&s.db, &email, now, attempts, secs_ms(d.lockout_seconds), window).await? else {
        return Err(wrong());
    };
    if let Some(until) = tried.locked_until {
        locked_out(s, &email, until).await;
    }
    let code = code.trim();
    let well_formed = code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit());
    if !well_formed || !s.pepper.verify(&format!("sign-in\n{email}\n{code}"), &tried.code_hmac) {
        return Err(wrong());
    }
    if !repo::consume_code(&s.db, &email, &tried.code_hmac).await? || !may_sign_in(s, &email).await? {
        return Err(SignInError::WrongCode);
    }
    let account = repo::account_for_email(&s.db, &email, now).await?;
    let (token, csrf) = (random_token(), random_token());
    let expires = now + secs_ms(d.session_max_hours * 3600);
    repo::create_session(&s.db, &token_hash(&token), &account.id, &csrf, now, expires).await?;
    tracing::info!(account = %account.id, "signed in");
    Ok(Opened { token, session: Session { account, csrf, last_seen_at: now } })
}

/// The email was just locked (once per lockout: only the try that locks
/// it gets here): its account's owner is told, off the request's path.
async fn locked_out(s: &AppState, email: &str, until: i64) {
    tracing::warn!("sign-in: an email's tries are spent; locked");
    match repo::account_by_email(&s.db, email).await {
        Ok(Some(_)) => {}
        Ok(None) => return,
        Err(e) => return tracing::warn!(error = %e, "sign-in lockout: could not read the account"),
    }
    let (mailer, to) = (s.mailer.clone(), email.to_string());
    let minutes = ((until - now_ms()).max(0) as u64).div_ceil(60_000);
    tokio::spawn(async move {
        let body = format!(
            "Someone entered wrong sign-in codes for this email on stablerail, so signing in with it is locked for {minutes} minutes.\n\n\
             If it was you, wait and ask for a new code. If it was not, nobody got in: the codes only ever went to this mailbox.\n"
        );
        if let Err(e) = mailer.send(&to, "Sign-in to stablerail locked after wrong codes", body).await {
            tracing::warn!(error = %e, "sending a lockout notice failed");
        }
    });
}

/// The live session of a cookie's token; its last use is recorded to the
/// minute.
pub async fn session(s: &AppState, token: &str) -> Result<Option<Session>, StoreError> {
    let now = now_ms();
    let hash = token_hash(token);
    let found = repo::session(&s.db, &hash, now, secs_ms(s.config.dashboard.session_idle_minutes * 60)).await?;
    if let Some(session) = &found {
        if session.last_seen_at <= now - 60_000 {
            repo::touch_session(&s.db, &hash, now).await?;
        }
    }
    Ok(found)
}

pub async fn sign_out(s: &AppState, token: &str) -> Result<(), StoreError> {
    repo::end_session(&s.db, &token_hash(token)).await
}

/// End every session of the account (this one included).
pub async fn sign_out_everywhere(s: &AppState, account: &str) -> Result<u64, StoreError> {
    repo::end_sessions(&s.db, account).await
}

fn secs_ms(secs: u64) -> i64 {
    i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX)
}

/// A fresh random token (the sign-in forms' CSRF cookie).
pub fn fresh_token() -> String {
    random_token()
}
