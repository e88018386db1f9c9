//! The keeper: what a crash, a lost mempool or an operator can leave behind.
//!
//! - A sender whose chain stopped advancing (its mined nonce has not moved
//!   since the last look, yet nonces below its next one were taken) gets
//!   every stored transaction in that range sent again, as it is; a nonce
//!   that no stored transaction can use any more is filled with a
//!   zero-value transfer to itself, stored before it is sent. At start-up
//!   this runs at once.
//! - A PARTIAL_SETTLEMENT intent whose stored payout did land moves to
//!   TARGET_SETTLED with its `target_payment`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::Address;

use super::{evm, Engine};
use crate::adapter::bindings::types::ReceiptStatus;
use crate::chain::ChainClient;
use crate::intent::{now_ms, Status};
use crate::store::{intents, settlement as repo};

/// Nonces looked at per sender and pass.
const WINDOW: u64 = 256;

impl Engine {
    /// Keep checking until the process ends.
    pub fn spawn_keeper(self: &Arc<Self>) {
        let me = self.clone();
        tokio::spawn(async move {
            let every = Duration::from_secs(me.deps.config.service.nonce_check_seconds.max(1));
            let mut seen = HashMap::new();
            loop {
                if let Err(e) = me.check_nonces(&mut seen).await {
                    tracing::warn!(error = %format!("{e:#}"), "nonce check failed");
                }
                if let Err(e) = me.reconcile().await {
                    tracing::warn!(error = %format!("{e:#}"), "reconciliation failed");
                }
                tokio::time::sleep(every).await;
            }
        });
    }

    /// One look at every sender. `seen` holds each sender's mined nonce at
    /// the previous look; a sender not seen before (start-up) is acted on.
    pub async fn check_nonces(&self, seen: &mut HashMap<(String, String), u64>) -> anyhow::Result<()> {
        for (chain_name, sender, next) in repo::nonce_senders(&self.deps.db).await? {
            let Some(chain) = self.deps.registry.chain(&chain_name) else { continue };
            let Ok(from) = sender.parse::<Address>() else { continue };
            let mined = match evm::mined_nonce(&chain, from).await {
                Ok(n) => n,
                Err(e) => {
                    tracing::debug!(chain = %chain_name, error = %e, "nonce check: chain unavailable");
                    continue;
                }
            };
            crate::telemetry::nonce_lag(&chain_name, &sender, next.saturating_sub(mined));
            let before = seen.insert((chain_name.clone(), sender.clone()), mined);
            if mined >= next || before.is_some_and(|b| b != mined) {
                continue; // nothing outstanding, or the chain is moving
            }
            self.unblock(&chain, from, mined, next.min(mined + WINDOW)).await?;
        }
        Ok(())
    }

    /// Make sure the node holds a transaction for every nonce of `from` in
    /// `first..end`.
    async fn unblock(&self, chain: &ChainClient, from: Address, first: u64, end: u64) -> anyhow::Result<()> {
        let sender = from.to_checksum(None);
        let stored = repo::signed_at_nonces(&self.deps.db, &chain.chain, &sender, first, end).await?;
        for nonce in first..end {
            let mut held = false;
            for (_, raw, hash) in stored.iter().filter(|(n, _, _)| *n == nonce) {
                match evm::broadcast(chain, raw).await {
                    Ok(_) => {
                        held = true;
                        break;
                    }
                    Err(evm::SendError::Refused(why)) => {
                        tracing::warn!(chain = %chain.chain, %sender, nonce, tx = %hash, %why, "stored transaction refused by the node");
                    }
                    Err(e) => {
                        // Unreachable node or unfunded sender: a filler would not get in either.
                        tracing::warn!(chain = %chain.chain, %sender, nonce, error = %e, "cannot resend a stalled sender's transactions");
                        return Ok(());
                    }
                }
            }
            if held {
                continue;
            }
            let Some(signer) = self.keys.signer_by_address(&sender).await? else {
                tracing::error!(chain = %chain.chain, %sender, nonce, "nonce gap on a wallet this keystore does not hold");
                return Ok(());
            };
            let chain_id = self.deps.config.chains.get(&chain.chain).and_then(|c| c.chain_id).unwrap_or(0);
            match evm::fill_nonce(&self.deps.db, chain, chain_id, &self.relay.fees, &signer, nonce).await {
                Ok(Some(hash)) => tracing::warn!(chain = %chain.chain, %sender, nonce, tx = %hash, "filled a nonce gap"),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(chain = %chain.chain, %sender, nonce, error = %e, "could not fill a nonce gap");
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// PARTIAL_SETTLEMENT intents whose stored payout landed after all.
    pub async fn reconcile(&self) -> anyhow::Result<()> {
        let db = &self.deps.db;
        for id in repo::ids_with_status(db, Status::PartialSettlement, 200).await? {
            let stored = repo::list_txs(db, &id, "target").await?;
            let (Some(last), Some(i)) = (stored.last(), intents::get(db, &id).await?) else { continue };
            let Some(chain) = self.deps.registry.chain(&i.target_chain) else { continue };
            let Ok(Some(json)) = evm::receipt(&chain, &last.tx_hash).await else { continue };
            let adapter = self.adapter(&i.target_chain, &i.target_asset)?;
            let proxy = self.keys.address(crate::keys::PROXY).await?;
            let a = adapter.clone();
            let amount = i.receiving_amount.clone();
            let units = tokio::task::spawn_blocking(move || a.to_base_units(&amount)).await??;
            let Ok(units) = units else { continue };
            let paid = super::transfer_of(&proxy, &i.merchant_recipient, &units);
            let receipt = Arc::new(evm::Receipt { text: json.to_string(), json });
            if let ReceiptStatus::Settled(_) = self.read_receipt(&adapter, paid, receipt).await? {
                if repo::reconciled(db, &id, &last.tx_hash, now_ms()).await? {
                    tracing::warn!(intent = %id, tx = %last.tx_hash, "a stored payout landed: PARTIAL_SETTLEMENT -> TARGET_SETTLED");
                }
            }
        }
        Ok(())
    }
}
