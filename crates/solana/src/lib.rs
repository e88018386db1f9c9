//! The Solana family: ed25519 wallets, fee-payer co-signing of transactions
//! the payer signed (`solana-cosign`), signed bytes stored before they are
//! sent, re-sent until their blockhash expires, finality from signature
//! statuses (with history search), SOL and SPL balances.
//!
//! A node's refusal is read from its error's `data.err` (the transaction
//! error, a typed value), never from its message text.

// The layers below, under the paths the family's modules use.
use stablerail_family::family;
use stablerail_store::{db, store};
use stablerail_types::{config, crypto, payment};

pub mod ata;
mod books;
pub use stablerail_types::facts::solana as facts;
pub mod wire;

use std::sync::Arc;

use alloy_primitives::U256;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::config::{Availability, Config, Family};
use crate::db::Db;
use crate::family::chain::{ChainClient, ChainError, Chains};
use crate::family::keys::{Keystore, Role};
use crate::family::{Balance, Driver, Finality, Receipt, Resent, SendError, Submit, Upkeep};
use crate::payment::{Movement, SigningRequest, Submission};
use crate::store::settlement::{StoredTx, TxRow};
use wire::Wire;

/// Lamports per SOL: the native balance's decimals.
const SOL_DECIMALS: u8 = 9;

pub struct SolanaDriver {
    config: Arc<Config>,
    chains: Arc<Chains>,
    db: Db,
    keys: Arc<Keystore>,
}

/// What a node made of signed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Broadcast {
    Accepted,
    /// This exact transaction was processed already.
    Known,
    /// Its blockhash is unknown to the node or expired: it can never land.
    Expired,
}

/// The transaction error a node attached to a refusal (`data.err`).
fn refusal(e: &ChainError) -> Option<Value> {
    let ChainError::Node { data: Some(data), .. } = e else { return None };
    serde_json::from_str::<Value>(data).ok()?.get("err").cloned()
}

async fn rpc(client: &ChainClient, method: &str, params: Value) -> Result<Value, SendError> {
    client.rpc(method, params).await.map_err(|e| SendError::Unavailable(e.to_string()))
}

async fn broadcast(client: &ChainClient, raw: &[u8]) -> Result<Broadcast, SendError> {
    let text = base64::engine::general_purpose::STANDARD.encode(raw);
    let params = json!([text, { "encoding": "base64", "preflightCommitment": "confirmed" }]);
    match client.rpc("sendTransaction", params).await {
        Ok(_) => Ok(Broadcast::Accepted),
        Err(e @ ChainError::Node { .. }) => match refusal(&e).as_ref().and_then(Value::as_str) {
            Some("AlreadyProcessed") => Ok(Broadcast::Known),
            Some("BlockhashNotFound") => Ok(Broadcast::Expired),
            Some("InsufficientFundsForFee") | Some("InsufficientFundsForRent") => Err(SendError::Unfunded(e.to_string())),
            // A failed preflight simulation: the instructions would fail.
            Some(_) => Err(SendError::WouldRevert(e.to_string())),
            None => Err(SendError::Refused(e.to_string())),
        },
        Err(e) => Err(SendError::Unavailable(e.to_string())),
    }
}

/// A signature's status, looked up in the node's whole history.
async fn status(client: &ChainClient, signature: &str) -> Result<Option<Value>, SendError> {
    let v = rpc(client, "getSignatureStatuses", json!([[signature], { "searchTransactionHistory": true }])).await?;
    Ok(v.pointer("/value/0").filter(|s| !s.is_null()).cloned())
}

async fn blockhash_valid(client: &ChainClient, raw: &[u8]) -> Result<bool, SendError> {
    let hash =
        Wire::parse(raw).and_then(|w| w.blockhash()).ok_or_else(|| SendError::Refused("stored bytes are not a transaction".into()))?;
    let v = rpc(client, "isBlockhashValid", json!([bs58::encode(hash).into_string(), { "commitment": "confirmed" }])).await?;
    Ok(v.pointer("/value").and_then(Value::as_bool).unwrap_or(false))
}

impl SolanaDriver {
    pub fn new(config: Arc<Config>, chains: Arc<Chains>, db: Db, keys: Arc<Keystore>) -> SolanaDriver {
        SolanaDriver { config, chains, db, keys }
    }

    fn client(&self, chain: &str) -> Result<Arc<ChainClient>, SendError> {
        self.chains.get(chain).ok_or_else(|| SendError::Unavailable(format!("{chain} has no transport")))
    }

    /// Sign as fee payer: `wallet`'s key must be the message's account at
    /// `slot`. Returns the fully signed bytes and the transaction's id (its
    /// first signature). `submit` stores them, then sends; tests call this
    /// alone to stand for a crash between the two.
    pub async fn cosign(&self, wallet: &Role, transaction: &[u8], slot: usize) -> Result<(Vec<u8>, String), SendError> {
        let key = self.keys.ed25519(wallet, Family::Solana).await.map_err(|e| SendError::Unavailable(format!("wallet: {e:#}")))?;
        let w = Wire::parse(transaction).ok_or_else(|| SendError::WouldRevert("not a Solana transaction".into()))?;
        let keys = w.account_keys().unwrap_or_default();
        if slot >= w.slots || keys.get(slot) != Some(&key.public()) {
            return Err(SendError::WouldRevert(format!("signature slot {slot} is not this wallet's")));
        }
        let signature = crate::crypto::ed25519_sign(&key, w.message()).map_err(|e| SendError::Unavailable(format!("signing: {e:#}")))?;
        let range = w.signature_range(slot);
        let mut raw = transaction.to_vec();
        raw[range].copy_from_slice(&signature);
        let id = bs58::encode(Wire::parse(&raw).expect("same shape").signature(0)).into_string();
        Ok((raw, id))
    }
}

#[async_trait::async_trait]
impl Driver for SolanaDriver {
    fn family(&self) -> Family {
        Family::Solana
    }

    async fn address(&self, wallet: &Role) -> anyhow::Result<String> {
        let key = self.keys.ed25519(wallet, Family::Solana).await?;
        Ok(bs58::encode(key.public()).into_string())
    }

    async fn sign(&self, wallet: &Role, request: &SigningRequest) -> anyhow::Result<Vec<u8>> {
        let SigningRequest::SolanaMessage(message) = request else {
            anyhow::bail!("Solana wallets sign Solana messages only");
        };
        let key = self.keys.ed25519(wallet, Family::Solana).await?;
        Ok(crate::crypto::ed25519_sign(&key, message)?.to_vec())
    }

    async fn submit(&self, chain: &str, wallet: &Role, submission: &Submission, row: TxRow, _how: Submit) -> Result<String, SendError> {
        let Submission::SolanaCosign(c) = submission else {
            return Err(SendError::Unsupported("not a Solana submission".into()));
        };
        let client = self.client(chain)?;
        let (raw, id) = self.cosign(wallet, &c.transaction, usize::from(c.fee_payer_index)).await?;
        let sender = self.address(wallet).await.map_err(|e| SendError::Unavailable(format!("wallet: {e:#}")))?;
        match crate::family::store_then_broadcast(&self.db, &row, chain, &sender, &raw, &id, || broadcast(&client, &raw)).await? {
            Broadcast::Accepted | Broadcast::Known => Ok(id),
            // Signed by the payer against a blockhash that is gone: it can
            // never land, and nothing moved.
            Broadcast::Expired => Err(SendError::WouldRevert("the transaction's blockhash has expired".into())),
        }
    }

    /// Stored bytes go out again until their blockhash expires; after that,
    /// a signature the chain does not have was dropped for good.
    async fn resend(&self, chain: &str, stored: &StoredTx) -> Result<Resent, SendError> {
        let client = self.client(chain)?;
        if status(&client, &stored.tx_hash).await?.is_some() {
            return Ok(Resent::InFlight);
        }
        if blockhash_valid(&client, &stored.raw).await? && broadcast(&client, &stored.raw).await? != Broadcast::Expired {
            return Ok(Resent::InFlight);
        }
        // Expired: unless it landed in between, it never will.
        Ok(if status(&client, &stored.tx_hash).await?.is_some() { Resent::InFlight } else { Resent::Superseded })
    }

    async fn finality(&self, chain: &str, tx: &str, confirmations: u64) -> Result<Finality, SendError> {
        let client = self.client(chain)?;
        let Some(s) = status(&client, tx).await? else { return Ok(Finality::Pending) };
        if !s.get("err").is_none_or(Value::is_null) {
            return Ok(Finality::Failed);
        }
        let deep_enough = match s.get("confirmationStatus").and_then(Value::as_str) {
            Some("finalized") => true,
            Some("confirmed") => {
                confirmations <= 1 || s.get("confirmations").and_then(Value::as_u64).is_some_and(|n| n + 1 >= confirmations)
            }
            _ => false,
        };
        if !deep_enough {
            return Ok(Finality::Pending);
        }
        let json = rpc(
            &client,
            "getTransaction",
            json!([tx, { "encoding": "json", "maxSupportedTransactionVersion": 0, "commitment": "confirmed" }]),
        )
        .await?;
        if json.is_null() {
            return Ok(Finality::Pending);
        }
        Ok(Finality::Confirmed(Arc::new(Receipt { text: json.to_string(), json })))
    }

    fn shared(&self, _chain: &str, _stored: &StoredTx) -> bool {
        false
    }

    async fn can_land(&self, chain: &str, stored: &StoredTx) -> bool {
        let Ok(client) = self.client(chain) else { return true };
        match status(&client, &stored.tx_hash).await {
            Ok(Some(_)) => false,
            Ok(None) => !matches!(blockhash_valid(&client, &stored.raw).await, Ok(false)),
            Err(_) => true,
        }
    }

    fn credited(&self, receipt: &Receipt, token: &str, recipient: &str) -> Option<alloy_primitives::U256> {
        credited(&receipt.json, token, recipient).map(alloy_primitives::U256::from)
    }

    /// A Solana payment is one transaction with one transfer (the adapter
    /// checked its instructions): its signature is its id, and no other
    /// transaction can land it.
    fn movements(
        &self,
        tx: &str,
        receipt: &Receipt,
        token: &str,
        payment: &crate::payment::VerifiedPayment,
        _auth: &crate::payment::Authorization,
    ) -> Vec<crate::payment::Movement> {
        vec![crate::payment::Movement {
            tx: tx.to_string(),
            index: 0,
            token: token.to_string(),
            from: payment.payer.clone(),
            to: payment.pay_to.clone(),
            amount: payment.amount.clone(),
            block: receipt.json.get("slot").and_then(Value::as_i64).unwrap_or(0),
            fee: receipt.json.pointer("/meta/fee").and_then(Value::as_u64).map(|f| f.to_string()),
        }]
    }

    async fn final_block(&self, chain: &str) -> Result<Option<u64>, SendError> {
        Ok(Some(books::finalized_slot(&*self.client(chain)?).await?))
    }

    async fn balance_at(&self, chain: &str, token: &str, wallet: &str, block: u64) -> Result<U256, SendError> {
        books::balance_at(&*self.client(chain)?, token, wallet, block).await
    }

    async fn wallet_movements(&self, chain: &str, token: &str, wallet: &str, from: u64, to: u64) -> Result<Vec<Movement>, SendError> {
        books::movements(&*self.client(chain)?, token, wallet, from, to, true).await
    }

    async fn sender_of(&self, chain: &str, tx: &str) -> Result<Option<String>, SendError> {
        let client = self.client(chain)?;
        let params = json!([tx, { "encoding": "json", "commitment": "confirmed", "maxSupportedTransactionVersion": 0 }]);
        let found = rpc(&client, "getTransaction", params).await?;
        // The fee payer, the first signer: whose transaction it is.
        Ok(found.pointer("/transaction/message/accountKeys/0").and_then(Value::as_str).map(str::to_string))
    }

    async fn can_receive(&self, chain: &str, token: &str, owner: &str) -> Result<bool, SendError> {
        let client = self.chains.get(chain).ok_or_else(|| SendError::Unavailable(format!("{chain} has no transport")))?;
        let key = |t: &str| t.parse::<solana_pubkey::Pubkey>().map_err(|_| SendError::Unsupported(format!("{t} is not a Solana address")));
        let (owner_key, mint_key) = (key(owner)?, key(token)?);
        let mint = rpc(&client, "getAccountInfo", json!([token, { "encoding": "base64" }])).await?;
        let program = mint
            .pointer("/value/owner")
            .and_then(Value::as_str)
            .ok_or_else(|| SendError::Unavailable(format!("mint {token} not found")))?;
        let account = ata::address(&owner_key, &mint_key, &key(program)?);
        let found = rpc(&client, "getAccountInfo", json!([account.to_string(), { "encoding": "base64" }])).await?;
        Ok(found.get("value").is_some_and(|v| !v.is_null()))
    }

    async fn balances(&self, chain: &str, owner: &str) -> Result<Vec<Balance>, ChainError> {
        let (Some(cfg), Some(client)) = (self.config.chains.get(chain), self.chains.get(chain)) else { return Ok(vec![]) };
        let lamports = client.rpc("getBalance", json!([owner])).await?;
        let lamports = lamports
            .pointer("/value")
            .and_then(Value::as_u64)
            .ok_or_else(|| ChainError::BadAnswer(format!("getBalance answered {lamports}")))?;
        let mut out =
            vec![Balance { chain: chain.into(), asset: cfg.native_asset.clone(), raw: U256::from(lamports), decimals: SOL_DECIMALS }];
        for (key, asset) in &cfg.assets {
            if self.config.availability(asset) != Availability::Available || asset.token.is_empty() {
                continue;
            }
            let accounts = client.rpc("getTokenAccountsByOwner", json!([owner, { "mint": asset.token }, { "encoding": "base64" }])).await?;
            let mut raw = U256::ZERO;
            for a in accounts.pointer("/value").and_then(Value::as_array).into_iter().flatten() {
                let data = a.pointer("/account/data/0").and_then(Value::as_str).unwrap_or("");
                let bytes = base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| ChainError::BadAnswer(e.to_string()))?;
                // SPL token account: amount is a little-endian u64 at 64..72.
                let amount = bytes.get(64..72).ok_or_else(|| ChainError::BadAnswer("not a token account".into()))?;
                raw += U256::from(u64::from_le_bytes(amount.try_into().expect("8 bytes")));
            }
            out.push(Balance { chain: chain.into(), asset: key.clone(), raw, decimals: asset.decimals });
        }
        Ok(out)
    }

    async fn upkeep(&self, _seen: &mut Upkeep) -> anyhow::Result<()> {
        // No nonces: a Solana transaction's lifetime is its blockhash.
        Ok(())
    }
}

/// What a Solana transaction credited `owner`'s token accounts of `mint`:
/// post minus pre token balances, summed (each account by its index).
pub fn credited(tx: &Value, mint: &str, owner: &str) -> Option<u128> {
    let rows = |key: &str| -> Vec<(u64, u128)> {
        let list = tx.pointer(&format!("/meta/{key}")).and_then(Value::as_array).cloned().unwrap_or_default();
        list.iter()
            .filter(|b| b.get("mint").and_then(Value::as_str) == Some(mint) && b.get("owner").and_then(Value::as_str) == Some(owner))
            .filter_map(|b| Some((b.get("accountIndex")?.as_u64()?, b.pointer("/uiTokenAmount/amount")?.as_str()?.parse().ok()?)))
            .collect()
    };
    let (pre, post) = (rows("preTokenBalances"), rows("postTokenBalances"));
    let mut total: u128 = 0;
    for (index, after) in post {
        let before = pre.iter().find(|(i, _)| *i == index).map_or(0, |(_, a)| *a);
        total += after.saturating_sub(before);
    }
    Some(total)
}
