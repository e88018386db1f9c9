//! `[dashboard]`: sign-in by emailed code, sessions, who may sign up.

use super::*;

/// Who may make an account on the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Signup {
    /// Any email that proves itself with a code.
    Open,
    /// Only emails the operator invited (`stablerail account invite`).
    Invite,
}

/// `[dashboard]`: sign-in by emailed code, sessions, who may sign up.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Dashboard {
    /// Serve `/dashboard` at all.
    pub enabled: bool,
    /// Where codes are sent from: `smtps://host:port` (TLS) or
    /// `smtp://host:port?tls=required` (STARTTLS, refused without it), with
    /// `user:pass@` if the relay wants it. Plain `smtp://` (codes in clear
    /// text) only to a loopback host; anything else is refused at load.
    /// Empty: nobody can sign in.
    pub smtp_url: String,
    /// Where browsers reach the dashboard (`https://pay.example.com`): the
    /// session cookies are `__Host-` and Secure when it is https, whatever
    /// Host a proxy sends. Unset: judged from the request's Host (a
    /// loopback host gets plain cookies), for local use only.
    pub public_url: Option<String>,
    /// The sender of the codes, `Name <address>`.
    pub from: String,
    pub signup: Signup,
    /// A code's life.
    pub code_ttl_seconds: u64,
    /// Tries of codes per email per `attempts_window_seconds`, across codes
    /// (a new code does not reset them).
    pub code_attempts: u32,
    pub attempts_window_seconds: u64,
    /// After the try that uses the budget up, how long no code is sent or
    /// accepted; each further lockout of the email adds as much again.
    pub lockout_seconds: u64,
    /// Wrong codes per hour from one client address, and from everyone:
    /// past either, every code is refused (an attacker spreading guesses
    /// over many emails meets these).
    pub failed_tries_per_client_per_hour: u32,
    pub failed_tries_per_hour: u32,
    /// Least time between two codes to one email.
    pub resend_seconds: u64,
    /// A session ends after this long unused, and this long after sign-in.
    pub session_idle_minutes: u64,
    pub session_max_hours: u64,
    /// Code requests per minute per client address.
    pub sign_in_requests_per_minute: u32,
}

/// The host of a URL's part after `scheme://` (no user info, port, path
/// or query).
fn url_host(rest: &str) -> &str {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    }
}

fn loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Default for Dashboard {
    fn default() -> Self {
        Dashboard {
            enabled: false,
            smtp_url: String::new(),
            public_url: None,
            from: "stablerail <no-reply@localhost>".into(),
            signup: Signup::Invite,
            code_ttl_seconds: 600,
            code_attempts: 5,
            attempts_window_seconds: 900,
            lockout_seconds: 900,
            failed_tries_per_client_per_hour: 30,
            failed_tries_per_hour: 1_000,
            resend_seconds: 30,
            session_idle_minutes: 30,
            session_max_hours: 12,
            sign_in_requests_per_minute: 10,
        }
    }
}

impl Dashboard {
    pub(super) fn validate(&self) -> Result<(), String> {
        if !self.smtp_url.is_empty() && !["smtp://", "smtps://"].iter().any(|p| self.smtp_url.starts_with(p)) {
            return Err("dashboard.smtp_url must start with smtp:// or smtps://".into());
        }
        if let Some(rest) = self.smtp_url.strip_prefix("smtp://") {
            let required = rest.split_once('?').is_some_and(|(_, q)| q.split('&').any(|p| p == "tls=required"));
            if !required && !loopback_host(url_host(rest)) {
                return Err("dashboard.smtp_url: smtp:// sends sign-in codes in clear text; use smtps:// or add ?tls=required \
                            (plain smtp:// only to a loopback host)"
                    .into());
            }
        }
        if let Some(url) = &self.public_url {
            let https = url.strip_prefix("https://");
            let http = url.strip_prefix("http://");
            match (https, http) {
                (Some(_), _) => {}
                (None, Some(rest)) if loopback_host(url_host(rest)) => {}
                _ => return Err("dashboard.public_url must be an https:// URL (http:// only to a loopback host)".into()),
            }
        }
        if self.from.parse::<lettre::message::Mailbox>().is_err() {
            return Err(format!("dashboard.from `{}` is not a mailbox (`Name <address>`)", self.from));
        }
        if self.code_attempts == 0 || self.code_ttl_seconds == 0 || self.session_idle_minutes == 0 || self.session_max_hours == 0 {
            return Err("dashboard: code_attempts, code_ttl_seconds, session_idle_minutes and session_max_hours must be positive".into());
        }
        Ok(())
    }
}
