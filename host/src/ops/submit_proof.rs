//! Take a payer's x402 proof for an intent: verified at once by the payer
//! adapter, accepted by compare-and-set; the engine settles it after.

use super::intent_error::{load, lost_race, not_payable, IntentError};
use crate::intent::{requirements, Intent};
use crate::state::AppState;
use crate::store::intents::{self as repo, Acceptance};

/// The accepted intent (as it was read; it is PENDING now).
pub async fn submit(s: &AppState, id: &str, proof: Option<&str>) -> Result<Intent, IntentError> {
    let proof = proof.filter(|p| !p.trim().is_empty()).ok_or_else(|| IntentError::Invalid("settle_proof is required".into()))?;
    let i = load(s, id).await?;
    if let Some(e) = not_payable(&i, crate::clock::now_ms()) {
        return Err(e);
    }
    let proof = requirements::decode_proof(proof).ok_or_else(|| {
        IntentError::Invalid("proof validation failed: settle_proof is neither base64 of a JSON object nor a JSON object".into())
    })?;
    let adapter = s
        .registry
        .asset(&i.payer_chain, &i.payer_asset)
        .ok_or_else(|| IntentError::NotServed(i.payer_chain.clone(), i.payer_asset.clone()))?;
    let paid = adapter.verify(&i.payment_requirements, &proof).await??;

    let acceptance = Acceptance { settle_proof: Some(&proof), replay_key: Some(&paid.replay_key), payer: Some(&paid.payer) };
    match repo::accept(&s.db, &i.id, &acceptance, crate::clock::now_ms()).await {
        Ok(true) => {
            s.work.notify_one();
            Ok(i)
        }
        Ok(false) => Err(lost_race(s, &i.id).await),
        Err(e) if e.is_duplicate() => Err(IntentError::AuthorizationUsed),
        Err(e) => Err(e.into()),
    }
}
