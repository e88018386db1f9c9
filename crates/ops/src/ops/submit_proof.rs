//! Take a payer's x402 proof for an intent: verified at once by the payer
//! adapter, accepted by compare-and-set; the engine settles it after.

use super::intent_error::{load, lost_race, not_payable, IntentError};
use crate::intent::{requirements, Intent};
use crate::state::AppState;
use crate::store::transition::intents::{Accept, Accepted, Reserve};

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
    // The payer keeps the money the payout cannot match: checked before
    // anything is verified, and again, against what is already promised,
    // in the compare-and-set that accepts the proof.
    let reserve = float(s, &i).await?;
    if let Some(r) = &reserve {
        if r.amount > r.balance {
            return Err(IntentError::FloatShort);
        }
    }
    let adapter = s
        .registry
        .asset(&i.payer_chain, &i.payer_asset)
        .ok_or_else(|| IntentError::NotServed(i.payer_chain.clone(), i.payer_asset.clone()))?;
    let paid = adapter.verify(&i.payment_requirements, &proof).await??;
    // Created by a stranger for an email: its wallet is looked up now (its
    // owner may have named one since), after the proof checked out, so that
    // asking costs a signed, funded payment. None yet: declined before any
    // money moves, and the intent still awaits payment.
    if i.merchant_recipient.is_empty() {
        resolve_recipient(s, &i).await?;
    }

    let acceptance = Accept {
        id: i.id.clone(),
        settle_proof: Some(proof),
        replay_key: Some(paid.replay_key),
        payer: Some(paid.payer),
        reserve,
        now_ms: crate::clock::now_ms(),
    };
    match s.acceptances.write(&s.db, acceptance).await {
        Ok(Accepted::Yes) => {
            s.work.notify_one();
            Ok(i)
        }
        Ok(Accepted::No) => Err(lost_race(s, &i.id).await),
        Ok(Accepted::FloatShort) => Err(IntentError::FloatShort),
        Err(e) if e.is_duplicate() => Err(IntentError::AuthorizationUsed),
        Err(e) => Err(e.into()),
    }
}

async fn resolve_recipient(s: &AppState, i: &Intent) -> Result<(), IntentError> {
    let email = i.recipient_email.as_deref().ok_or_else(|| IntentError::Invalid("the intent has no recipient".into()))?;
    let Some(wallet) = crate::store::agents::recipient(&s.db, email, &i.target_chain).await? else {
        return Err(IntentError::RecipientUnknown);
    };
    // Once: a second submit finds it set (by this one or a concurrent one).
    crate::store::intents::set_unresolved_recipient(&s.db, &i.id, &wallet).await?;
    Ok(())
}

/// The proxy wallet's float on the intent's target chain, and what this
/// intent would take from it. `None` where the float is not known: no
/// driver for the chain, no such asset in the wallet, or a node that does
/// not answer now. Then the proof is taken as during any outage, and the
/// engine pays once the node answers and the wallet can (it never pays
/// what the wallet does not hold: it waits with `payout_wallet_short`).
async fn float(s: &AppState, i: &Intent) -> Result<Option<Reserve>, IntentError> {
    let amount = i.receiving_amount.parse().map_err(|_| IntentError::Invalid("stored receiving amount is unreadable".into()))?;
    let balance = match s.floats.proxy_balance(&s.drivers, &i.target_chain, &i.target_asset).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(chain = %i.target_chain, error = %e, "payout float unreadable; the proof is taken and the payout waits for the node");
            None
        }
    };
    Ok(balance.map(|balance| Reserve { target_chain: i.target_chain.clone(), target_asset: i.target_asset.clone(), amount, balance }))
}
