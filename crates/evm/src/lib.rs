//! The EVM family: secp256k1 wallets, EIP-1559 or legacy transactions with
//! nonces allocated in the database, Multicall3 batching of relayer calls,
//! receipts, and native and ERC-20 balances.

// The layers below, under the paths the family's modules use.
use stablerail_family::family;
use stablerail_store::{db, store};
use stablerail_types::{clock, config, crypto, payment, telemetry, traces};

pub mod balances;
pub mod batch;
pub mod rhythm;
pub use stablerail_types::facts::evm as facts;
mod keeper;
pub mod landed;
mod permit;
pub mod token_facts;
pub mod tx;

use std::sync::Arc;
use std::time::Duration;

use crate::crypto::Secp256k1Key;
use alloy_primitives::{keccak256, Address, B256, U256};
use serde_json::{json, Value};

use crate::config::{Config, Family};
use crate::db::Db;
use crate::family::chain::{ChainClient, ChainError, Chains, HEAD_MEMO};
use crate::family::keys::{Keystore, Role};
use crate::family::{Balance, Driver, Finality, Receipt, Resent, SendError, Share, Submit, Upkeep};
use crate::payment::{Authorization, EvmCall, Movement, SettleStep, SigningRequest, Submission, VerifiedPayment};
use crate::store::settlement::{StoredTx, TxRow};
use tx::{Broadcast, GasLimit, Net, Nonces, TxCall};

/// What a settlement call costs beyond the payer's checks (the token's or
/// Permit2's own work): added to `contract_payer_gas_cap` for the most a
/// payer-caused call may take.
const SETTLEMENT_GAS: u64 = 200_000;

pub struct EvmDriver {
    config: Arc<Config>,
    chains: Arc<Chains>,
    db: Db,
    keys: Arc<Keystore>,
    relay: batch::Relay,
    batchers: batch::Batchers,
    receipts: tx::Receipts,
}

impl EvmDriver {
    pub fn new(config: Arc<Config>, chains: Arc<Chains>, db: Db, keys: Arc<Keystore>) -> EvmDriver {
        let relay = batch::Relay { db: db.clone(), nonces: Arc::new(Nonces::new(db.clone())), fees: Default::default() };
        EvmDriver { config, chains, db, keys, relay, batchers: Default::default(), receipts: Default::default() }
    }

    fn chain(&self, chain: &str) -> Result<Arc<ChainClient>, SendError> {
        self.chains.get(chain).ok_or_else(|| SendError::Unavailable(format!("{chain} has no transport")))
    }

    /// Chain id and transaction type, from config.
    fn net(&self, chain: &str) -> Net {
        let c = self.config.chains.get(chain);
        Net { chain_id: c.and_then(|c| c.chain_id).unwrap_or(0), kind: c.map(|c| c.transaction_type).unwrap_or_default() }
    }

    fn multicall(&self, chain: &str) -> Address {
        self.config
            .chains
            .get(chain)
            .and_then(|c| c.multicall3_address.as_deref())
            .and_then(|a| a.parse().ok())
            .unwrap_or(batch::MULTICALL3)
    }

    /// Where a mined transaction stands, from its receipt.
    async fn finality_of(
        &self,
        chain: &str,
        client: &ChainClient,
        r: std::sync::Arc<crate::family::Receipt>,
        confirmations: u64,
    ) -> Result<Finality, SendError> {
        let number = |v: &Value| u64::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok();
        let mined = r.json.get("blockNumber").and_then(number);
        let head = match confirmations {
            0 | 1 => mined,
            // A head up to HEAD_MEMO old: finality only comes later.
            _ => Some(client.head(HEAD_MEMO).await.map_err(|e| SendError::Unavailable(e.to_string()))?),
        };
        match (mined, head) {
            (Some(mined), Some(head)) if head + 1 >= mined + confirmations.max(1) => {}
            _ => return Ok(Finality::Pending),
        }
        if r.json.get("status").and_then(Value::as_str) == Some("0x1") {
            return Ok(Finality::Confirmed(r));
        }
        self.count_wasted(chain, &r.json).await;
        Ok(Finality::Failed)
    }

    /// A failed transaction the relayer sent: what it paid goes to
    /// `stablerail_relayer_wasted_fee_total`.
    async fn count_wasted(&self, chain: &str, receipt: &Value) {
        let Ok(relayer) = self.keys.address(crate::family::keys::RELAYER).await else { return };
        if !receipt.get("from").and_then(Value::as_str).is_some_and(|f| f.eq_ignore_ascii_case(&relayer)) {
            return;
        }
        let n = |k: &str| receipt.get(k).and_then(Value::as_str).and_then(|v| u128::from_str_radix(v.trim_start_matches("0x"), 16).ok());
        if let (Some(gas), Some(price)) = (n("gasUsed"), n("effectiveGasPrice")) {
            let gwei = (gas * price / 1_000_000_000).min(u128::from(u64::MAX)) as u64;
            tracing::warn!(chain, gwei, "a relayer transaction was mined and failed");
            crate::telemetry::relayer_wasted_fee(chain, gwei);
        }
    }

    async fn signer(&self, wallet: &Role) -> anyhow::Result<Secp256k1Key> {
        self.keys.secp256k1(wallet, Family::Evm).await
    }
}

/// Whether any of `signers` has code (a contract, an EIP-7702 delegation),
/// or the chain cannot say: then it is taken to. Read at the head (memoized
/// per block), a long list in one batched request.
async fn runs_code(client: &ChainClient, signers: &[String]) -> bool {
    let has = |code: &Value| code.as_str().is_none_or(|c| c.len() > 2);
    match signers {
        [] => false,
        few if few.len() <= 4 => {
            for s in few {
                match client.rpc("eth_getCode", json!([s, "latest"])).await {
                    Ok(code) if !has(&code) => {}
                    _ => return true,
                }
            }
            false
        }
        many => {
            let calls: Vec<Value> = many.iter().map(|s| json!([s, "latest"])).collect();
            match client.rpc_batch("eth_getCode", &calls).await {
                Ok(codes) => codes.iter().any(|c| c.as_ref().map_or(true, has)),
                Err(_) => true,
            }
        }
    }
}

#[async_trait::async_trait]
impl Driver for EvmDriver {
    fn family(&self) -> Family {
        Family::Evm
    }

    async fn address(&self, wallet: &Role) -> anyhow::Result<String> {
        Ok(self.signer(wallet).await?.address().to_checksum(None))
    }

    async fn sign(&self, wallet: &Role, request: &SigningRequest) -> anyhow::Result<Vec<u8>> {
        let SigningRequest::Eip712Digest(digest) = request else {
            anyhow::bail!("EVM wallets sign EIP-712 digests only");
        };
        anyhow::ensure!(digest.len() == 32, "an EIP-712 digest is 32 bytes, not {}", digest.len());
        let signer = self.signer(wallet).await?;
        Ok(crate::crypto::secp256k1_sign(&signer, &B256::from_slice(digest))?.as_bytes().to_vec())
    }

    async fn submit(&self, chain: &str, wallet: &Role, submission: &Submission, row: TxRow, how: Submit) -> Result<String, SendError> {
        let client = self.chain(chain)?;
        match submission {
            Submission::EvmCall(call) => {
                let to: Address = call.to.parse().map_err(|_| SendError::WouldRevert(format!("bad address {}", call.to)))?;
                let value =
                    U256::from_str_radix(&call.value, 10).map_err(|_| SendError::WouldRevert(format!("bad value {}", call.value)))?;
                let signer = self.signer(wallet).await.map_err(|e| SendError::Unavailable(format!("wallet: {e:#}")))?;
                let batch_max = self.config.service.settlement_batch_max;
                // A payer-caused call may take the chain's cap for the payer's
                // checks, and what a settlement itself costs, and no more.
                let limit = how
                    .payer_caused
                    .then(|| self.config.chains.get(chain).and_then(|c| c.contract_payer_gas_cap()))
                    .flatten()
                    .map(|cap| cap + SETTLEMENT_GAS);
                // Calls that carry no value may share a transaction, unless
                // a signature they check runs a contract's code.
                let apart = match how.share {
                    Share::Apart { group, keys, signers } if value.is_zero() && batch_max > 1 && !runs_code(&client, &signers).await => {
                        Some((group, keys))
                    }
                    _ => None,
                };
                let Some((group, keys)) = apart else {
                    let gas = match limit {
                        Some(limit) => {
                            let gas = tx::gas_for(&client, signer.address(), to, &call.data, GasLimit::Estimate).await?;
                            if gas > limit {
                                return Err(SendError::OverGasCap(format!("{gas} gas against a limit of {limit}")));
                            }
                            GasLimit::Known(gas)
                        }
                        None => GasLimit::Estimate,
                    };
                    let call = TxCall { to, data: call.data.clone(), value, gas };
                    let sent = self.relay.send(&client, self.net(chain), &signer, how.resync, call, std::slice::from_ref(&row)).await?;
                    return Ok(sent.hash);
                };
                let (reply, answer) = tokio::sync::oneshot::channel();
                let c = batch::Call { row, to, data: call.data.clone(), limit, group, keys, reply, span: tracing::Span::current() };
                let lane = || batch::Lane {
                    chain: client.clone(),
                    net: self.net(chain),
                    relayer: signer.clone(),
                    multicall: self.multicall(chain),
                    max: batch_max,
                    window: std::time::Duration::from_millis(self.config.service.settlement_batch_window_ms),
                    deployed: Default::default(),
                    clock: rhythm::BlockClock::new(client.clone()),
                };
                self.batchers.submit(chain, lane, &self.relay, c).await;
                answer.await.map_err(|_| SendError::Unavailable("settlement batcher stopped".into()))?
            }
            Submission::EvmRaw(raw) => {
                let hash = format!("{:#x}", keccak256(raw));
                let sent =
                    crate::family::store_then_broadcast(&self.db, &row, chain, "external", raw, &hash, || tx::broadcast(&client, raw))
                        .await?;
                match sent {
                    Broadcast::NonceTaken => Err(SendError::Lost(format!("{} was superseded", row.label))),
                    _ => Ok(hash),
                }
            }
            Submission::SolanaCosign(_) | Submission::TronSigned(_) => Err(SendError::Unsupported("not an EVM submission".into())),
        }
    }

    async fn resend(&self, chain: &str, stored: &StoredTx) -> Result<Resent, SendError> {
        let client = self.chain(chain)?;
        if tx::receipt(&client, &stored.tx_hash).await?.is_some() {
            return Ok(Resent::InFlight);
        }
        match tx::broadcast(&client, &stored.raw).await? {
            // Its nonce is used: by itself (mined just now) or by another.
            Broadcast::NonceTaken if tx::receipt(&client, &stored.tx_hash).await?.is_none() => Ok(Resent::Superseded),
            _ => Ok(Resent::InFlight),
        }
    }

    async fn finality(&self, chain: &str, hash: &str, confirmations: u64) -> Result<Finality, SendError> {
        let client = self.chain(chain)?;
        let Some(r) = self.receipts.get(&client, hash).await? else { return Ok(Finality::Pending) };
        self.finality_of(chain, &client, r, confirmations).await
    }

    /// The follower's pass: every receipt in one batched request. A call
    /// the batch did not answer (a provider without batches, an answer
    /// missing or repeated, a receipt of another transaction) is read alone.
    async fn finality_many(&self, chain: &str, txs: &[String], confirmations: u64) -> Vec<Result<Finality, SendError>> {
        let client = match self.chain(chain) {
            Ok(c) => c,
            Err(e) => return txs.iter().map(|_| Err(SendError::Unavailable(e.to_string()))).collect(),
        };
        let calls: Vec<Value> = txs.iter().map(|tx| serde_json::json!([tx])).collect();
        // A provider without batches: each alone. Any other failure fails
        // the pass (the follower comes back), as a single read would.
        let answers = match client.rpc_batch("eth_getTransactionReceipt", &calls).await {
            Ok(answers) => answers,
            Err(ChainError::NoBatches(_)) => vec![],
            Err(e) => return txs.iter().map(|_| Err(SendError::Unavailable(e.to_string()))).collect(),
        };
        let mut out = Vec::with_capacity(txs.len());
        let mut alone = Vec::new();
        for (k, tx) in txs.iter().enumerate() {
            out.push(match answers.get(k) {
                Some(Ok(Value::Null)) => Ok(Finality::Pending),
                Some(Ok(json)) if tx::is_receipt_of(json, tx) => {
                    let r = std::sync::Arc::new(crate::family::Receipt { text: json.to_string(), json: json.clone() });
                    self.finality_of(chain, &client, r, confirmations).await
                }
                _ => {
                    alone.push(k);
                    Ok(Finality::Pending)
                }
            });
        }
        for some in alone.chunks(crate::family::FINALITY_READS_AT_ONCE) {
            let read = futures::future::join_all(some.iter().map(|&k| self.finality(chain, &txs[k], confirmations))).await;
            for (&k, finality) in some.iter().zip(read) {
                out[k] = finality;
            }
        }
        out
    }

    fn shared(&self, chain: &str, stored: &StoredTx) -> bool {
        tx::sent_to(&stored.raw) == Some(self.multicall(chain))
    }

    /// A stored transaction is done with once it was mined or once the
    /// chain shows its nonce used by another transaction.
    async fn can_land(&self, chain: &str, stored: &StoredTx) -> bool {
        let (Ok(client), Ok(sender)) = (self.chain(chain), stored.sender.parse::<Address>()) else { return true };
        match tx::receipt(&client, &stored.tx_hash).await {
            Ok(Some(_)) => false,
            Ok(None) => !matches!(tx::mined_nonce(&client, sender).await, Ok(mined) if mined > stored.nonce as u64),
            Err(_) => true,
        }
    }

    async fn landed(
        &self,
        chain: &str,
        asset: &crate::config::Asset,
        payment: &VerifiedPayment,
        auth: &Authorization,
        since_ms: i64,
    ) -> Result<Vec<String>, SendError> {
        let client = self.chain(chain)?;
        let parties = landed::Parties::of(&asset.token, payment)?;
        let param = |key: &str, default: Address| asset.params.get(key).and_then(|a| a.parse().ok()).unwrap_or(default);
        let at = landed::Permit2At {
            permit2: param("permit2-address", token_facts::PERMIT2),
            proxy: param("proxy-address", token_facts::X402_EXACT_PROXY),
        };
        let block_ms = self.config.chains.get(chain).map_or(1000, |c| c.block_time_ms());
        landed::transfers(&client, block_ms, &parties, auth, &at, since_ms).await
    }

    fn movements(&self, _tx: &str, receipt: &Receipt, token: &str, payment: &VerifiedPayment, auth: &Authorization) -> Vec<Movement> {
        match landed::Parties::of(token, payment) {
            Ok(p) => landed::movements(&receipt.json, &p, auth),
            Err(_) => vec![],
        }
    }

    async fn head(&self, chain: &str) -> Result<Option<u64>, SendError> {
        let client = self.chain(chain)?;
        Ok(Some(client.head(HEAD_MEMO).await.map_err(|e| SendError::Unavailable(e.to_string()))?))
    }

    async fn final_block(&self, chain: &str) -> Result<Option<u64>, SendError> {
        let confirmations = self.config.chains.get(chain).map_or(1, |c| c.confirmations.max(1));
        // A fresh read: the books run now and then, and read up to it.
        let head = self.chain(chain)?.head(Duration::ZERO).await.map_err(|e| SendError::Unavailable(e.to_string()))?;
        // Never the head itself: a node's state "at" its head number can
        // already hold the next block's transactions (anvil applies a block
        // before it publishes its number), and the books pair a balance with
        // the block it is read at.
        Ok(Some(head.saturating_sub((confirmations - 1).max(1))))
    }

    async fn balance_at(&self, chain: &str, token: &str, wallet: &str, block: u64) -> Result<U256, SendError> {
        let client = self.chain(chain)?;
        landed::balance_at(&client, token, wallet, block).await
    }

    async fn wallet_movements(&self, chain: &str, token: &str, wallet: &str, from: u64, to: u64) -> Result<Vec<Movement>, SendError> {
        let client = self.chain(chain)?;
        landed::wallet_movements(&client, token, wallet, from, to).await
    }

    fn debited(&self, receipt: &Receipt, token: &str, sender: &str) -> Option<U256> {
        landed::debited(&receipt.json, token, sender)
    }

    /// An EOA's signature costs a usual call; a payer that may run code in
    /// the relayer's transaction (it has code, or its signature is not a
    /// plain ECDSA one: ERC-1271 bytes, an ERC-6492 deployment) counts its
    /// chain's cap on top of a settlement's own gas, as the relayer allows.
    /// `payload` is the x402 PaymentPayload (its `payload.signature`).
    async fn most_settlement_gas(&self, chain: &str, payer: &str, payload: &str) -> Result<u64, SendError> {
        let cap = self.config.chains.get(chain).and_then(|c| c.contract_payer_gas_cap()).unwrap_or(0);
        let signature = serde_json::from_str::<Value>(payload)
            .ok()
            .and_then(|p| p.pointer("/payload/signature").and_then(Value::as_str).map(|s| s.trim_start_matches("0x").len() / 2));
        if !matches!(signature, Some(64 | 65)) {
            return Ok(cap + SETTLEMENT_GAS);
        }
        let code = tx::rpc(&*self.chain(chain)?, "eth_getCode", json!([payer, "latest"])).await?;
        Ok(if code.as_str().is_some_and(|c| c.len() > 2) { cap + SETTLEMENT_GAS } else { batch::USUAL_CALL_GAS })
    }

    fn credited(&self, receipt: &crate::family::Receipt, token: &str, recipient: &str) -> Option<alloy_primitives::U256> {
        landed::credited(&receipt.json, token, recipient)
    }

    async fn asset_differences(&self, chain: &str, asset: &crate::config::Asset) -> Result<Vec<String>, ChainError> {
        let Some(client) = self.chains.get(chain) else { return Ok(vec![]) };
        let chain_id = self.config.chains.get(chain).and_then(|c| c.chain_id);
        token_facts::differences(&client, chain_id, asset).await
    }

    async fn sponsored_allowance(
        &self,
        chain: &str,
        asset: &crate::config::Asset,
        wallet: &Role,
        amount: &str,
    ) -> Result<Option<(&'static str, Value)>, SendError> {
        let client = self.chain(chain)?;
        let amount =
            U256::from_str_radix(amount, 10).map_err(|_| SendError::WouldRevert(format!("amount `{amount}` is not base units")))?;
        let signer = self.signer(wallet).await.map_err(|e| SendError::Unavailable(format!("keystore: {e}")))?;
        let now = (crate::clock::now_ms() / 1000) as u64;
        let grant = permit::sponsored(&client, self.net(chain).chain_id, asset, &signer, amount, now)
            .await
            .map_err(|e| SendError::Unavailable(e.to_string()))?;
        Ok(grant.map(|g| (permit::EXTENSION, g)))
    }

    async fn gas_shortfall(&self, chain: &str, wallet: &Role, calls: &[SettleStep]) -> Result<Option<Submission>, SendError> {
        let client = self.chain(chain)?;
        let signer = self.signer(wallet).await.map_err(|e| SendError::Unavailable(format!("wallet: {e:#}")))?;
        let from = signer.address();
        let mut gas = 0u64;
        for step in calls {
            if let Submission::EvmCall(c) = &step.submission {
                let to: Address = c.to.parse().map_err(|_| SendError::WouldRevert(format!("bad address {}", c.to)))?;
                gas += tx::gas_for(&client, from, to, &c.data, GasLimit::Estimate).await?;
            }
        }
        if gas == 0 {
            return Ok(None);
        }
        let need = tx::most_it_costs(&client, self.net(chain), &self.relay.fees, gas).await?;
        let held = tx::rpc(&client, "eth_getBalance", json!([from, "latest"])).await?;
        let held = held.as_str().and_then(|h| U256::from_str_radix(h.trim_start_matches("0x"), 16).ok()).unwrap_or_default();
        if held >= need {
            return Ok(None);
        }
        let top_up = EvmCall { to: from.to_checksum(None), data: vec![], value: (need - held).to_string(), gas_limit: None };
        Ok(Some(Submission::EvmCall(top_up)))
    }

    async fn sender_of(&self, chain: &str, tx: &str) -> Result<Option<String>, SendError> {
        let client = self.chain(chain)?;
        let found = tx::rpc(&client, "eth_getTransactionByHash", json!([tx])).await?;
        Ok(found.get("from").and_then(Value::as_str).and_then(|f| f.parse::<Address>().ok()).map(|a| a.to_checksum(None)))
    }

    async fn balances(&self, chain: &str, owner: &str) -> Result<Vec<Balance>, ChainError> {
        let owner: Address = owner.parse().map_err(|_| ChainError::BadAnswer(format!("{owner} is not an EVM address")))?;
        balances::on_chain(&self.config, &self.chains, chain, owner).await
    }

    async fn upkeep(&self, seen: &mut Upkeep) -> anyhow::Result<()> {
        self.check_nonces(seen).await
    }
}
