//! Pay an agent's intent from its hosted wallet: accept it for the engine,
//! then wait (bounded) for the outcome so an agent usually gets it at once.

use std::time::Duration;

use super::intent_error::{load_owned, lost_race, not_payable, IntentError};
use crate::failure::Failure;
use crate::intent::{Intent, Status};
use crate::state::AppState;
use crate::store::agents::Agent;
use crate::store::intents as repo;
use crate::store::transition::intents::{Accept, Accepted};

/// The intent as it was read, and the status it had reached when the wait
/// ended.
pub async fn execute(s: &AppState, agent: &Agent, id: &str) -> Result<(Intent, Status), IntentError> {
    let i = load_owned(s, id, agent).await?;
    if let Some(e) = not_payable(&i, crate::clock::now_ms()) {
        return Err(e);
    }
    // No proof (the hosted wallet authorizes in settlement) and no float
    // check: the agent's own wallet pays, and a payout the float cannot
    // make yet waits in SOURCE_SETTLED (`payout_wallet_short`) until the
    // operator funds the wallet, as `/v2` has always done.
    let none =
        Accept { id: i.id.clone(), settle_proof: None, replay_key: None, payer: None, reserve: None, now_ms: crate::clock::now_ms() };
    if s.acceptances.write(&s.db, none).await? != Accepted::Yes {
        return Err(lost_race(s, &i.id).await);
    }
    s.work.notify_one();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(s.config.service.execute_wait_seconds);
    let mut status = Status::Pending;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = repo::get(&s.db, &i.id).await?.ok_or(IntentError::NotFound)?;
        status = now.status;
        // The engine put it back to AWAITING_PAYMENT: the agent funds its
        // wallet and executes again.
        if status == Status::AwaitingPayment && now.error_code == Some(Failure::AgentWalletShort) {
            return Err(IntentError::WalletShort);
        }
        // The screen in settlement declined the wallet (SPEC: 403, the
        // generic body); the intent ends BLOCKED.
        if status == Status::Blocked {
            return Err(IntentError::Declined);
        }
        if matches!(status, Status::TargetSettled | Status::VerificationFailed | Status::PartialSettlement) {
            break;
        }
    }
    Ok((i, status))
}
