//! The TRON family: secp256k1 wallets with base58check addresses, the full
//! node's HTTP API (not JSON-RPC), transactions whose id is sha256 of their
//! `raw_data`, recomputed here and never taken from a node. A settlement's
//! `raw_data` comes from the adapter unsigned; the wallet that owns it signs
//! it here, the whole `Transaction` protobuf is stored, then broadcast
//! (`/wallet/broadcasthex`). Stored bytes are re-sent until they expire; a
//! transaction is called dropped only once it has expired and the node has
//! no record of it.
//!
//! A node's refusal is read from its `code` (a typed value), never from its
//! message text.

// The layers below, under the paths the family's modules use.
use stablerail_family::family;
use stablerail_store::{db, store};
use stablerail_types::{clock, config, crypto, payment};

pub mod calls;
pub use stablerail_types::facts::tron as facts;
mod landed;

use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use prost::Message;
use serde_json::{json, Value};
use tron_wire::raw::{self, Raw, Transaction};

use crate::clock::now_ms;
use crate::config::{Availability, Config, Family};
use crate::db::Db;
use crate::family::chain::{ChainClient, ChainError, Chains};
use crate::family::keys::{Keystore, Role};
use crate::family::{Balance, Driver, Finality, Receipt, Resent, SendError, Submit, Upkeep};
use crate::payment::{Authorization, Movement, SigningRequest, Submission, VerifiedPayment};
use crate::store::settlement::{StoredTx, TxRow};

/// TRX has 6 decimals (sun).
const TRX_DECIMALS: u8 = 6;

/// The one field of every TRON contract the driver reads: its owner, the
/// account that must sign.
#[derive(Clone, PartialEq, Message)]
struct Owner {
    #[prost(bytes = "vec", tag = "1")]
    owner_address: Vec<u8>,
}

/// The one account whose signature `raw_data` needs (base58check), or why
/// it has none.
fn owner(raw_data: &[u8]) -> anyhow::Result<String> {
    let raw = Raw::decode(raw_data)?;
    let owners: Vec<Vec<u8>> = raw
        .contract
        .iter()
        .map(|c| Owner::decode(c.parameter.as_ref().map_or(&[][..], |a| a.value.as_slice())).map(|o| o.owner_address))
        .collect::<Result<_, _>>()?;
    let [first, rest @ ..] = owners.as_slice() else { anyhow::bail!("the transaction calls no contract") };
    anyhow::ensure!(rest.iter().all(|o| o == first), "the transaction has several owners");
    let a = (first.len() == 21 && first[0] == 0x41)
        .then(|| Address::from_slice(&first[1..]))
        .ok_or_else(|| anyhow::anyhow!("the owner is not a TRON address"))?;
    Ok(tron_wire::address::show(&a))
}

/// What a node made of a broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Broadcast {
    Accepted,
    /// This exact transaction was seen already.
    Known,
    /// Expired, or its reference block is unknown: it can never land.
    Expired,
}

pub struct TronDriver {
    config: Arc<Config>,
    chains: Arc<Chains>,
    db: Db,
    keys: Arc<Keystore>,
}

fn tx_id(raw_data: &[u8]) -> String {
    hex::encode(raw::tx_id(raw_data))
}

async fn call(client: &ChainClient, path: &str, body: Value) -> Result<Value, SendError> {
    client.rpc(path, body).await.map_err(|e| SendError::Unavailable(e.to_string()))
}

async fn broadcast(client: &ChainClient, bytes: &[u8]) -> Result<Broadcast, SendError> {
    let v = call(client, "/wallet/broadcasthex", json!({ "transaction": hex::encode(bytes) })).await?;
    if v.get("result").and_then(Value::as_bool) == Some(true) {
        return Ok(Broadcast::Accepted);
    }
    let detail = || v.to_string();
    match v.get("code").and_then(Value::as_str) {
        Some("DUP_TRANSACTION_ERROR") => Ok(Broadcast::Known),
        Some("TRANSACTION_EXPIRATION_ERROR") | Some("TAPOS_ERROR") => Ok(Broadcast::Expired),
        Some("BANDWITH_ERROR") => Err(SendError::Unfunded(detail())),
        Some("CONTRACT_VALIDATE_ERROR") | Some("CONTRACT_EXE_ERROR") => Err(SendError::WouldRevert(detail())),
        Some("SERVER_BUSY") | Some("NOT_ENOUGH_EFFECTIVE_CONNECTION") | Some("NO_CONNECTION") | Some("BLOCK_UNSOLIDIFIED") => {
            Err(SendError::Unavailable(detail()))
        }
        _ => Err(SendError::Refused(detail())),
    }
}

/// The node's execution record of `id`, or `None` while it has none.
async fn info(client: &ChainClient, id: &str) -> Result<Option<Value>, SendError> {
    let v = call(client, "/wallet/gettransactioninfobyid", json!({ "value": id })).await?;
    Ok(v.get("id").is_some().then_some(v))
}

/// An account's TRX in sun; a node knows no account that never received
/// anything: zero.
async fn trx_balance(client: &ChainClient, address: &str) -> Result<u64, ChainError> {
    let account = client.rpc("/wallet/getaccount", json!({ "address": address, "visible": true })).await?;
    Ok(account.get("balance").and_then(Value::as_u64).unwrap_or(0))
}

fn tron_address(a: &str) -> Result<Address, SendError> {
    tron_wire::address::parse(a).ok_or_else(|| SendError::Unsupported(format!("{a} is not a TRON address")))
}

fn expired(bytes: &[u8]) -> bool {
    let expiration = Transaction::decode(bytes).ok().and_then(|t| Raw::decode(t.raw_data.as_slice()).ok()).map_or(0, |r| r.expiration);
    expiration <= now_ms()
}

impl TronDriver {
    pub fn new(config: Arc<Config>, chains: Arc<Chains>, db: Db, keys: Arc<Keystore>) -> TronDriver {
        TronDriver { config, chains, db, keys }
    }

    fn client(&self, chain: &str) -> Result<Arc<ChainClient>, SendError> {
        self.chains.get(chain).ok_or_else(|| SendError::Unavailable(format!("{chain} has no transport")))
    }

    /// secp256k1 over the 32-byte txID as it is; 65 bytes r‖s‖v, v 27 or 28.
    async fn sign_id(&self, wallet: &Role, id: &[u8]) -> anyhow::Result<Vec<u8>> {
        anyhow::ensure!(id.len() == 32, "a TRON txID is 32 bytes, not {}", id.len());
        let signer = self.keys.secp256k1(wallet, Family::Tron).await?;
        Ok(crate::crypto::secp256k1_sign(&signer, &B256::from_slice(id))?.as_bytes().to_vec())
    }
}

#[async_trait::async_trait]
impl Driver for TronDriver {
    fn family(&self) -> Family {
        Family::Tron
    }

    async fn address(&self, wallet: &Role) -> anyhow::Result<String> {
        self.keys.address(&wallet.key_name(Family::Tron)).await
    }

    async fn sign(&self, wallet: &Role, request: &SigningRequest) -> anyhow::Result<Vec<u8>> {
        match request {
            SigningRequest::TronTxid(id) => self.sign_id(wallet, id).await,
            // The id is computed here, and only the wallet's own transactions are signed.
            SigningRequest::TronRawData(raw_data) => {
                let (owner, signer) = (owner(raw_data)?, self.address(wallet).await?);
                anyhow::ensure!(owner == signer, "the transaction's owner is {owner}, not the signing wallet {signer}");
                self.sign_id(wallet, &raw::tx_id(raw_data)).await
            }
            _ => anyhow::bail!("TRON wallets sign TRON transactions only"),
        }
    }

    async fn submit(&self, chain: &str, wallet: &Role, submission: &Submission, row: TxRow, _how: Submit) -> Result<String, SendError> {
        let Submission::TronSigned(t) = submission else {
            return Err(SendError::Unsupported("not a TRON submission".into()));
        };
        let client = self.client(chain)?;
        let id = tx_id(&t.raw_data);
        let unavailable = |e: anyhow::Error| SendError::Unavailable(format!("wallet: {e:#}"));
        let signature = match t.signatures.as_slice() {
            // Built for this wallet to sign (it is the transaction's owner).
            [] => vec![self.sign_id(wallet, &hex::decode(&id).expect("hex")).await.map_err(unavailable)?],
            given => given.to_vec(),
        };
        let bytes = Transaction { raw_data: t.raw_data.clone(), signature }.encode_to_vec();
        let sender = owner(&t.raw_data).map_err(|e| SendError::Refused(format!("{e:#}")))?;
        // Energy is paid in TRX up to fee_limit: a sender that cannot cover
        // it could see the call run out of energy and burn what it has, so
        // it is treated like an EVM relayer without gas (nothing is sent).
        let fee_limit = Raw::decode(t.raw_data.as_slice()).map_or(0, |r| r.fee_limit);
        let sun = trx_balance(&client, &sender).await.map_err(|e| SendError::Unavailable(e.to_string()))?;
        if sun < u64::try_from(fee_limit).unwrap_or(u64::MAX) {
            return Err(SendError::Unfunded(format!("{sender} holds {sun} sun, the transaction's fee_limit is {fee_limit}")));
        }
        match crate::family::store_then_broadcast(&self.db, &row, chain, &sender, &bytes, &id, || broadcast(&client, &bytes)).await? {
            Broadcast::Accepted | Broadcast::Known => Ok(id),
            Broadcast::Expired => Err(SendError::WouldRevert("the transaction expired before it was sent".into())),
        }
    }

    async fn resend(&self, chain: &str, stored: &StoredTx) -> Result<Resent, SendError> {
        let client = self.client(chain)?;
        if info(&client, &stored.tx_hash).await?.is_some() {
            return Ok(Resent::InFlight);
        }
        if !expired(&stored.raw) && broadcast(&client, &stored.raw).await? != Broadcast::Expired {
            return Ok(Resent::InFlight);
        }
        // Expired: unless it landed in between, it never will.
        Ok(if info(&client, &stored.tx_hash).await?.is_some() { Resent::InFlight } else { Resent::Superseded })
    }

    async fn finality(&self, chain: &str, tx: &str, confirmations: u64) -> Result<Finality, SendError> {
        let client = self.client(chain)?;
        let Some(v) = info(&client, tx).await? else { return Ok(Finality::Pending) };
        let Some(block) = v.get("blockNumber").and_then(Value::as_u64) else { return Ok(Finality::Pending) };
        let head = call(&client, "/wallet/getnowblock", json!({})).await?;
        let head = head.pointer("/block_header/raw_data/number").and_then(Value::as_u64).unwrap_or(0);
        if head + 1 < block + confirmations.max(1) {
            return Ok(Finality::Pending);
        }
        if v.pointer("/receipt/result").and_then(Value::as_str) != Some("SUCCESS") {
            return Ok(Finality::Failed);
        }
        Ok(Finality::Confirmed(Arc::new(Receipt { text: v.to_string(), json: v })))
    }

    fn shared(&self, _chain: &str, _stored: &StoredTx) -> bool {
        false
    }

    async fn can_land(&self, chain: &str, stored: &StoredTx) -> bool {
        let Ok(client) = self.client(chain) else { return true };
        match info(&client, &stored.tx_hash).await {
            Ok(Some(_)) => false,
            Ok(None) => !expired(&stored.raw),
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
        // Only a permit settled through the configured proxy is provable.
        let Some(proxy) = asset.params.get("proxy-address").and_then(|a| tron_wire::address::parse(a)) else { return Ok(vec![]) };
        let client = self.client(chain)?;
        let parties = landed::Parties::of(&asset.token, payment)?;
        let block_ms = self.config.chains.get(chain).map_or(3000, |c| c.block_time_ms());
        landed::transfers(&client, block_ms, &parties, auth, proxy, since_ms).await
    }

    fn movements(&self, _tx: &str, receipt: &Receipt, token: &str, payment: &VerifiedPayment, _auth: &Authorization) -> Vec<Movement> {
        match landed::Parties::of(token, payment) {
            Ok(p) => landed::movements(&receipt.json, &p),
            Err(_) => vec![],
        }
    }

    async fn final_block(&self, chain: &str) -> Result<Option<u64>, SendError> {
        Ok(Some(landed::solid_head(&*self.client(chain)?).await?))
    }

    /// A node answers balances in its solidified state only: `block` must
    /// be the solidified head (the books read on to it first otherwise).
    async fn balance_at(&self, chain: &str, token: &str, wallet: &str, block: u64) -> Result<U256, SendError> {
        let (token, wallet) = (tron_address(token)?, tron_address(wallet)?);
        let (balance, at) = landed::solid_balance(&*self.client(chain)?, &token, &wallet).await?;
        if at != block {
            return Err(SendError::Unavailable(format!(
                "a TRON node answers balances at its solidified head ({at}), not at block {block}"
            )));
        }
        Ok(balance)
    }

    async fn wallet_movements(&self, chain: &str, token: &str, wallet: &str, from: u64, to: u64) -> Result<Vec<Movement>, SendError> {
        let (token, wallet) = (tron_address(token)?, tron_address(wallet)?);
        landed::wallet_movements(&*self.client(chain)?, &token, &wallet, from, to).await
    }

    /// One request per block: a pass reads at most this many (a 3-second
    /// chain makes 20 in a minute).
    fn most_blocks_per_read(&self) -> u64 {
        200
    }

    /// The token, and for Permit2 assets the Permit2 and x402 proxy
    /// addresses the config names, must each hold a contract.
    async fn asset_differences(&self, chain: &str, asset: &crate::config::Asset) -> Result<Vec<String>, ChainError> {
        let Some(client) = self.chains.get(chain) else { return Ok(vec![]) };
        let mut named = vec![("token", asset.token.as_str())];
        for (role, key) in [("Permit2", "permit2-address"), ("x402 proxy", "proxy-address")] {
            if let Some(at) = asset.params.get(key) {
                named.push((role, at.as_str()));
            }
        }
        let mut out = Vec::new();
        for (role, at) in named {
            let Some(address) = tron_wire::address::parse(at) else {
                out.push(format!("the {role} address `{at}` is not a TRON address"));
                continue;
            };
            let raw = alloy_primitives::hex::encode(tron_wire::address::raw(&address));
            let found = client.rpc("/wallet/getcontract", serde_json::json!({ "value": raw, "visible": false })).await?;
            if found.get("bytecode").and_then(serde_json::Value::as_str).is_none_or(str::is_empty) {
                out.push(format!("no contract at the {role} address {at}"));
            }
        }
        Ok(out)
    }

    async fn sender_of(&self, chain: &str, tx: &str) -> Result<Option<String>, SendError> {
        let client = self.client(chain)?;
        let found = call(&client, "/wallet/gettransactionbyid", json!({ "value": tx })).await?;
        let raw = found.get("raw_data_hex").and_then(Value::as_str).and_then(|h| hex::decode(h).ok());
        Ok(raw.and_then(|r| owner(&r).ok()))
    }

    async fn balances(&self, chain: &str, owner: &str) -> Result<Vec<Balance>, ChainError> {
        let (Some(cfg), Some(client)) = (self.config.chains.get(chain), self.chains.get(chain)) else { return Ok(vec![]) };
        let sun = trx_balance(&client, owner).await?;
        let mut out = vec![Balance { chain: chain.into(), asset: cfg.native_asset.clone(), raw: U256::from(sun), decimals: TRX_DECIMALS }];
        let owner_hex =
            bs58::decode(owner).with_check(None).into_vec().map_err(|_| ChainError::BadAnswer(format!("{owner} is not a TRON address")))?;
        for (key, asset) in &cfg.assets {
            if self.config.availability(asset) != Availability::Available || asset.token.is_empty() {
                continue;
            }
            let v = client
                .rpc(
                    "/wallet/triggerconstantcontract",
                    json!({
                        "owner_address": owner, "contract_address": asset.token, "visible": true,
                        "function_selector": "balanceOf(address)", "parameter": format!("{:0>64}", hex::encode(&owner_hex[1..])),
                    }),
                )
                .await?;
            let raw = v.pointer("/constant_result/0").and_then(Value::as_str).and_then(|h| U256::from_str_radix(h, 16).ok());
            let raw = raw.ok_or_else(|| ChainError::BadAnswer(format!("balanceOf answered {v}")))?;
            out.push(Balance { chain: chain.into(), asset: key.clone(), raw, decimals: asset.decimals });
        }
        Ok(out)
    }

    async fn upkeep(&self, _seen: &mut Upkeep) -> anyhow::Result<()> {
        // No nonces: a TRON transaction's lifetime is its expiration.
        Ok(())
    }
}
