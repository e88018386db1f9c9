//! Stalled senders. A sender whose chain stopped advancing (its mined nonce
//! has not moved since the last look, yet nonces below its next one were
//! taken) gets every stored transaction in that range sent again, as it is;
//! a nonce that no stored transaction can use any more is filled with a
//! zero-value transfer to itself, stored before it is sent. A sender not
//! seen before (start-up) is acted on at once.

use alloy_primitives::Address;

use super::tx;
use super::EvmDriver;
use crate::family::chain::ChainClient;
use crate::family::{SendError, Upkeep};
use crate::store::settlement as repo;

/// Nonces looked at per sender and pass.
const WINDOW: u64 = 256;

impl EvmDriver {
    /// One look at every sender. `seen` holds each sender's mined nonce at
    /// the previous look.
    pub(super) async fn check_nonces(&self, seen: &mut Upkeep) -> anyhow::Result<()> {
        for (chain_name, sender, next) in repo::nonce_senders(&self.db).await? {
            let Some(chain) = self.chains.get(&chain_name) else { continue };
            let Ok(from) = sender.parse::<Address>() else { continue };
            let mined = match tx::mined_nonce(&chain, from).await {
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
        let stored = repo::signed_at_nonces(&self.db, &chain.chain, &sender, first, end).await?;
        for nonce in first..end {
            let mut held = false;
            for (_, raw, hash) in stored.iter().filter(|(n, _, _)| *n == nonce) {
                match tx::broadcast(chain, raw).await {
                    Ok(_) => {
                        held = true;
                        break;
                    }
                    Err(SendError::Refused(why)) => {
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
            match tx::fill_nonce(&self.db, chain, self.net(&chain.chain), &self.relay.fees, &signer, nonce).await {
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
}
