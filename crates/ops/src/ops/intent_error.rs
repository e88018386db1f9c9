//! What an operation on an existing intent can fail with, and the lookups
//! those operations share.

use crate::adapter::CallError;
use crate::intent::{Intent, Status};
use crate::payment::ProofError;
use crate::state::AppState;
use crate::store::agents::Agent;
use crate::store::intents as repo;
use crate::store::StoreError;

/// Why an operation on an intent was refused; `api::error` maps each to
/// its status and sentence.
#[derive(Debug, thiserror::Error)]
pub enum IntentError {
    /// 404: no such intent (or, on `/v2`, not the caller's).
    #[error("payment intent not found")]
    NotFound,
    /// 400 with the spec's sentence.
    #[error("{0}")]
    Invalid(String),
    /// 400: past its `expires_at` unpaid.
    #[error("payment intent has expired")]
    Expired,
    /// 409: not awaiting payment (paid, settling or ended).
    #[error("invalid intent status for this operation")]
    NotPayable,
    /// 409: the proof's authorization paid another intent already.
    #[error("proof validation failed: this payment authorization was already used")]
    AuthorizationUsed,
    /// 503: the intent's payer chain and asset are no longer served.
    #[error("{0}/{1} is no longer served")]
    NotServed(String, String),
    /// The payer adapter refused the proof.
    #[error("the proof was refused: {0:?}")]
    Proof(ProofError),
    /// 403: the compliance screen declined the payer; the intent is BLOCKED.
    #[error("payment declined")]
    Declined,
    /// 403: the intent pays an email that has no wallet on its chain (yet);
    /// answered like a decline, so the answer tells nothing of the email.
    /// The intent still awaits payment.
    #[error("payment declined")]
    RecipientUnknown,
    /// 402: the agent's hosted wallet cannot cover the amount; the intent
    /// awaits payment again.
    #[error("the agent's wallet cannot cover the amount")]
    WalletShort,
    /// 503: the proxy wallet on the target chain cannot cover the
    /// receiving amount beside what it has already promised; the payer
    /// keeps the funds and may pay again later.
    #[error("service temporarily unavailable: payment wallet has insufficient balance")]
    FloatShort,
    /// The adapter did not answer: the service's failure.
    #[error(transparent)]
    Call(#[from] CallError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<ProofError> for IntentError {
    fn from(e: ProofError) -> Self {
        IntentError::Proof(e)
    }
}

/// Any intent by id.
pub(super) async fn load(s: &AppState, id: &str) -> Result<Intent, IntentError> {
    repo::get(&s.db, id).await?.ok_or(IntentError::NotFound)
}

/// `/v2` sees only the caller's own intents; anything else is "not found".
pub(super) async fn load_owned(s: &AppState, id: &str, agent: &Agent) -> Result<Intent, IntentError> {
    let i = load(s, id).await?;
    if i.agent_id.as_deref() != Some(agent.id.as_str()) {
        return Err(IntentError::NotFound);
    }
    Ok(i)
}

/// Why an intent cannot take a proof or an execute now.
pub(super) fn not_payable(i: &Intent, now_ms: i64) -> Option<IntentError> {
    match i.effective_status(now_ms) {
        Status::AwaitingPayment => None,
        Status::Expired => Some(IntentError::Expired),
        _ => Some(IntentError::NotPayable),
    }
}

/// After a lost compare-and-set: say why, from the intent as it is now.
pub(super) async fn lost_race(s: &AppState, id: &str) -> IntentError {
    match repo::get(&s.db, id).await {
        Ok(Some(i)) => not_payable(&i, crate::clock::now_ms()).unwrap_or(IntentError::NotPayable),
        Ok(None) => IntentError::NotFound,
        Err(e) => e.into(),
    }
}
