//! The source leg: PENDING → SOURCE_SETTLED, or VERIFICATION_FAILED /
//! BLOCKED, or back to AWAITING_PAYMENT when a `/v2` agent's wallet is
//! short. The payer's proof is verified again, screened, settled on the
//! payer chain by the relayer, and the receipt must show the transfer.

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::keccak256;

use super::{expected, Engine, Next, StepError};
use crate::adapter::{Answer, AssetAdapter};
use crate::clock::now_ms;
use crate::failure::{Failure, Reason};
use crate::family::keys::Role;
use crate::family::Share;
use crate::intent::{Intent, Status};
use crate::payment::{Movement, PaymentRequirements, ProofError, ReceiptStatus, Transfer, VerifiedPayment};
use crate::store::books::{Credit, Purpose};
use crate::store::transition::intents as transition;
use crate::store::{intents, settlement as repo};

impl Engine {
    pub(super) async fn source_leg(&self, mut i: Intent, read: Option<Vec<(String, repo::StoredTx)>>) -> anyhow::Result<Next> {
        let db = &self.deps.db;
        let adapter = self.steps.adapter(&i.payer_chain, &i.payer_asset)?;
        let req = i.payment_requirements.clone();
        if i.settle_proof.is_none() {
            // `/v2` execute: the agent's hosted wallet authorizes the payment.
            let Some(agent) = i.agent_id.clone() else {
                return self.fail(&i, Status::VerificationFailed, Failure::ProofInvalid.into()).await;
            };
            let driver = self.steps.driver(&i.payer_chain)?;
            let wallet = Role::Agent(agent);
            let sender = driver.address(&wallet).await?;
            let now = (now_ms() / 1000) as u64;
            let transfer = Transfer {
                sender: sender.clone(),
                recipient: req.pay_to.clone(),
                amount: req.amount.clone(),
                valid_after: now.saturating_sub(60),
                valid_before: now + 600,
                nonce: keccak256(format!("{}:source", i.id)).to_vec(),
            };
            // A wallet with no native coin for gas pays a Permit2 asset with a
            // permit the relayer submits; one that has gas approves once. One
            // sponsored payment per wallet and asset is in flight at a time
            // (the lock, then the check below), so two never sign the same
            // token nonce.
            let held = self.steps.wallet_lock(&i.payer_chain, &i.payer_asset, &sender).await.lock_owned().await;
            let asset = &self.deps.config.chains[&i.payer_chain].assets[&i.payer_asset];
            let grant = match driver.sponsored_allowance(&i.payer_chain, asset, &wallet, &req.amount).await {
                Ok(grant) => grant,
                Err(e) => return Ok(self.later_unavailable(&i, &e.to_string())),
            };
            if grant.is_some() && intents::in_flight_from(db, &i.payer_chain, &i.payer_asset, &sender, &i.id).await? {
                return self.later_waiting(&i, Failure::AgentWalletBusy, "a sponsored payment from this wallet is settling").await;
            }
            // Held until this payment's proof is stored when it carries a
            // grant; the wallet's own setup takes the lock itself.
            let _held = match grant {
                Some(_) => Some(held),
                None => {
                    drop(held);
                    None
                }
            };
            if grant.is_none() {
                match self.steps.prepare_wallet(&i.id, "source", &adapter, &wallet, &sender, &req.amount).await {
                    Ok(()) => {}
                    Err(StepError::NotSent(code, m)) => return self.later_waiting(&i, code, &m).await,
                    Err(StepError::Pending(m) | StepError::Parked(m)) => return Ok(self.later_unavailable(&i, &m)),
                    Err(StepError::WouldRevert(m)) | Err(StepError::Reverted(m)) | Err(StepError::OverGasCap(m)) => {
                        tracing::warn!(intent = %i.id, detail = %m, "agent wallet could not approve its token spender");
                        return self.fail(&i, Status::VerificationFailed, Failure::AgentWalletNotReady.into()).await;
                    }
                }
            }
            let mut proof = self.steps.authorize(&adapter, driver.as_ref(), &wallet, &req, transfer).await?;
            if let Some((name, value)) = grant {
                proof = super::with_extension(&proof, name, value)?;
            }
            let paid = adapter.verify(&req, &proof).await.or_refused("verify (own proof)")?;
            match adapter.preflight(&paid).await? {
                Ok(()) => {}
                Err(ProofError::ChainUnavailable(m)) => return Ok(self.later_unavailable(&i, &m)),
                // The agent can fund its wallet and execute again.
                Err(ProofError::InsufficientFunds(m)) => {
                    tracing::info!(intent = %i.id, detail = %m, "agent wallet is short; the intent awaits payment again");
                    transition::back_to_awaiting(db, &i.id, &Failure::AgentWalletShort.into(), now_ms()).await?;
                    return Ok(Next::Done);
                }
                Err(e) => return self.fail(&i, Status::VerificationFailed, Reason::proof(&e)).await,
            }
            transition::set_source_proof(db, &i.id, &proof, &paid.replay_key, &paid.payer).await?;
            i = intents::get(db, &i.id).await?.ok_or_else(|| anyhow::anyhow!("intent vanished"))?;
        }
        let proof = i.settle_proof.clone().unwrap_or_default();
        let stored = super::leg_txs(db, &i.id, "source", read).await?;
        let sent_before = !stored.is_empty();

        // Verified once, at acceptance, which stored its payer and replay key:
        // the adapter's `settle` checks the proof's window and signature
        // again offline before building anything (a proof that went stale in
        // the queue is refused there), so only a proof taken without those
        // (an older row) is verified here.
        let accepted = match (&i.payer, &i.replay_key) {
            (Some(payer), Some(key)) => Some(VerifiedPayment {
                payer: payer.clone(),
                pay_to: req.pay_to.clone(),
                amount: req.amount.clone(),
                valid_after: 0,
                valid_before: 0,
                replay_key: key.clone(),
            }),
            _ => None,
        };
        let payment = match accepted {
            Some(p) => p,
            None => match adapter.verify(&req, &proof).await? {
                Ok(p) => p,
                Err(ProofError::ChainUnavailable(m)) => return Ok(self.later_unavailable(&i, &m)),
                // A transaction already went out for it: its receipt decides.
                Err(_) if sent_before => return self.resume_source(i, adapter, req, proof, None, stored).await,
                Err(e) => return self.fail(&i, Status::VerificationFailed, Reason::proof(&e)).await,
            },
        };
        // The payer and the merchant both, before any money moves.
        if self.deps.sanctions.is_listed(&payment.payer) || self.deps.sanctions.is_listed(&i.merchant_recipient) {
            crate::telemetry::sanctions_hit("settlement");
            return self.fail(&i, Status::Blocked, Failure::Declined.into()).await;
        }
        self.resume_source(i, adapter, req, proof, (!sent_before).then_some(payment), stored).await
    }

    /// The adapter's chain-state check of a payment not yet sent: `Some`
    /// says how the pass ends when the payment cannot settle.
    async fn preflight(&self, i: &Intent, adapter: &Arc<AssetAdapter>, payment: &VerifiedPayment) -> anyhow::Result<Option<Next>> {
        Ok(match adapter.preflight(payment).await? {
            Ok(()) => None,
            Err(ProofError::ChainUnavailable(m)) => Some(self.later_unavailable(i, &m)),
            Err(e) => Some(self.fail(i, Status::VerificationFailed, Reason::proof(&e)).await?),
        })
    }

    /// Settle the source leg. `fresh` is the verified payment when nothing
    /// was sent for it yet. A settlement the chain checks as it is sent
    /// (`checked_on_send`) is preflighted only to explain a refusal;
    /// anything longer (a payer's approve goes first) is preflighted up front.
    async fn resume_source(
        &self,
        i: Intent,
        adapter: Arc<AssetAdapter>,
        req: PaymentRequirements,
        proof: String,
        fresh: Option<VerifiedPayment>,
        stored: Vec<repo::StoredTx>,
    ) -> anyhow::Result<Next> {
        let steps = match adapter.settle(&req, &proof).await? {
            Ok(s) => s,
            Err(ProofError::ChainUnavailable(m)) => return Ok(self.later_unavailable(&i, &m)),
            // Refused as it stands now (expired, used): unless someone else
            // landed it in the meantime.
            Err(e) if stored.is_empty() => return self.source_not_landed(&i, &adapter, &req, &proof, Reason::proof(&e)).await,
            Err(_) => vec![], // signed before: only its receipt is left to read
        };
        let one_call = super::checked_on_send(&steps);
        if let Some(payment) = fresh.as_ref().filter(|_| !one_call) {
            if let Some(next) = self.preflight(&i, &adapter, payment).await? {
                return Ok(next);
            }
        }
        let share = match self.steps.share_now(&i.id, "source", Share::TRANSFERS, !stored.is_empty()).await {
            Ok(share) => share,
            Err(e) => return Ok(self.later_unavailable(&i, &format!("{e:?}"))),
        };
        match self.steps.run_steps(&i.id, "source", &i.payer_chain, &Role::Relayer, &steps, stored, &share, true).await {
            Ok((hash, receipt)) => {
                let payer = i.payer.clone().unwrap_or_default();
                let claim =
                    self.steps.claim(&i.payer_chain, &adapter, &hash, &receipt, &expected(&payer, &req), &proof, Purpose::Source, &i.id)?;
                match self.steps.read_receipt(&adapter, expected(&payer, &req), receipt).await? {
                    ReceiptStatus::Settled(_) => self.source_landed_by(&i, hash, claim).await,
                    ReceiptStatus::Failed(m) => {
                        tracing::info!(intent = %i.id, detail = %m, "source transaction mined without the transfer");
                        // Its call failed alone inside a batch whose others
                        // landed: sent again while the authorization is still good.
                        if self.steps.failed_call_retryable(&i.id, "source", &i.payer_chain, &hash, &adapter, &req, &proof).await? {
                            return Ok(Next::Later(Duration::from_secs(1), true));
                        }
                        self.source_not_landed(&i, &adapter, &req, &proof, Failure::SourceReverted.into()).await
                    }
                    ReceiptStatus::Pending => Ok(Next::Later(Duration::from_secs(1), false)),
                }
            }
            Err(StepError::NotSent(code, m)) => self.later_waiting(&i, code, &m).await,
            Err(StepError::Pending(m)) => Ok(self.later_unavailable(&i, &m)),
            Err(StepError::Parked(tx)) => Ok(self.park(&i, &i.payer_chain, tx)),
            Err(StepError::WouldRevert(m)) => {
                // Nothing went out from here. Someone else may have landed the
                // authorization; if not, let the adapter say why, if it can.
                if let Some((tx, movements)) = self.moved_elsewhere(&i, &adapter, &req, &proof).await? {
                    return self.source_landed_by(&i, tx, self.foreign(&i, movements)).await;
                }
                if let Some(payment) = fresh.as_ref().filter(|_| one_call) {
                    if let Some(next) = self.preflight(&i, &adapter, payment).await? {
                        return Ok(next);
                    }
                }
                tracing::info!(intent = %i.id, detail = %m, "source settlement would revert");
                let why = Reason {
                    code: Failure::SourceReverted,
                    message: "source settlement failed: the transaction would revert and the payer's authorization was not used on chain; \
                              nothing was credited"
                        .into(),
                };
                self.source_not_landed(&i, &adapter, &req, &proof, why).await
            }
            Err(StepError::OverGasCap(m)) => {
                tracing::warn!(intent = %i.id, detail = %m, "the payer's contract makes its settlement too costly; nothing sent");
                self.source_not_landed(&i, &adapter, &req, &proof, Failure::GasCapExceeded.into()).await
            }
            Err(StepError::Reverted(m)) => {
                tracing::info!(intent = %i.id, detail = %m, "source transaction reverted");
                self.source_not_landed(&i, &adapter, &req, &proof, Failure::SourceReverted.into()).await
            }
        }
    }

    /// Did the payer's authorization move the money by someone else's
    /// transaction? `Err` when the chain cannot say now.
    async fn moved_elsewhere(
        &self,
        i: &Intent,
        adapter: &Arc<AssetAdapter>,
        req: &PaymentRequirements,
        proof: &str,
    ) -> anyhow::Result<Option<(String, Vec<Movement>)>> {
        let Some(payer) = &i.payer else { return Ok(None) };
        // The authorization was signed for this intent's requirements, so it
        // cannot have been used before the intent existed.
        self.steps.moved_anyway(&i.payer_chain, adapter, expected(payer, req), proof, i.created_at).await
    }

    /// The books claim of a source leg settled by someone else's
    /// transaction: its movements, its fee not the relayer's.
    fn foreign(&self, i: &Intent, movements: Vec<Movement>) -> Credit {
        Credit { chain: i.payer_chain.clone(), purpose: Purpose::Source, owner: i.id.clone(), candidates: movements, relayer_paid: false }
    }

    /// The source leg is settled by `tx` (the service's, or one that landed
    /// the payer's authorization first), credited its movement in the books
    /// with its status change. The payout goes back in line behind source
    /// legs already waiting: those hold payer authorizations that expire, a
    /// payout has no deadline. A movement the books give to another payment
    /// credits nothing: the intent fails, saying so.
    async fn source_landed_by(&self, i: &Intent, tx: String, credit: Credit) -> anyhow::Result<Next> {
        let settled = transition::LegSettled { id: i.id.clone(), leg: transition::Leg::Source, tx_hash: tx.clone(), credit };
        if !self.settled.write(&self.deps.db, settled).await? {
            tracing::warn!(intent = %i.id, tx = %tx, "the transfer is credited to another payment in the books; nothing credited");
            crate::telemetry::books_refused(&i.payer_chain, "source");
            return self.fail(i, Status::VerificationFailed, Failure::CreditedElsewhere.into()).await;
        }
        crate::telemetry::settlement_leg(&i.payer_chain, "source", "settled", Some(super::elapsed_since(i.updated_at)));
        Ok(Next::Recorded)
    }

    /// The service's transaction did not move the payer's money: if it
    /// moved anyway (front-run), the leg settles with the transaction that
    /// moved it; only when the chain shows it did not is the intent failed,
    /// with `why`. When the chain cannot be asked, the intent waits.
    async fn source_not_landed(
        &self,
        i: &Intent,
        adapter: &Arc<AssetAdapter>,
        req: &PaymentRequirements,
        proof: &str,
        why: Reason,
    ) -> anyhow::Result<Next> {
        match self.moved_elsewhere(i, adapter, req, proof).await {
            Ok(Some((tx, movements))) => self.source_landed_by(i, tx, self.foreign(i, movements)).await,
            Ok(None) => self.fail(i, Status::VerificationFailed, why).await,
            Err(e) => Ok(self.later_unavailable(i, &format!("{e:#}"))),
        }
    }

    /// Nothing went out on the source leg: the intent keeps its status and
    /// shows why it waits (an unfunded relayer is an operator's problem, so
    /// it is a WARN and `/readyz` shows it); it completes once the cause is
    /// gone, which clears the code.
    async fn later_waiting(&self, i: &Intent, code: Failure, why: &str) -> anyhow::Result<Next> {
        if code == Failure::RelayerUnfunded {
            tracing::warn!(intent = %i.id, chain = %i.payer_chain, detail = why, "the relayer cannot pay gas; waiting for funds");
        } else {
            tracing::info!(intent = %i.id, code = code.code(), detail = why, "source leg not sent; retrying");
        }
        transition::transition(&self.deps.db, &i.id, i.status, i.status, Some(&code.into()), now_ms()).await?;
        Ok(Next::Later(Duration::from_secs(if code == Failure::RelayerUnfunded { 2 } else { 1 }), false))
    }
}
