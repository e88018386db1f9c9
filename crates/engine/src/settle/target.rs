//! The target leg: SOURCE_SETTLED → TARGET_SETTLING → TARGET_SETTLED. The
//! service's proxy wallet authorizes the payout once (the first stored
//! authorization is the one used), the relayer settles it on the target
//! chain, and the receipt must show the merchant paid. A payout that cannot
//! go out returns to SOURCE_SETTLED and is retried; PARTIAL_SETTLEMENT only
//! when the retry budget is spent and no stored payout can land.

use std::time::Duration;

use alloy_primitives::keccak256;

use super::{backoff, elapsed_since, expected, Engine, Next, StepError, PAYOUT_VALIDITY_SECS};
use crate::adapter::Answer;
use crate::clock::now_ms;
use crate::failure::{Failure, Reason};
use crate::family::keys::Role;
use crate::family::Share;
use crate::intent::{Intent, Status};
use crate::payment::{ProofError, ReceiptStatus, Terms, Transfer};
use crate::store::books::{Credit, Purpose};
use crate::store::settlement as repo;
use crate::store::transition::intents as transition;

/// Did the intent's quote include opening the recipient's token account?
fn charged_account(i: &Intent) -> bool {
    serde_json::from_str::<serde_json::Value>(&i.fee_breakdown).is_ok_and(|b| b.get(crate::intent::fees::RECIPIENT_ACCOUNT_FEE).is_some())
}

impl Engine {
    pub(super) async fn target_leg(&self, i: Intent, read: Option<Vec<(String, repo::StoredTx)>>) -> anyhow::Result<Next> {
        let db = &self.deps.db;
        let adapter = self.steps.adapter(&i.target_chain, &i.target_asset)?;
        let driver = self.steps.driver(&i.target_chain)?;
        // The merchant is paid by the service's proxy wallet on both flows: a
        // `/v2` agent pays once, on the payer chain.
        let wallet = Role::Proxy;
        let proxy = driver.address(&wallet).await?;
        let units = adapter.to_base_units(&i.receiving_amount).await.or_refused("to-base-units")?;
        let terms = Terms { amount: units.clone(), pay_to: i.merchant_recipient.clone(), max_timeout_seconds: PAYOUT_VALIDITY_SECS };
        let req = adapter.requirements(&terms).await.or_refused("requirements")?;

        let fresh = match &i.target_settle_proof {
            Some(_) => None,
            // Listed since the payer paid: nothing is authorized to it. The
            // payer's money moved, so the intent needs reconciliation (a refund).
            None if self.deps.sanctions.is_listed(&i.merchant_recipient) => {
                crate::telemetry::sanctions_hit("payout");
                tracing::warn!(intent = %i.id, "the recipient is on a sanctions list; no payout; needs reconciliation");
                let from = [Status::TargetSettling, Status::SourceSettled];
                transition::transition_from(db, &i.id, &from, Status::PartialSettlement, Some(&Failure::Declined.into()), now_ms()).await?;
                return Ok(Next::Done);
            }
            None => {
                // A recipient whose token account was closed since create
                // would have the proxy pay to open it, uncharged (rent
                // farming): the payout waits for the recipient instead.
                match driver.can_receive(&i.target_chain, &adapter.ctx.token, &i.merchant_recipient).await {
                    Ok(true) => {}
                    Ok(false) if charged_account(&i) => {}
                    Ok(false) => return self.payout_failed(&i, Failure::RecipientAccountMissing, "recipient account missing").await,
                    Err(e) => return self.payout_failed(&i, Failure::ChainUnavailable, &e.to_string()).await,
                }
                let transfer = Transfer {
                    sender: proxy.clone(),
                    recipient: i.merchant_recipient.clone(),
                    amount: units,
                    valid_after: 0,
                    valid_before: (now_ms() / 1000) as u64 + PAYOUT_VALIDITY_SECS,
                    nonce: keccak256(format!("{}:target", i.id)).to_vec(),
                };
                Some(self.steps.authorize(&adapter, driver.as_ref(), &wallet, &req, transfer).await?)
            }
        };
        // The first payout authorization ever stored is the one used.
        let Some(proof) = self.payouts.write(db, transition::StartPayout { id: i.id.clone(), proof: fresh }).await? else {
            return Ok(Next::Later(Duration::ZERO, false));
        };
        let stored = super::leg_txs(db, &i.id, "target", read).await?;
        if let Err(e) = self.steps.prepare_wallet(&i.id, "target", &adapter, &wallet, &proxy, &req.amount).await {
            let code = match e {
                StepError::NotSent(Failure::ChainUnavailable, _) => Failure::ChainUnavailable,
                StepError::NotSent(Failure::RelayerUnfunded, _) => Failure::PayoutWalletShort,
                _ => Failure::PayoutNotDispatched,
            };
            return self.payout_failed(&i, code, &format!("payout wallet not ready: {e:?}")).await;
        }
        let steps = match adapter.settle(&req, &proof).await? {
            Ok(s) => s,
            // The stored authorization expired (a Solana blockhash, an EVM
            // validBefore) and no transaction of it is stored: none was
            // sent, or each was dropped once its driver showed it can never
            // land (`run_steps`). Only then is a new one built: the merchant
            // is paid once.
            Err(ProofError::Expired) if stored.is_empty() => {
                if transition::renew_payout(db, &i.id, &proof, now_ms()).await? {
                    tracing::info!(intent = %i.id, "payout authorization expired unsent; authorizing a new one");
                }
                return Ok(Next::Later(Duration::ZERO, false));
            }
            Err(e) if stored.is_empty() => {
                if let Some(next) = self.payout_landed_elsewhere(&i, &adapter, &req, &proof, &proxy).await? {
                    return Ok(next);
                }
                let code = match e {
                    ProofError::ChainUnavailable(_) => Failure::ChainUnavailable,
                    ProofError::InsufficientFunds(_) => Failure::PayoutWalletShort,
                    _ => Failure::PayoutNotDispatched,
                };
                return self.payout_failed(&i, code, &format!("payout not dispatchable: {e:?}")).await;
            }
            Err(_) => vec![],
        };
        let share = match self.steps.share_now(&i.id, "target", Share::TRANSFERS, !stored.is_empty()).await {
            Ok(share) => share,
            Err(e) => return Ok(self.later_unavailable(&i, &format!("{e:?}"))),
        };
        match self.steps.run_steps(&i.id, "target", &i.target_chain, &Role::Relayer, &steps, stored, &share, true).await {
            Ok((hash, receipt)) => {
                let claim = self.steps.claim(
                    &i.target_chain,
                    &adapter,
                    &hash,
                    &receipt,
                    &expected(&proxy, &req),
                    &proof,
                    Purpose::Payout,
                    &i.id,
                )?;
                match self.steps.read_receipt(&adapter, expected(&proxy, &req), receipt).await? {
                    ReceiptStatus::Settled(_) => {
                        let settled =
                            transition::LegSettled { id: i.id.clone(), leg: transition::Leg::Target, tx_hash: hash.clone(), credit: claim };
                        if !self.settled.write(db, settled).await? {
                            // The payout's own authorization made no movement the
                            // books can give it: never expected; an operator looks.
                            tracing::error!(intent = %i.id, tx = %hash, "the payout's transfer is not in the books for this intent; waiting");
                            crate::telemetry::books_refused(&i.target_chain, "payout");
                            return Ok(Next::Later(Duration::from_secs(30), false));
                        }
                        tracing::info!(intent = %i.id, tx = %hash, "payment settled");
                        crate::telemetry::settlement_leg(&i.target_chain, "target", "settled", i.source_settled_at.map(elapsed_since));
                        Ok(Next::Recorded)
                    }
                    ReceiptStatus::Failed(m) => {
                        if let Some(next) = self.payout_landed_elsewhere(&i, &adapter, &req, &proof, &proxy).await? {
                            return Ok(next);
                        }
                        // A call that failed alone inside a batch goes out again.
                        self.steps.failed_call_retryable(&i.id, "target", &i.target_chain, &hash, &adapter, &req, &proof).await?;
                        self.payout_failed(&i, Failure::PayoutNotDispatched, &m).await
                    }
                    ReceiptStatus::Pending => Ok(Next::Later(Duration::from_secs(1), false)),
                }
            }
            // Out and unconfirmed: the intent stays TARGET_SETTLING.
            Err(StepError::Parked(tx)) => Ok(self.park(&i, &i.target_chain, tx)),
            Err(StepError::Pending(m)) => {
                tracing::info!(intent = %i.id, detail = %m, "payout sent; waiting for its receipt");
                Ok(Next::Later(Duration::from_secs(2), false))
            }
            Err(StepError::NotSent(code, m)) => self.payout_failed(&i, code, &m).await,
            Err(StepError::WouldRevert(m)) => {
                if let Some(next) = self.payout_landed_elsewhere(&i, &adapter, &req, &proof, &proxy).await? {
                    return Ok(next);
                }
                // The payout wallet short is the usual reason a payout would
                // revert: let the adapter check the stored authorization.
                let short = match adapter.verify(&req, &proof).await? {
                    Ok(paid) => matches!(adapter.preflight(&paid).await?, Err(ProofError::InsufficientFunds(_))),
                    Err(_) => false,
                };
                let code = if short { Failure::PayoutWalletShort } else { Failure::PayoutNotDispatched };
                self.payout_failed(&i, code, &m).await
            }
            Err(StepError::Reverted(m)) | Err(StepError::OverGasCap(m)) => self.payout_failed(&i, Failure::PayoutNotDispatched, &m).await,
        }
    }

    /// The payout's own authorization was landed by another sender (copied
    /// from a public mempool: a Multicall3 batch anyone may send again):
    /// the merchant was paid, so the intent says so, with that transaction
    /// and its movement in the books (its fee not the relayer's).
    async fn payout_landed_elsewhere(
        &self,
        i: &Intent,
        adapter: &std::sync::Arc<crate::adapter::AssetAdapter>,
        req: &crate::payment::PaymentRequirements,
        proof: &str,
        proxy: &str,
    ) -> anyhow::Result<Option<Next>> {
        let since = i.source_settled_at.unwrap_or(i.created_at);
        // A chain that cannot be asked says nothing: the usual retry follows.
        let found = match self.steps.moved_anyway(&i.target_chain, adapter, expected(proxy, req), proof, since).await {
            Ok(found) => found,
            Err(e) => {
                tracing::info!(intent = %i.id, error = %e, "could not look for the payout landed by another sender");
                None
            }
        };
        let Some((tx, movements)) = found else { return Ok(None) };
        let credit = Credit {
            chain: i.target_chain.clone(),
            purpose: Purpose::Payout,
            owner: i.id.clone(),
            candidates: movements,
            relayer_paid: false,
        };
        let settled = transition::LegSettled { id: i.id.clone(), leg: transition::Leg::Target, tx_hash: tx.clone(), credit };
        if !self.settled.write(&self.deps.db, settled).await? {
            tracing::error!(intent = %i.id, tx = %tx, "the payout landed by another sender is another payment's in the books; waiting");
            crate::telemetry::books_refused(&i.target_chain, "payout");
            return Ok(Some(Next::Later(Duration::from_secs(30), false)));
        }
        tracing::warn!(intent = %i.id, tx = %tx, "the payout's authorization was landed by another sender; the merchant was paid");
        crate::telemetry::settlement_leg(&i.target_chain, "target", "settled", i.source_settled_at.map(elapsed_since));
        Ok(Some(Next::Recorded))
    }

    /// The payout could not be dispatched: back to SOURCE_SETTLED and retry
    /// with backoff. PARTIAL_SETTLEMENT only once the retry budget is spent
    /// and no stored payout transaction can still land.
    async fn payout_failed(&self, i: &Intent, code: Failure, detail: &str) -> anyhow::Result<Next> {
        let db = &self.deps.db;
        let (attempts, since) = repo::attempts(db, &i.id).await?;
        let budget = Duration::from_secs(self.deps.config.service.payout_retry_hours * 3600);
        let spent = Duration::from_millis((now_ms() - since).max(0) as u64) >= budget;
        tracing::warn!(intent = %i.id, attempts, code = code.code(), detail, "payout not dispatched; will retry");
        if spent && !self.payout_can_land(i).await {
            let why = Reason::from(Failure::NeedsReconciliation);
            let from = [Status::TargetSettling, Status::SourceSettled];
            transition::transition_from(db, &i.id, &from, Status::PartialSettlement, Some(&why), now_ms()).await?;
            tracing::error!(intent = %i.id, "payout retry budget spent and no stored payout can land: needs reconciliation");
            crate::telemetry::settlement_leg(&i.target_chain, "target", "partial", i.source_settled_at.map(elapsed_since));
            return Ok(Next::Done);
        }
        // The current reason is recorded even when it was SOURCE_SETTLED already.
        let from = [Status::TargetSettling, Status::SourceSettled];
        transition::transition_from(db, &i.id, &from, Status::SourceSettled, Some(&code.into()), now_ms()).await?;
        crate::telemetry::settlement_leg(&i.target_chain, "target", "retried", None);
        Ok(Next::Later(backoff(attempts, self.max_backoff()), true))
    }

    /// Could a stored payout transaction of `i` still land? A payout that
    /// landed is recorded, or reconciled, as TARGET_SETTLED. When the chain
    /// cannot be asked, it may still land.
    async fn payout_can_land(&self, i: &Intent) -> bool {
        let Ok(stored) = repo::list_txs(&self.deps.db, &i.id, "target").await else { return true };
        let Ok(driver) = self.steps.driver(&i.target_chain) else { return true };
        for t in &stored {
            if driver.can_land(&i.target_chain, t).await {
                return true;
            }
        }
        false
    }
}
