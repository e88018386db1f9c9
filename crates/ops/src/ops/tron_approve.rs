//! TRON payers' one-time Permit2 approval (the spec's approval helpers):
//! build the one approve (or reset to 0) a payer needs, and accept back
//! only that shape, signed by the payer, before broadcasting it. The
//! service never signs here: the payer's wallet does.

use std::sync::Arc;

use alloy_primitives::{hex, Address, Signature, B256, U256};
use alloy_sol_types::SolCall;
use prost::Message;
use serde_json::{json, Value};
use tron_wire::address;
use tron_wire::raw::{self, Reference, Transaction};

use crate::adapter::Registry;
use crate::clock::now_ms;
use crate::config::{Availability, Config};
use crate::family::chain::{ChainClient, Chains};

use crate::family::tron::calls::{self, approveCall};

/// How long a prepared approve stays valid.
pub const LIFETIME_MS: i64 = 60_000;
/// The spec's cap on an approve's fee_limit: 50 TRX.
pub const FEE_LIMIT_CAP: i64 = 50_000_000;
/// What a prepared approve names as its fee_limit (TRON burns only what is used).
const FEE_LIMIT: i64 = FEE_LIMIT_CAP;
/// Clock skew tolerated between the payer's wallet and us, past the lifetime.
const SKEW_MS: i64 = 30_000;

/// Why a request was refused; each is its own fixed sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("address is not a TRON address")]
    Address,
    #[error("raw_data_hex is not one TriggerSmartContract call")]
    NotOneCall,
    #[error("raw_data's owner is not address")]
    Owner,
    #[error("raw_data calls another contract than the USDT contract")]
    Token,
    #[error("raw_data sends TRX with the call")]
    CallValue,
    #[error("raw_data is not an approve call")]
    NotApprove,
    #[error("the approve's spender is not Permit2")]
    Spender,
    #[error("the approve's amount is neither the maximum nor 0")]
    Amount,
    #[error("fee_limit is above the 50 TRX cap")]
    FeeLimit,
    #[error("the transaction has expired; request a new prepare")]
    Expired,
    #[error("the transaction's expiration is further away than a prepare gives")]
    TooLong,
    #[error("raw_data does not match raw_data_hex")]
    Mismatch,
    #[error("signature must be 64 or 65 bytes of hex")]
    SignatureShape,
    #[error("the signature does not recover to address")]
    Signer,
    #[error("the node refused the transaction")]
    NodeRefused,
}

/// What went wrong that is not the caller's fault.
#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The node did not answer or answered nonsense (logged, never shown).
    #[error("TRON node: {0}")]
    Node(String),
}

/// The TRON chain, USDT contract and Permit2 the helpers serve.
pub struct Wired {
    pub chain: String,
    pub usdt: Address,
    pub permit2: Address,
    client: Arc<ChainClient>,
}

impl Wired {
    /// The first exposed TRON chain serving usdt through a Permit2 adapter,
    /// or `None`: the helpers are then not registered.
    pub fn find(config: &Config, registry: &Registry, chains: &Chains) -> Option<Wired> {
        config.chains.iter().find_map(|(name, c)| {
            if !c.family.facts().wallet_approves || !config.chain_exposed(c) {
                return None;
            }
            let asset = c.assets.get("usdt").filter(|a| config.availability(a) == Availability::Available)?;
            registry.asset(name, "usdt")?;
            Some(Wired {
                chain: name.clone(),
                usdt: address::parse(&asset.token)?,
                permit2: address::parse(asset.params.get("permit2-address")?)?,
                client: chains.get(name)?,
            })
        })
    }

    async fn call(&self, path: &str, body: Value) -> Result<Value, ApproveError> {
        self.client.rpc(path, body).await.map_err(|e| ApproveError::Node(format!("{path}: {e}")))
    }

    /// What `address` must sign next, or `None` when its allowance is
    /// already the maximum.
    pub async fn prepare(&self, owner_text: &str) -> Result<Option<Prepared>, ApproveError> {
        let owner = address::parse(owner_text).ok_or(Refusal::Address)?;
        let allowance = calls::allowance(&self.client, &self.usdt, &owner, &self.permit2).await.map_err(ApproveError::Node)?;
        let (step, amount) = match allowance {
            a if a == U256::MAX => return Ok(None),
            a if a.is_zero() => (Step::Approve, U256::MAX),
            // USDT refuses to change a non-zero allowance: reset it first.
            _ => (Step::Reset, U256::ZERO),
        };
        let head = calls::head(&self.client).await.map_err(ApproveError::Node)?;
        let now = now_ms();
        let data = calls::approve_data(self.permit2, amount);
        let raw_data = calls::approve_raw(&owner, &self.usdt, self.permit2, amount, &head, now, now + LIFETIME_MS, FEE_LIMIT);
        Ok(Some(Prepared { step, raw_data, owner, usdt: self.usdt, data, head, timestamp: now, expiration: now + LIFETIME_MS }))
    }

    /// Check a signed approve against the one shape a prepare gives, then
    /// broadcast it. The txID on success.
    pub async fn submit(&self, s: &Signed<'_>) -> Result<String, ApproveError> {
        let (raw_data, signature) = self.check(s)?;
        let bytes = Transaction { raw_data: raw_data.clone(), signature: vec![signature] }.encode_to_vec();
        let id = hex::encode(raw::tx_id(&raw_data));
        let v = self.call("/wallet/broadcasthex", json!({ "transaction": hex::encode(bytes) })).await?;
        if v.get("result").and_then(Value::as_bool) == Some(true) {
            return Ok(id);
        }
        match v.get("code").and_then(Value::as_str) {
            // Sent before (a client's retry): it is the same transaction.
            Some("DUP_TRANSACTION_ERROR") => Ok(id),
            Some("TRANSACTION_EXPIRATION_ERROR") | Some("TAPOS_ERROR") => Err(Refusal::Expired.into()),
            Some("SERVER_BUSY") | Some("NO_CONNECTION") | Some("NOT_ENOUGH_EFFECTIVE_CONNECTION") => Err(ApproveError::Node(v.to_string())),
            _ => {
                tracing::info!(tx = %id, answer = %v, "the TRON node refused a payer's approve");
                Err(Refusal::NodeRefused.into())
            }
        }
    }

    /// The raw_data and the 65-byte signature (recovery byte re-derived).
    fn check(&self, s: &Signed) -> Result<(Vec<u8>, Vec<u8>), Refusal> {
        let owner = address::parse(s.address).ok_or(Refusal::Address)?;
        let raw_data = hex::decode(s.raw_data_hex.trim_start_matches("0x")).map_err(|_| Refusal::NotOneCall)?;
        let (tx, call) = raw::single_call(&raw_data).map_err(|_| Refusal::NotOneCall)?;
        if call.owner_address != address::raw(&owner) {
            return Err(Refusal::Owner);
        }
        if call.contract_address != address::raw(&self.usdt) {
            return Err(Refusal::Token);
        }
        if call.call_value != 0 {
            return Err(Refusal::CallValue);
        }
        let a = approveCall::abi_decode(&call.data).map_err(|_| Refusal::NotApprove)?;
        if call.data != (approveCall { spender: a.spender, value: a.value }).abi_encode() {
            return Err(Refusal::NotApprove);
        }
        if a.spender != self.permit2 {
            return Err(Refusal::Spender);
        }
        if a.value != U256::MAX && !a.value.is_zero() {
            return Err(Refusal::Amount);
        }
        if !(1..=FEE_LIMIT_CAP).contains(&tx.fee_limit) {
            return Err(Refusal::FeeLimit);
        }
        let now = now_ms();
        if tx.expiration <= now {
            return Err(Refusal::Expired);
        }
        if tx.expiration > now + LIFETIME_MS + SKEW_MS {
            return Err(Refusal::TooLong);
        }
        // The object is informative; where it says something, it must agree.
        let said = |k: &str| s.raw_data.get(k).map(|v| v.as_i64());
        for (key, value) in [("expiration", tx.expiration), ("fee_limit", tx.fee_limit)] {
            if said(key).is_some_and(|v| v != Some(value)) {
                return Err(Refusal::Mismatch);
            }
        }
        let sig = hex::decode(s.signature.trim_start_matches("0x")).map_err(|_| Refusal::SignatureShape)?;
        if sig.len() != 64 && sig.len() != 65 {
            return Err(Refusal::SignatureShape);
        }
        let id = B256::from(raw::tx_id(&raw_data));
        let rs: &[u8; 64] = sig[..64].try_into().expect("64 bytes");
        let parity = [false, true]
            .into_iter()
            .find(|&p| Signature::from_bytes_and_parity(rs, p).recover_address_from_prehash(&id).ok() == Some(owner))
            .ok_or(Refusal::Signer)?;
        let mut signature = rs.to_vec();
        signature.push(27 + u8::from(parity));
        Ok((raw_data, signature))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Approve,
    Reset,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Approve => "approve",
            Step::Reset => "reset",
        }
    }
}

/// An unsigned approve (or reset) for the payer to sign.
pub struct Prepared {
    pub step: Step,
    pub raw_data: Vec<u8>,
    owner: Address,
    usdt: Address,
    data: Vec<u8>,
    head: Reference,
    timestamp: i64,
    pub expiration: i64,
}

impl Prepared {
    pub fn tx_id(&self) -> String {
        hex::encode(raw::tx_id(&self.raw_data))
    }

    /// `raw_data` as TRON nodes show it (hex addresses), so that wallets
    /// that rebuild the bytes from the object (tronweb) get the same txID.
    pub fn raw_data_json(&self) -> Value {
        let hex = |b: &[u8]| hex::encode(b);
        json!({
            "contract": [{
                "parameter": {
                    "value": {
                        "data": hex(&self.data),
                        "owner_address": hex(&address::raw(&self.owner)),
                        "contract_address": hex(&address::raw(&self.usdt)),
                    },
                    "type_url": raw::TRIGGER_TYPE_URL,
                },
                "type": "TriggerSmartContract",
            }],
            "ref_block_bytes": hex(&self.head.number.to_be_bytes()[6..8]),
            "ref_block_hash": hex(&self.head.block_id[8..16]),
            "expiration": self.expiration,
            "fee_limit": FEE_LIMIT,
            "timestamp": self.timestamp,
        })
    }
}

/// A submit's body, borrowed.
pub struct Signed<'a> {
    pub address: &'a str,
    pub raw_data_hex: &'a str,
    pub raw_data: &'a Value,
    pub signature: &'a str,
}
