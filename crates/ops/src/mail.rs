//! Email out, over SMTP (`[dashboard] smtp_url`): the sign-in codes.

use lettre::message::{header::ContentType, Mailbox};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("email is not configured ([dashboard] smtp_url)")]
    NotConfigured,
    #[error("bad address: {0}")]
    Address(String),
    #[error("SMTP: {0}")]
    Smtp(String),
}

/// One SMTP relay, connected per message (codes are rare).
#[derive(Clone)]
pub struct Mailer {
    transport: Option<AsyncSmtpTransport<Tokio1Executor>>,
    from: Option<Mailbox>,
}

impl Mailer {
    pub fn new(smtp_url: &str, from: &str) -> anyhow::Result<Mailer> {
        if smtp_url.is_empty() {
            return Ok(Mailer { transport: None, from: None });
        }
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url)
            .map_err(|e| anyhow::anyhow!("dashboard.smtp_url: {e}"))?
            .timeout(Some(std::time::Duration::from_secs(20)))
            .build();
        let from = from.parse().map_err(|e| anyhow::anyhow!("dashboard.from: {e}"))?;
        Ok(Mailer { transport: Some(transport), from: Some(from) })
    }

    pub fn configured(&self) -> bool {
        self.transport.is_some()
    }

    pub async fn send(&self, to: &str, subject: &str, body: String) -> Result<(), MailError> {
        let (Some(transport), Some(from)) = (&self.transport, &self.from) else { return Err(MailError::NotConfigured) };
        let to: Mailbox = to.parse().map_err(|e: lettre::address::AddressError| MailError::Address(e.to_string()))?;
        let message = Message::builder()
            .from(from.clone())
            .to(to)
            .subject(subject)
            .header(ContentType::TEXT_PLAIN)
            .body(body)
            .map_err(|e| MailError::Smtp(e.to_string()))?;
        transport.send(message).await.map(|_| ()).map_err(|e| MailError::Smtp(e.to_string()))
    }
}
