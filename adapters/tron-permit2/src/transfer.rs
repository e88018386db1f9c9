//! Transfers from host-held wallets (the proxy paying a merchant, an
//! agent's wallet paying the collection wallet): a plain TRC-20 `transfer`
//! that the wallet owns and signs, so no Permit2 approval is needed. The
//! proof is an x402 payload whose `payload` is the signed transaction:
//! `{"transaction": {"rawDataHex", "signature"}}`.

use alloy_primitives::{hex, keccak256, Address, U256};
use alloy_sol_types::{sol, SolCall};
use serde::{Deserialize, Serialize};
use tron_wire::{address, raw};

use crate::stablerail::adapter0_1_0::types::*;
use crate::stablerail::adapter0_1_0::{clock, crypto};
use crate::stablerail::adapter0_6_0::types::AssetContext;
use crate::stablerail::adapter0_7_0::types::ProofError;
use crate::{units, Setup, MAX_FEE_LIMIT, VALIDITY_MARGIN_SECS};

sol! {
    function transfer(address to, uint256 value) returns (bool);
}

/// Replay keys of signed transfers start with this (then network and txID).
pub const TRANSFER_KEY: &str = "tron-tx:";

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Signed {
    /// `Transaction.raw` protobuf, hex.
    pub raw_data_hex: String,
    /// 65 bytes r‖s‖v over the txID, hex.
    pub signature: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferPayload {
    pub transaction: Signed,
}

/// A transfer that passed every offline check.
pub struct Checked {
    pub payment: VerifiedPayment,
    pub raw_data: Vec<u8>,
    pub signature: Vec<u8>,
}

/// `raw_data` of `sender` paying `amount` of the token to `recipient`,
/// referencing `head`, valid until `expiration_ms`.
pub fn build(
    setup: &Setup,
    sender: &Address,
    recipient: &Address,
    amount: U256,
    head: &raw::Reference,
    now_ms: i64,
    expiration_ms: i64,
) -> Vec<u8> {
    let data = transferCall { to: *recipient, value: amount }.abi_encode();
    raw::trigger(address::raw(sender), address::raw(&setup.token), data, head, now_ms, expiration_ms, setup.fee_limit)
}

pub fn check(ctx: &AssetContext, setup: &Setup, req: &PaymentRequirements, p: TransferPayload) -> Result<Checked, ProofError> {
    let raw_data = hex::decode(p.transaction.raw_data_hex.trim_start_matches("0x"))
        .map_err(|_| ProofError::Malformed("rawDataHex is not hex".into()))?;
    let signature = hex::decode(p.transaction.signature.trim_start_matches("0x"))
        .map_err(|_| ProofError::InvalidSignature("signature is not hex".into()))?;
    let (tx, call) = raw::single_call(&raw_data).map_err(|m| ProofError::Malformed(m.into()))?;
    let owner = match call.owner_address.as_slice() {
        [0x41, rest @ ..] if rest.len() == 20 => Address::from_slice(rest),
        _ => return Err(ProofError::Malformed("the owner is not a TRON address".into())),
    };
    if call.contract_address != address::raw(&setup.token) {
        return Err(ProofError::RequirementsMismatch(format!(
            "the transaction calls {}, not the token {}",
            hex::encode(&call.contract_address),
            address::show(&setup.token)
        )));
    }
    if call.call_value != 0 {
        return Err(ProofError::Malformed("the transaction sends TRX".into()));
    }
    let pay_to =
        address::parse(&req.pay_to).ok_or_else(|| ProofError::Malformed(format!("payTo `{}` is not a TRON address", req.pay_to)))?;
    let amount = units(&req.amount).map_err(ProofError::Malformed)?;
    let t = transferCall::abi_decode(&call.data).map_err(|_| ProofError::Malformed("the call is not a TRC-20 transfer".into()))?;
    if t.to != pay_to {
        return Err(ProofError::WrongRecipient(format!("the transfer pays {}, not {}", address::show(&t.to), req.pay_to)));
    }
    if t.value != amount {
        return Err(ProofError::WrongAmount(format!("the transfer moves {}, not {amount}", t.value)));
    }
    // Exactly the call `build` makes: no trailing bytes after the arguments.
    if call.data != (transferCall { to: t.to, value: t.value }).abi_encode() {
        return Err(ProofError::Malformed("the transfer's calldata is not canonical".into()));
    }
    if !(1..=MAX_FEE_LIMIT).contains(&tx.fee_limit) {
        return Err(ProofError::Malformed(format!("fee_limit {} is not 1..={MAX_FEE_LIMIT} sun", tx.fee_limit)));
    }
    let now_ms = clock::now() as i64 * 1000;
    if tx.expiration <= now_ms + VALIDITY_MARGIN_SECS as i64 * 1000 {
        return Err(ProofError::Expired);
    }
    let id = raw::tx_id(&raw_data);
    let key = crypto::secp256k1_recover(&id, &signature).map_err(ProofError::InvalidSignature)?;
    let signer = Address::from_slice(&keccak256(&key[1..])[12..]);
    if signer != owner {
        return Err(ProofError::SignerMismatch(format!(
            "signed by {}, not by the owner {}",
            address::show(&signer),
            address::show(&owner)
        )));
    }
    let payment = VerifiedPayment {
        payer: address::show(&owner),
        pay_to: address::show(&pay_to),
        amount: amount.to_string(),
        valid_after: 0,
        valid_before: u64::try_from(tx.expiration / 1000).unwrap_or(0),
        replay_key: format!("{TRANSFER_KEY}{}:{}", ctx.network, hex::encode(id)),
    };
    Ok(Checked { payment, raw_data, signature })
}
