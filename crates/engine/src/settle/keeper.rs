//! The keeper: what a crash, a lost mempool or an operator can leave behind.
//!
//! - Each family's driver repairs its stalled senders (`Driver::upkeep`).
//! - A PARTIAL_SETTLEMENT intent whose stored payout did land moves to
//!   TARGET_SETTLED with its `target_payment`.

use std::sync::Arc;
use std::time::Duration;

use super::Engine;
use crate::clock::now_ms;
use crate::family::keys::Role;
use crate::family::{Finality, Upkeep};
use crate::intent::Status;
use crate::payment::ReceiptStatus;
use crate::store::books::Purpose;
use crate::store::transition::intents as transition;
use crate::store::{intents, settlement as repo};

impl Engine {
    /// Keep checking until the process ends.
    pub fn spawn_keeper(self: &Arc<Self>) {
        let me = self.clone();
        tokio::spawn(async move {
            let every = Duration::from_secs(me.deps.config.service.nonce_check_seconds.max(1));
            let mut seen = Upkeep::new();
            loop {
                if let Err(e) = me.check_nonces(&mut seen).await {
                    tracing::warn!(error = %format!("{e:#}"), "sender upkeep failed");
                }
                if let Err(e) = me.reconcile().await {
                    tracing::warn!(error = %format!("{e:#}"), "reconciliation failed");
                }
                if let Err(e) = super::books::reconcile(&me.deps).await {
                    tracing::warn!(error = %format!("{e:#}"), "books reconciliation failed");
                }
                tokio::time::sleep(every).await;
            }
        });
    }

    /// One upkeep pass of every family's senders. `seen` carries each
    /// sender's progress from the previous pass.
    pub async fn check_nonces(&self, seen: &mut Upkeep) -> anyhow::Result<()> {
        for driver in self.deps.drivers.all() {
            driver.upkeep(seen).await?;
        }
        Ok(())
    }

    /// PARTIAL_SETTLEMENT intents whose stored payout landed after all.
    pub async fn reconcile(&self) -> anyhow::Result<()> {
        let db = &self.deps.db;
        for id in transition::ids_with_status(db, Status::PartialSettlement, 200).await? {
            let stored = repo::list_txs(db, &id, "target").await?;
            let (Some(last), Some(i)) = (stored.last(), intents::get(db, &id).await?) else { continue };
            let Some(driver) = self.deps.drivers.for_chain(&i.target_chain) else { continue };
            let Ok(Finality::Confirmed(receipt)) = driver.finality(&i.target_chain, &last.tx_hash, 1).await else { continue };
            let adapter = self.steps.adapter(&i.target_chain, &i.target_asset)?;
            let proxy = driver.address(&Role::Proxy).await?;
            let Ok(units) = adapter.to_base_units(&i.receiving_amount).await? else { continue };
            let paid = super::transfer_of(&proxy, &i.merchant_recipient, &units);
            let proof = i.target_settle_proof.clone().unwrap_or_default();
            let claim = self.steps.claim(&i.target_chain, &adapter, &last.tx_hash, &receipt, &paid, &proof, Purpose::Payout, &id)?;
            if let ReceiptStatus::Settled(_) = self.steps.read_receipt(&adapter, paid, receipt).await? {
                if transition::reconciled(db, &id, &last.tx_hash, &claim, now_ms()).await? {
                    tracing::warn!(intent = %id, tx = %last.tx_hash, "a stored payout landed: PARTIAL_SETTLEMENT -> TARGET_SETTLED");
                }
            }
        }
        Ok(())
    }
}
