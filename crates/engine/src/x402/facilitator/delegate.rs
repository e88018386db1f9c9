//! The receiver authorizer a resource server may delegate to this
//! facilitator (`batch-settlement`): its key signs a claim batch or a
//! refund the server sent without its own signature, and only for a
//! caller that speaks for every receiver concerned. A refund signature is
//! money leaving the receiver's side (a payer asking for one could take
//! back what it owes), so the signature is the last thing done: after the
//! caller is known to be that receiver's, and before the adapter checks
//! the completed payload as if the server had signed it (vouchers,
//! balances, the nonce), then the contract call is simulated as it is sent.

use alloy_primitives::{Address, B256};
use batch_wire::payload::{parse, Fault, Payload};
use batch_wire::{ChannelConfig, VoucherClaim};
use serde_json::Value;

use super::resolve::Target;
use super::{Caller, Facilitator};
use crate::config::X402Scheme;
use crate::family::keys::Keystore;
use crate::x402::reason::Reason;
use stablerail_types::crypto::Secp256k1Key;

/// The keystore name of the receiver-authorizer key.
pub const KEY_NAME: &str = "authorizer:evm";

/// The facilitator's receiver authorizer: a key that only signs claims and
/// refunds; it holds and sends nothing.
pub struct Authorizer {
    pub address: Address,
    key: Secp256k1Key,
}

impl Authorizer {
    /// The key (made on first use when `keys init` has not), refused when
    /// it is one of the service's wallets: a refund or claim signature must
    /// never come from a key that also moves money.
    pub async fn load(keys: &Keystore) -> anyhow::Result<Authorizer> {
        let key = keys.signer(KEY_NAME).await?;
        let address = key.address();
        for (name, wallet) in keys.list().await? {
            if name != KEY_NAME && same_secp256k1_key(&name, &wallet, &address) {
                anyhow::bail!("the receiver authorizer `{KEY_NAME}` is the same key as `{name}`: it must be a key of its own");
            }
        }
        Ok(Authorizer { address, key })
    }

    /// 65 bytes, `v` 27 or 28, low `s`: the form the contract takes.
    fn sign(&self, digest: B256) -> Result<String, Reason> {
        let signature = stablerail_types::crypto::secp256k1_sign(&self.key, &digest).map_err(|e| {
            tracing::warn!(error = %e, "the receiver authorizer could not sign");
            Reason::ChainUnavailable
        })?;
        let mut bytes = signature.as_bytes();
        if bytes[64] < 27 {
            bytes[64] += 27;
        }
        Ok(alloy_primitives::hex::encode_prefixed(bytes))
    }
}

/// Whether the stored key `name` (its address in its family's form) is the
/// secp256k1 key whose EVM address is `address`: an EVM address is those 20
/// bytes, a TRON one base58check of 0x41 and the same 20 bytes.
fn same_secp256k1_key(name: &str, stored: &str, address: &Address) -> bool {
    match crate::family::keys::family_of(name) {
        crate::config::Family::Evm => stored.parse::<Address>().is_ok_and(|a| a == *address),
        crate::config::Family::Tron => {
            bs58::decode(stored).with_check(None).into_vec().is_ok_and(|b| b.len() == 21 && b[1..] == address.as_slice()[..])
        }
        _ => false,
    }
}

/// What a payload leaves for this facilitator to sign.
struct Unsigned {
    /// A claim batch (a `claim`, or a refund's claims) and where its
    /// signature goes.
    claims: Option<Vec<VoucherClaim>>,
    /// A completed refund's (config, amount, nonce).
    refund: Option<(ChannelConfig, u128, alloy_primitives::U256)>,
}

fn unsigned(payload: Payload) -> Option<Unsigned> {
    let u = match payload {
        Payload::Claim { claims, authorizer_signature: None } => Unsigned { claims: Some(claims), refund: None },
        // Only a refund the server completed: its nonce and amount are what
        // the signature binds (a request without them is the payer's, to
        // /verify; the adapter refuses it at settle).
        Payload::Refund { config, amount: Some(amount), completion, .. } if completion.refund_nonce.is_some() => Unsigned {
            claims: (!completion.claims.is_empty() && completion.claim_authorizer_signature.is_none()).then_some(completion.claims),
            refund: completion.refund_authorizer_signature.is_none().then(|| (config, amount, completion.refund_nonce.unwrap_or_default())),
        },
        _ => return None,
    };
    (u.claims.is_some() || u.refund.is_some()).then_some(u)
}

/// Sign what the server left to this facilitator, into `t.payload`. Nothing
/// changes when there is nothing to sign or no authorizer is configured
/// (the adapter then answers `…_authorizer_not_configured`). Refused: a
/// channel whose receiver authorizer is not this one, and a caller that is
/// not a key speaking for every receiver concerned.
pub async fn complete(s: &Facilitator, t: &mut Target, caller: &Caller) -> Result<(), Reason> {
    if t.scheme != X402Scheme::BatchSettlement {
        return Ok(());
    }
    let Some(authorizer) = s.authorizer.as_ref() else { return Ok(()) };
    let mut outer: Value = serde_json::from_str(&t.payload).map_err(|_| Reason::InvalidPayload)?;
    let Some(inner) = outer.get("payload") else { return Ok(()) };
    // A malformed payload is the adapter's to refuse, with its code.
    let Some(todo) = parse(inner).ok().and_then(unsigned) else { return Ok(()) };
    // Too many rows is the adapter's to refuse (by its code), unsigned.
    if todo.claims.as_ref().is_some_and(|c| c.len() > batch_wire::MAX_CLAIM_ROWS) {
        return Ok(());
    }
    let channels: Vec<&ChannelConfig> =
        todo.claims.iter().flatten().map(|c| &c.voucher.channel).chain(todo.refund.as_ref().map(|(c, _, _)| c)).collect();
    if channels.iter().any(|c| c.receiverAuthorizer != authorizer.address) {
        return Err(Reason::Batch(Fault::AuthorizerAddressMismatch));
    }
    let Caller::Key(name) = caller else { return Err(Reason::NotAllowed) };
    let receivers = crate::store::facilitator::key_receivers(&s.db, name).await.map_err(|e| {
        tracing::warn!(error = %e, "facilitator keys unavailable");
        Reason::ChainUnavailable
    })?;
    let chain_id = s.config.chains.get(&t.adapter.ctx.chain).and_then(|c| c.chain_id).ok_or(Reason::InvalidNetwork)?;
    let speaks_for = |a: &Address| receivers.iter().any(|r| binds(r, chain_id, a));
    if let Some(c) = channels.iter().find(|c| !speaks_for(&c.receiver)) {
        tracing::info!(key = %name, receiver = %c.receiver, "a claim or refund for a receiver the key does not speak for");
        return Err(Reason::NotAllowed);
    }
    let keccak = |d: &[u8]| alloy_primitives::keccak256(d).0;
    let inner = outer.get_mut("payload").and_then(Value::as_object_mut).ok_or(Reason::InvalidPayload)?;
    if let Some(claims) = &todo.claims {
        let signature = authorizer.sign(batch_wire::claim_batch_digest(&keccak, claims, chain_id))?;
        inner.insert("claimAuthorizerSignature".into(), signature.into());
    }
    if let Some((config, amount, nonce)) = &todo.refund {
        let channel = batch_wire::channel_id(&keccak, config, chain_id);
        let signature = authorizer.sign(batch_wire::refund_digest(&keccak, channel, *nonce, *amount, chain_id))?;
        inner.insert("refundAuthorizerSignature".into(), signature.into());
    }
    t.payload = outer.to_string();
    Ok(())
}

/// A receiver a facilitator key speaks for, as the operator names it: an
/// EVM address (on every EVM network), or a CAIP-10 account id
/// (`eip155:8453:0x…`: on that network only, for a receiver that is not
/// the same party everywhere, such as a counterfactual wallet). In the
/// form it is stored in (lowercase hex, the chain id as a number).
pub fn receiver_binding(text: &str) -> Result<String, String> {
    let (network, address) = match text.rsplit_once(':') {
        None => (None, text),
        Some((network, address)) => (Some(network), address),
    };
    let wrong = || format!("`{text}` is neither an EVM address (0x and 40 hex digits) nor eip155:CHAIN_ID:ADDRESS");
    let hex = address.strip_prefix("0x").ok_or_else(wrong)?;
    // Mixed case is an EIP-55 checksum: a typo in it is refused.
    let mixed = hex.bytes().any(|b| b.is_ascii_uppercase()) && hex.bytes().any(|b| b.is_ascii_lowercase());
    let address = match mixed {
        true => {
            Address::parse_checksummed(address, None).map_err(|_| format!("`{text}`: the address's checksum (its mixed case) is wrong"))?
        }
        false => address.parse().map_err(|_| wrong())?,
    };
    if address.is_zero() {
        return Err("cannot be the zero address".into());
    }
    match network {
        None => Ok(format!("{address:#x}")),
        Some(network) => {
            let digits = network.strip_prefix("eip155:").filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
            let id = digits.and_then(|d| d.parse::<u64>().ok()).filter(|id| *id > 0).ok_or_else(wrong)?;
            Ok(format!("eip155:{id}:{address:#x}"))
        }
    }
}

/// Whether the stored binding `r` covers `address` on the chain `chain_id`.
fn binds(r: &str, chain_id: u64, address: &Address) -> bool {
    let at = format!("{address:#x}");
    r == at || r == format!("eip155:{chain_id}:{at}")
}
