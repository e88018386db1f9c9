//! A leg's transactions, in order, through the chain's family driver: a
//! stored step is sent again as it is, a new one is signed and stored before
//! it is broadcast, and each must be final before the next goes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Deps, StepError};
use crate::adapter::{AdapterFailure, Answer, AssetAdapter};
use crate::clock::now_ms;
use crate::failure::Failure;
use crate::family::keys::Role;
use crate::family::{Driver, Finality, Receipt, Resent, Share, Submit};
use crate::payment::{AdapterError, Authorization, Movement, PaymentRequirements, ReceiptStatus, SettleStep, Transfer, VerifiedPayment};
use crate::store::books::{Credit, Purpose};
use crate::store::settlement::{self as repo, TxRow};

/// Runs settle steps for whichever worker holds them: the intents engine
/// (`settle::Engine`) and the x402 worker (`x402::worker`) share one, so a
/// batch's confirmation is recorded once and a wallet is prepared once.
pub struct Steps {
    pub(crate) deps: Deps,
    setup_locks: tokio::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Transactions recorded confirmed by this replica (see `confirmed`).
    confirmed: std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::OnceCell<()>>>>,
    /// Where passes park while their transaction waits on a block.
    pub(crate) follower: super::follow::Follower,
}

/// The last pause of the quick looks at a new transaction before its pass
/// parks (1 + 2 + … + 64 ms): an instant devnet mines a moment after it
/// answers the send, later when its machine is busy, and a park costs a
/// follower tick and a lease renewal.
const INLINE_LOOKS: Duration = Duration::from_millis(64);

/// A call waiting this long for its batch gives its worker back: longer
/// than a busy instant chain's batches take (each freed worker is a claim
/// of one row, a write), shorter than the half block a rhythm holds.
const HELD_FOR_BATCH: Duration = Duration::from_millis(250);

/// Times a leg's call that failed on chain inside a batch is sent again.
const MOST_BATCH_RETRIES: i64 = 1;

impl Steps {
    pub fn new(deps: Deps) -> Arc<Steps> {
        let follower = super::follow::Follower::new(deps.db.clone(), deps.drivers.clone(), &deps.config);
        Arc::new(Steps { deps, setup_locks: Default::default(), confirmed: Default::default(), follower })
    }

    pub(crate) fn adapter(&self, chain: &str, asset: &str) -> anyhow::Result<Arc<AssetAdapter>> {
        self.deps.registry.asset(chain, asset).ok_or_else(|| anyhow::anyhow!("{chain}/{asset} is not served"))
    }

    /// The configured asset an adapter serves.
    fn asset(&self, chain: &str, adapter: &AssetAdapter) -> anyhow::Result<&crate::config::Asset> {
        self.deps
            .config
            .chains
            .get(chain)
            .and_then(|c| c.assets.get(&adapter.ctx.asset))
            .ok_or_else(|| anyhow::anyhow!("{chain}/{} is not configured", adapter.ctx.asset))
    }

    fn chain_id(&self, chain: &str) -> Option<u64> {
        self.deps.config.chains.get(chain).and_then(|c| c.chain_id)
    }

    pub(crate) fn driver(&self, chain: &str) -> anyhow::Result<Arc<dyn Driver>> {
        self.deps.drivers.for_chain(chain).ok_or_else(|| anyhow::anyhow!("no driver for {chain}'s family in this build"))
    }

    /// Have a host-held wallet authorize `transfer`: the adapter says what
    /// to sign, the family's driver signs it, the adapter assembles the proof.
    pub(crate) async fn authorize(
        &self,
        adapter: &Arc<AssetAdapter>,
        driver: &dyn Driver,
        wallet: &Role,
        req: &PaymentRequirements,
        transfer: Transfer,
    ) -> anyhow::Result<String> {
        let request = adapter.authorize(&transfer).await.or_refused("authorize")?;
        let signature = driver.sign(wallet, &request).await?;
        Ok(adapter.assemble(req, &transfer, &request, signature).await.or_refused("assemble")?)
    }

    pub(crate) async fn read_receipt(
        &self,
        adapter: &Arc<AssetAdapter>,
        payment: VerifiedPayment,
        receipt: Arc<Receipt>,
    ) -> Result<ReceiptStatus, AdapterFailure> {
        adapter.read_receipt(&payment, &receipt.text).await.or_refused("read-receipt")
    }

    /// A payment the service could not land (its call would revert, or
    /// reverted, or its authorization is refused as used or expired): did
    /// the money move anyway, under the same authorization, by someone
    /// else's transaction? The final transaction that used it, by the
    /// chain's proof of the authorization's own use (`Driver::landed`) and
    /// the adapter's reading of its receipt, with the movements it may
    /// credit. `Err` when the chain cannot say now: then nothing is concluded.
    pub(crate) async fn moved_anyway(
        &self,
        chain: &str,
        adapter: &Arc<AssetAdapter>,
        payment: VerifiedPayment,
        proof: &str,
        since_ms: i64,
    ) -> anyhow::Result<Option<(String, Vec<Movement>)>> {
        let driver = self.driver(chain)?;
        let asset = self.asset(chain, adapter)?;
        let auth = super::authorization(proof, asset.proof_kind(), self.chain_id(chain));
        if auth == Authorization::Own {
            return Ok(None);
        }
        let found = driver.landed(chain, asset, &payment, &auth, since_ms).await?;
        let confirmations = self.deps.config.chains.get(chain).map_or(1, |c| c.confirmations.max(1));
        for tx in found {
            match driver.finality(chain, &tx, confirmations).await? {
                crate::family::Finality::Confirmed(receipt) => {
                    let family = driver.family();
                    let movements: Vec<Movement> = driver
                        .movements(&tx, &receipt, &adapter.ctx.token, &payment, &auth)
                        .into_iter()
                        .map(|m| super::books::canonical(family, m))
                        .collect();
                    if movements.is_empty() {
                        continue;
                    }
                    if let ReceiptStatus::Settled(_) = self.read_receipt(adapter, payment.clone(), receipt).await? {
                        tracing::warn!(chain, tx = %tx, payer = %payment.payer, "the authorization was landed by another sender; the money moved");
                        return Ok(Some((tx, movements)));
                    }
                }
                // Mined but not final yet: come back when it is.
                crate::family::Finality::Pending => anyhow::bail!("{tx} moved the payment and is not final yet"),
                crate::family::Finality::Failed => {}
            }
        }
        Ok(None)
    }

    /// The books claim of `payment`, made under `proof`, on the confirmed
    /// transaction `tx` (`receipt`): the movements it may credit, in order.
    /// `own`: the service's relayer sent it (its fee is the payment's cost).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn claim(
        &self,
        chain: &str,
        adapter: &AssetAdapter,
        tx: &str,
        receipt: &Receipt,
        payment: &VerifiedPayment,
        proof: &str,
        purpose: Purpose,
        owner: &str,
    ) -> anyhow::Result<Credit> {
        let driver = self.driver(chain)?;
        let family = driver.family();
        let auth = super::authorization(proof, self.asset(chain, adapter)?.proof_kind(), self.chain_id(chain));
        let candidates = driver
            .movements(tx, receipt, &adapter.ctx.token, payment, &auth)
            .into_iter()
            .map(|m| super::books::canonical(family, m))
            .collect();
        Ok(Credit { chain: chain.to_string(), purpose, owner: owner.to_string(), candidates, relayer_paid: true })
    }

    /// Get every step on chain, in order: re-send what was stored, sign and
    /// store (then send) what was not. A step is known by its label, so a
    /// retry whose adapter no longer needs an earlier step (an approval that
    /// landed) still finds the steps it stored. With no steps given, the
    /// stored ones are followed. `wallet` signs what the host signs. Returns
    /// the last step's transaction id and receipt. `share`: whether the
    /// calls may share a transaction with other relayer calls (a Multicall3
    /// batch), which a call that checks its sender cannot. `park`: a step
    /// out and not final yet ends the pass with `StepError::Parked` (its
    /// owner parks on the follower) instead of holding it until final.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn run_steps(
        &self,
        owner: &str,
        leg: &str,
        chain: &str,
        wallet: &Role,
        steps: &[SettleStep],
        stored: Vec<repo::StoredTx>,
        share: &Share,
        park: bool,
    ) -> Result<(String, Arc<Receipt>), StepError> {
        let db = &self.deps.db;
        let driver = self.driver(chain).map_err(|e| StepError::NotSent(Failure::PayoutNotDispatched, format!("{e:#}")))?;
        let unavailable = |e: crate::store::StoreError| StepError::NotSent(Failure::ChainUnavailable, format!("database: {e}"));
        let mut free = stored.iter().map(|t| t.step + 1).max().unwrap_or(0);
        let plan: Vec<(i32, Option<&SettleStep>, Option<&repo::StoredTx>)> = if steps.is_empty() {
            stored.iter().map(|t| (t.step, None, Some(t))).collect()
        } else {
            steps
                .iter()
                .map(|s| match stored.iter().find(|t| t.label == s.label) {
                    Some(t) => (t.step, Some(s), Some(t)),
                    None => {
                        free += 1;
                        (free - 1, Some(s), None)
                    }
                })
                .collect()
        };
        let mut last = None;
        for (n, step, row) in plan {
            let submit = |resync: bool| {
                let step = step.ok_or_else(|| StepError::NotSent(Failure::PayoutNotDispatched, "no step to send".into()));
                let driver = driver.clone();
                async move {
                    let step = step?;
                    let row = TxRow { intent_id: owner.to_string(), leg: leg.into(), step: n, label: step.label.clone() };
                    let how = Submit { resync, share: share.clone(), payer_caused: leg == "source" || leg == "x402" };
                    let send = driver.submit(chain, wallet, &step.submission, row, how);
                    if !(share.shared() && park) {
                        return Ok::<_, StepError>(send.await?);
                    }
                    // A shared call held for its batch (a block's batch on a
                    // slow chain) frees its worker meanwhile; one sent at once
                    // (an instant chain) keeps it, so the claim loop is not
                    // asked for one row at a time.
                    tokio::pin!(send);
                    tokio::select! {
                        sent = &mut send => Ok(sent?),
                        _ = tokio::time::sleep(HELD_FOR_BATCH) => {
                            super::slot::release();
                            Ok(send.await?)
                        }
                    }
                }
            };
            let recorded = row.is_some_and(|t| t.status == "confirmed");
            let tx = match row {
                // A stored transaction is sent again, as it is; only one that
                // another took the place of is signed again (the
                // authorization inside is the same, so it still moves money once).
                Some(t) if t.status != "confirmed" && driver.resend(chain, t).await? == Resent::Superseded => {
                    repo::drop_tx(db, owner, leg, n, now_ms()).await.map_err(unavailable)?;
                    submit(true).await?
                }
                Some(t) => t.tx_hash.clone(),
                None => submit(false).await?,
            };
            let receipt = match self.wait_final(driver.as_ref(), chain, &tx, park).await? {
                Some(r) => r,
                None => {
                    let shared = repo::get_tx(db, owner, leg, n).await.map_err(unavailable)?.is_some_and(|t| driver.shared(chain, &t));
                    repo::drop_tx(db, owner, leg, n, now_ms()).await.map_err(unavailable)?;
                    if shared {
                        // Its calls passed their simulation moments before:
                        // someone else's call, or changed state, sank it. Try again.
                        return Err(StepError::NotSent(Failure::PayoutNotDispatched, format!("shared transaction {tx} failed")));
                    }
                    return Err(StepError::Reverted(format!("transaction {tx} failed")));
                }
            };
            if !recorded {
                self.confirmed(chain, &tx).await.map_err(unavailable)?;
            }
            last = Some((tx, receipt));
        }
        last.ok_or_else(|| StepError::NotSent(Failure::PayoutNotDispatched, "nothing was sent".into()))
    }

    /// How a leg's calls may share transactions now: as `share` says, but
    /// alone once a call of the leg failed inside a shared transaction (its
    /// row dropped): a neighbour may have sunk it (a signer that took on
    /// code after its check burns the batch's gas), and a transaction of
    /// its own cannot be sunk by anyone else's call. `unread`: nothing
    /// of the leg can have been dropped (a row just recorded), or a stored
    /// step is sent again as it is: no read.
    pub(crate) async fn share_now(&self, owner: &str, leg: &str, share: Share, unread: bool) -> Result<Share, StepError> {
        if unread || !share.shared() {
            return Ok(share);
        }
        match repo::dropped_count(&self.deps.db, owner, leg).await {
            Ok(0) => Ok(share),
            Ok(_) => Ok(Share::Alone),
            Err(e) => Err(StepError::NotSent(Failure::ChainUnavailable, format!("database: {e}"))),
        }
    }

    /// A step's call failed inside a transaction that carried other calls
    /// too (a batch whose calls fail alone) while the authorization it
    /// carries is still good: its row is dropped, so the next pass sends it
    /// again, alone (`share_now`). The authorization is the same, so money
    /// moves at most once.
    /// Once only (`MOST_BATCH_RETRIES`): a payer contract that passes every
    /// simulation and fails on chain would otherwise cost the relayer a
    /// share of a batch every block, for ever.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn failed_call_retryable(
        &self,
        owner: &str,
        leg: &str,
        chain: &str,
        tx: &str,
        adapter: &Arc<AssetAdapter>,
        req: &crate::payment::PaymentRequirements,
        proof: &str,
    ) -> anyhow::Result<bool> {
        let driver = self.driver(chain)?;
        let rows = repo::list_txs(&self.deps.db, owner, leg).await?;
        let Some(row) = rows.iter().find(|t| t.tx_hash == tx && driver.shared(chain, t)) else { return Ok(false) };
        if repo::dropped_count(&self.deps.db, owner, leg).await? >= MOST_BATCH_RETRIES {
            tracing::warn!(owner, chain, tx, "a call failed on chain inside a batch again; not sent a third time");
            return Ok(false);
        }
        let usable = match adapter.verify(req, proof).await? {
            Ok(paid) => matches!(adapter.preflight(&paid).await?, Ok(())),
            Err(_) => false,
        };
        if usable {
            tracing::info!(owner, chain, tx, "a call failed alone inside a batch; sending it again");
            repo::drop_tx(&self.deps.db, owner, leg, row.step, now_ms()).await?;
        }
        Ok(usable)
    }

    /// Record `tx` confirmed under every row holding it: once per
    /// transaction, however many owners' steps wait on it (a Multicall3
    /// batch); the others wait for that write.
    async fn confirmed(&self, chain: &str, tx: &str) -> Result<(), crate::store::StoreError> {
        let cell = {
            let mut seen = self.confirmed.lock().unwrap();
            if seen.len() > 256 {
                // Forget transactions nobody is waiting on.
                seen.retain(|_, c| Arc::strong_count(c) > 1);
            }
            seen.entry(format!("{chain}:{tx}")).or_default().clone()
        };
        cell.get_or_try_init(|| repo::confirm_tx(&self.deps.db, chain, tx, now_ms())).await.map(|_| ())
    }

    /// Follow `tx` until it is final with the chain's confirmations: the
    /// receipt, or `None` when it failed. Fast chains answer within
    /// milliseconds (a devnet mines a moment after it took the
    /// transaction); slow ones get polled gently. With `park`, a
    /// transaction not final at the first look is `StepError::Parked`.
    async fn wait_final(&self, driver: &dyn Driver, chain: &str, tx: &str, park: bool) -> Result<Option<Arc<Receipt>>, StepError> {
        if let Some(r) = self.follower.final_receipt(chain, tx) {
            return Ok(Some(r));
        }
        let deadline = Instant::now() + Duration::from_secs(self.deps.config.service.receipt_timeout_seconds);
        let confirmations = self.deps.config.chains.get(chain).map_or(1, |c| c.confirmations.max(1));
        if park {
            // A devnet or a fast chain answers within milliseconds: a few
            // quick looks (127 ms in all) before the pass parks for a block.
            let mut pause = Duration::from_millis(1);
            loop {
                match driver.finality(chain, tx, confirmations).await? {
                    Finality::Confirmed(r) => return Ok(Some(r)),
                    Finality::Failed => return Ok(None),
                    Finality::Pending if pause > INLINE_LOOKS => return Err(StepError::Parked(tx.to_string())),
                    Finality::Pending => {}
                }
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
        }
        let mut pause = Duration::from_millis(1);
        loop {
            match driver.finality(chain, tx, confirmations).await? {
                Finality::Confirmed(r) => return Ok(Some(r)),
                Finality::Failed => return Ok(None),
                Finality::Pending => {}
            }
            if Instant::now() > deadline {
                return Err(StepError::Pending(format!("{tx} is not final yet")));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// The lock a host-held wallet's setup and sponsored grants for one
    /// asset take in this replica, one at a time.
    pub(crate) async fn wallet_lock(&self, chain: &str, asset: &str, sender: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.setup_locks.lock().await.entry(format!("{chain}/{asset}/{sender}")).or_default().clone()
    }

    /// A hosted agent wallet without the gas for its one-time setup (an
    /// approval of Permit2 for a token without EIP-2612): the relayer sends
    /// it the shortfall first, recorded under `<leg>-fund`, one step per
    /// top-up. Bounded: the setup is made once per wallet and token, and a
    /// top-up is never more than what the setup may cost.
    async fn fund_setup(&self, owner: &str, leg: &str, chain: &str, wallet: &Role, steps: &[SettleStep]) -> Result<(), StepError> {
        let driver = self.driver(chain).map_err(|e| StepError::NotSent(Failure::PayoutNotDispatched, format!("{e:#}")))?;
        let Some(top_up) = driver.gas_shortfall(chain, wallet, steps).await? else { return Ok(()) };
        let leg = format!("{leg}-fund");
        let stored = repo::list_txs(&self.deps.db, owner, &leg)
            .await
            .map_err(|e| StepError::NotSent(Failure::ChainUnavailable, format!("database: {e}")))?;
        // Sent ones are final already (each was followed to the end); a new
        // label makes this one a new step.
        let step = SettleStep { label: format!("fund-{}", stored.len()), submission: top_up };
        tracing::info!(owner, chain, "the relayer funds a hosted wallet's setup gas");
        self.run_steps(owner, &leg, chain, &Role::Relayer, &[step], stored, &Share::Alone, false).await.map(|_| ())
    }

    /// One-time calls a host-held wallet must make before its transfers can
    /// settle (e.g. approving Permit2 on a Permit2-only chain), sent from that
    /// wallet and recorded under `<leg>-setup`. One at a time per (chain,
    /// asset, wallet) in this replica, so concurrent payouts approve once.
    pub(crate) async fn prepare_wallet(
        &self,
        owner: &str,
        leg: &str,
        adapter: &Arc<AssetAdapter>,
        wallet: &Role,
        sender: &str,
        amount: &str,
    ) -> Result<(), StepError> {
        let lock = self.wallet_lock(&adapter.ctx.chain, &adapter.ctx.asset, sender).await;
        let _held = lock.lock().await;
        let steps = adapter
            .prepare_sender(sender, amount)
            .await
            .map_err(|e| StepError::NotSent(Failure::PayoutNotDispatched, e.to_string()))?
            .map_err(|e| match e {
                AdapterError::ChainUnavailable(m) => StepError::NotSent(Failure::ChainUnavailable, m),
                other => StepError::WouldRevert(format!("wallet preparation: {other:?}")),
            })?;
        if steps.is_empty() {
            return Ok(());
        }
        tracing::info!(owner, chain = %adapter.ctx.chain, asset = %adapter.ctx.asset, wallet = %sender, calls = steps.len(), "preparing a sending wallet");
        if let Role::Agent(_) = wallet {
            self.fund_setup(owner, leg, &adapter.ctx.chain, wallet, &steps).await?;
        }
        let leg = format!("{leg}-setup");
        let stored = repo::list_txs(&self.deps.db, owner, &leg)
            .await
            .map_err(|e| StepError::NotSent(Failure::ChainUnavailable, format!("database: {e}")))?;
        // Wallet preparation goes out on its own, from that wallet.
        self.run_steps(owner, &leg, &adapter.ctx.chain, wallet, &steps, stored, &Share::Alone, false).await.map(|_| ())
    }
}
