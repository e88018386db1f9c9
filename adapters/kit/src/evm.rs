//! EVM helpers: addresses, EIP-712 domains (standard and salted), the
//! EIP-3009 and Permit2 typed data, signatures, `eth_call` and receipts.
//!
//! ```ignore
//! use stablerail_adapter_kit::evm::{self, eip3009::TransferWithAuthorization};
//! let digest = evm::digest(&auth, &evm::token_separator(&ctx)?);
//! let signed = evm::payer::check(&digest, &signature, &auth.from)?;
//! ```
//!
//! Hashing goes through the host's native Keccak ([`signing_hash`],
//! [`checksum`]): alloy's own `eip712_signing_hash` and `to_checksum` give
//! the same answers, computed inside the sandbox at several times the cost.

use std::borrow::Cow;

use alloy_primitives::{hex, Address, B256, U256};
use alloy_sol_types::{sol, Eip712Domain, SolCall, SolEvent, SolStruct};
use serde_json::{json, Value};

use crate::amount::parse_units;
use crate::types::{
    AdapterError, AssetContext, DomainShape, EvmCall, Family, PaymentRequirements, ProofError, ReceiptStatus, SettledTransfer, Terms,
    VerifiedPayment,
};
use crate::{chain, host};

pub mod payer;
pub mod sponsor;

/// EIP-3009 `transferWithAuthorization`: the typed data a payer signs and
/// the token's calls.
pub mod eip3009 {
    alloy_sol_types::sol! {
        struct TransferWithAuthorization {
            address from;
            address to;
            uint256 value;
            uint256 validAfter;
            uint256 validBefore;
            bytes32 nonce;
        }

        function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external;
        function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature) external;
        function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
    }
}

/// Permit2 `SignatureTransfer` with the x402 witnesses (exact and upto),
/// the x402 proxies' calls and the payload JSON (`permit2-wire`).
pub mod permit2 {
    pub use permit2_wire::payload;
    pub use permit2_wire::*;

    /// Canonical Permit2 (the same address on every EVM chain).
    pub const PERMIT2: alloy_primitives::Address = alloy_primitives::address!("000000000022D473030F116dDEE9F6B43aC78BA3");
    /// The x402 exact-Permit2 proxy.
    pub const EXACT_PROXY: alloy_primitives::Address = alloy_primitives::address!("402085c248EeA27D92E8b30b2C58ed07f9E20001");
    /// The x402 upto-Permit2 proxy.
    pub const UPTO_PROXY: alloy_primitives::Address = alloy_primitives::address!("4020A4f3b7b90ccA423B9fabCc0CE57C6C240002");

    use crate::amount::parse_units;
    use crate::types::ProofError;
    use alloy_primitives::{Address, U256};
    use alloy_sol_types::SolCall;

    /// The replay key of a Permit2 nonce: per owner and chain, whatever the
    /// token or x402 scheme, so one nonce pays once.
    pub fn replay_key(network: &str, permit2: &Address, owner: &Address, nonce: U256) -> String {
        format!("permit2:{network}:{permit2:#x}:{owner:#x}:{nonce}")
    }

    /// Refused as `already-used` when the chain says the nonce of this
    /// replay key is spent (Permit2's nonces are bit `nonce & 255` of the
    /// owner's word `nonce >> 8`). Answers the nonce.
    pub fn check_unused(permit2: &Address, owner: Address, replay_key: &str) -> Result<U256, ProofError> {
        let nonce = parse_units(replay_key.rsplit(':').next().unwrap_or_default()).map_err(ProofError::Malformed)?;
        let out = super::eth_call(permit2, nonceBitmapCall { owner, wordPos: nonce >> 8 }.abi_encode())?;
        let word =
            nonceBitmapCall::abi_decode_returns(&out).map_err(|e| ProofError::ChainUnavailable(format!("nonceBitmap answer: {e}")))?;
        if word.bit((nonce & U256::from(0xff)).to::<usize>()) {
            return Err(ProofError::AlreadyUsed);
        }
        Ok(nonce)
    }
}
use crate::x402::SCHEME_EXACT;

sol! {
    function balanceOf(address owner) external view returns (uint256);
    function allowance(address owner, address spender) external view returns (uint256);
    function approve(address spender, uint256 value) external returns (bool);
    function isValidSignature(bytes32 hash, bytes signature) external view returns (bytes4);
    event Transfer(address indexed from, address indexed to, uint256 value);
}

/// secp256k1 group order / 2: signatures with a larger `s` are malleable
/// copies, and token contracts refuse them.
const HALF_ORDER: U256 = U256::from_be_bytes(hex!("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0"));

/// The EIP-55 checksum form of `address` (a letter of the hex is upper case
/// where the matching nibble of keccak256(lower-case hex) is 8 or more).
pub fn checksum(address: &Address) -> String {
    let lower = hex::encode(address.as_slice());
    let hash = host::keccak256(lower.as_bytes());
    let mut out = String::with_capacity(42);
    out.push_str("0x");
    for (i, c) in lower.chars().enumerate() {
        let nibble = (hash[i / 2] >> if i % 2 == 0 { 4 } else { 0 }) & 0x0f;
        out.push(if nibble >= 8 { c.to_ascii_uppercase() } else { c });
    }
    out
}

/// The EIP-712 digest of `message` under `domain`:
/// keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(message)).
/// For structs whose members are all atomic (EIP-3009's authorization, a
/// domain) every hash is the host's; a nested struct's members are hashed
/// by alloy inside `eip712_encode_data`.
pub fn signing_hash<S: SolStruct>(message: &S, domain: &Eip712Domain) -> B256 {
    digest(message, &domain_separator(domain))
}

/// The EIP-712 digest of `message` under a domain given by its separator
/// (the token's: [`token_separator`]).
pub fn digest<S: SolStruct>(message: &S, separator: &[u8; 32]) -> B256 {
    let mut digest = [0u8; 66];
    digest[..2].copy_from_slice(b"\x19\x01");
    digest[2..34].copy_from_slice(separator);
    let mut data = host::keccak256(S::eip712_encode_type().as_bytes()).to_vec();
    data.extend_from_slice(&message.eip712_encode_data());
    digest[34..].copy_from_slice(&host::keccak256(&data));
    B256::from(host::keccak256(&digest))
}

/// The token's EIP-712 domain separator: the host's (0.6.0 computes it once
/// per asset), or hashed here from [`token_domain`] where the host gave
/// none, with the same errors.
pub fn token_separator(ctx: &AssetContext) -> Result<[u8; 32], AdapterError> {
    match ctx.domain_separator.as_deref().and_then(|s| <[u8; 32]>::try_from(s).ok()) {
        Some(separator) => Ok(separator),
        None => Ok(domain_separator(&token_domain(ctx)?)),
    }
}

/// hashStruct(domain), each member encoded as EIP-712 says (strings by
/// their hash, the rest as words), in `Eip712Domain`'s order.
fn domain_separator(domain: &Eip712Domain) -> [u8; 32] {
    let mut data = host::keccak256(domain.encode_type().as_bytes()).to_vec();
    if let Some(name) = &domain.name {
        data.extend_from_slice(&host::keccak256(name.as_bytes()));
    }
    if let Some(version) = &domain.version {
        data.extend_from_slice(&host::keccak256(version.as_bytes()));
    }
    if let Some(chain_id) = domain.chain_id {
        data.extend_from_slice(&chain_id.to_be_bytes::<32>());
    }
    if let Some(contract) = domain.verifying_contract {
        data.extend_from_slice(contract.into_word().as_slice());
    }
    if let Some(salt) = domain.salt {
        data.extend_from_slice(salt.as_slice());
    }
    host::keccak256(&data)
}

/// Parse an EVM address. Mixed case must be a valid EIP-55 checksum.
pub fn parse_address(s: &str) -> Result<Address, String> {
    let body = s.strip_prefix("0x").ok_or_else(|| format!("`{s}` is not 0x-prefixed"))?;
    if body.len() != 40 || !body.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("`{s}` is not 20 bytes of hex"));
    }
    let addr: Address = s.parse().map_err(|_| format!("`{s}` is not an address"))?;
    let mixed = body.bytes().any(|b| b.is_ascii_lowercase()) && body.bytes().any(|b| b.is_ascii_uppercase());
    if mixed && checksum(&addr) != s {
        return Err(format!("`{s}` has a wrong EIP-55 checksum"));
    }
    Ok(addr)
}

/// `normalize-address` for EVM-only adapters: EIP-55 checksum form.
pub fn normalize(family: Family, address: &str) -> Result<String, AdapterError> {
    if family != Family::Evm {
        return Err(AdapterError::Unsupported("this adapter handles EVM addresses only".into()));
    }
    parse_address(address).map(|a| checksum(&a)).map_err(AdapterError::InvalidAddress)
}

pub fn parse_b256(s: &str, what: &str) -> Result<B256, String> {
    let bytes = hex::decode(s).map_err(|_| format!("{what} is not hex"))?;
    if bytes.len() != 32 {
        return Err(format!("{what} must be 32 bytes"));
    }
    Ok(B256::from_slice(&bytes))
}

pub fn same_address(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// The token's own EIP-712 domain, as configured for this (chain, asset).
/// Standard: name, version, chainId, verifyingContract. Salted: name,
/// version, verifyingContract and salt = bytes32(chainId), no chainId.
pub fn token_domain(ctx: &AssetContext) -> Result<Eip712Domain, AdapterError> {
    let cfg = |m: &str| AdapterError::Config(format!("{}/{}: {m}", ctx.chain, ctx.asset));
    let d = ctx.eip712.as_ref().ok_or_else(|| cfg("this scheme needs a token EIP-712 domain"))?;
    let chain_id = U256::from(ctx.chain_id.ok_or_else(|| cfg("chain id is not set"))?);
    let token = parse_address(&ctx.token).map_err(|e| cfg(&e))?;
    let (chain_id, salt) = match d.shape {
        DomainShape::Standard => (Some(chain_id), None),
        DomainShape::Salted => (None, Some(B256::from(chain_id))),
    };
    Ok(Eip712Domain::new(Some(Cow::Owned(d.name.clone())), Some(Cow::Owned(d.version.clone())), chain_id, Some(token), salt))
}

/// Recover the address that made a 65-byte r||s||v signature over `digest`.
pub fn recover(digest: &B256, signature: &[u8]) -> Result<Address, String> {
    if signature.len() != 65 {
        return Err(format!("signature must be 65 bytes, got {}", signature.len()));
    }
    let s = U256::from_be_slice(&signature[32..64]);
    if s > HALF_ORDER {
        return Err("signature s value is in the upper half of the curve order".into());
    }
    let public = host::secp256k1_recover(&digest.0, signature)?;
    if public.len() != 65 {
        return Err("host returned a malformed public key".into());
    }
    let hash = host::keccak256(&public[1..]);
    Ok(Address::from_slice(&hash[12..]))
}

/// Split a 65-byte signature into (v, r, s) with v in {27, 28}.
pub fn split_signature(sig: &[u8]) -> (u8, B256, B256) {
    let v = match sig[64] {
        0 | 1 => sig[64] + 27,
        v => v,
    };
    (v, B256::from_slice(&sig[..32]), B256::from_slice(&sig[32..64]))
}

/// `eth_call` against `to` at the latest block; returns the raw return data.
pub fn eth_call(to: &Address, data: Vec<u8>) -> Result<Vec<u8>, ProofError> {
    let params = json!([{ "to": to.to_string(), "data": hex::encode_prefixed(data) }, "latest"]);
    let text: String = chain::query("eth_call", &params)?;
    hex::decode(text).map_err(|_| ProofError::ChainUnavailable("eth_call answer is not hex".into()))
}

pub fn allowance_of(token: &Address, owner: Address, spender: Address) -> Result<U256, ProofError> {
    let out = eth_call(token, allowanceCall { owner, spender }.abi_encode())?;
    allowanceCall::abi_decode_returns(&out).map_err(|e| ProofError::ChainUnavailable(format!("allowance answer: {e}")))
}

/// `token.approve(spender, value)`, sent by whoever holds the tokens.
pub fn approve_call(token: &Address, spender: Address, value: U256) -> EvmCall {
    EvmCall { to: checksum(token), data: approveCall { spender, value }.abi_encode(), value: "0".into(), gas_limit: None }
}

/// Decode `approve(spender, value)` calldata.
/// A one-time call of a host-held wallet's preparation (`prepare-sender`)
/// as a settle step. Its label is the call's own (`setup:` and the first 8
/// bytes of keccak256(data), in hex), so a retry finds the step it stored.
pub fn setup_step(call: EvmCall) -> crate::types::SettleStep {
    let label = format!("setup:{}", &hex::encode(host::keccak256(&call.data))[..16]);
    crate::types::SettleStep { label, submission: crate::types::Submission::EvmCall(call) }
}

pub fn decode_approve(data: &[u8]) -> Option<(Address, U256)> {
    approveCall::abi_decode(data).ok().map(|c| (c.spender, c.value))
}

/// A chain read made outside proof checking: same failure, adapter wording.
pub fn as_adapter_error(e: ProofError) -> AdapterError {
    match e {
        ProofError::ChainUnavailable(m) => AdapterError::ChainUnavailable(m),
        other => AdapterError::Malformed(format!("{other:?}")),
    }
}

/// x402's window: valid from `valid_after`, and at least
/// `VALIDITY_MARGIN_SECS` left before `valid_before` (time to land).
pub fn check_window(valid_after: U256, valid_before: U256) -> Result<(), ProofError> {
    let now = U256::from(host::now());
    if valid_after > now {
        return Err(ProofError::NotYetValid);
    }
    if valid_before < now + U256::from(crate::x402::VALIDITY_MARGIN_SECS) {
        return Err(ProofError::Expired);
    }
    Ok(())
}

/// Refused as `insufficient-funds` when `owner` holds less than `amount` of `token`.
pub fn check_balance(token: &Address, owner: Address, amount: U256) -> Result<(), ProofError> {
    let balance = balance_of(token, owner)?;
    if balance < amount {
        return Err(ProofError::InsufficientFunds(format!("balance {balance} < {amount}")));
    }
    Ok(())
}

pub fn balance_of(token: &Address, owner: Address) -> Result<U256, ProofError> {
    let out = eth_call(token, balanceOfCall { owner }.abi_encode())?;
    balanceOfCall::abi_decode_returns(&out).map_err(|e| ProofError::ChainUnavailable(format!("balanceOf answer: {e}")))
}

/// x402 `exact` requirements for an EVM token. `extra` holds what the scheme
/// adds; decimals, asset and amount are always there, and the token's
/// EIP-712 name, version and domain type whenever it has a domain.
pub fn exact_requirements(ctx: &AssetContext, terms: Terms, mut extra: Value) -> Result<PaymentRequirements, AdapterError> {
    let token = parse_address(&ctx.token).map_err(|e| AdapterError::Config(format!("{}/{}: {e}", ctx.chain, ctx.asset)))?;
    let pay_to = parse_address(&terms.pay_to).map_err(AdapterError::InvalidAddress)?;
    parse_units(&terms.amount).map_err(AdapterError::InvalidAmount)?;
    extra["decimals"] = json!(ctx.decimals);
    extra["asset"] = json!(checksum(&token));
    extra["amount"] = json!(terms.amount);
    if let Some(d) = &ctx.eip712 {
        extra["name"] = json!(d.name);
        extra["version"] = json!(d.version);
        if d.shape == DomainShape::Salted {
            extra["domainType"] = json!("salted");
        }
    }
    Ok(PaymentRequirements {
        scheme: SCHEME_EXACT.into(),
        network: ctx.network.clone(),
        amount: terms.amount,
        asset: checksum(&token),
        pay_to: checksum(&pay_to),
        max_timeout_seconds: terms.max_timeout_seconds,
        extra: extra.to_string(),
    })
}

/// `read-receipt` for schemes whose settlement is one token transfer from
/// the payer to `payTo`.
pub fn read_payment_receipt(ctx: &AssetContext, payment: &VerifiedPayment, receipt: &str) -> Result<ReceiptStatus, AdapterError> {
    let token = parse_address(&ctx.token).map_err(AdapterError::Config)?;
    let from = parse_address(&payment.payer).map_err(AdapterError::Malformed)?;
    let to = parse_address(&payment.pay_to).map_err(AdapterError::Malformed)?;
    let amount = parse_units(&payment.amount).map_err(AdapterError::Malformed)?;
    read_transfer_receipt(receipt, &token, &from, &to, amount)
}

/// The parts of an `eth_getTransactionReceipt` result a transfer check reads,
/// borrowed from the text: a batch's receipt holds every call's logs, and
/// each intent in the batch reads it, so skipping the rest matters.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawReceipt<'a> {
    #[serde(borrow)]
    transaction_hash: Option<Cow<'a, str>>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    block_number: Option<Cow<'a, str>>,
    #[serde(borrow)]
    logs: Option<Vec<RawLog<'a>>>,
}

#[derive(serde::Deserialize)]
struct RawLog<'a> {
    #[serde(borrow)]
    address: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    topics: Vec<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<Cow<'a, str>>,
}

/// Read an `eth_getTransactionReceipt` result: did it move `amount` of
/// `token` from `from` to `to`?
pub fn read_transfer_receipt(
    receipt: &str,
    token: &Address,
    from: &Address,
    to: &Address,
    amount: U256,
) -> Result<ReceiptStatus, AdapterError> {
    let bad = |m: &str| AdapterError::Malformed(format!("receipt: {m}"));
    let Some(r) = serde_json::from_str::<Option<RawReceipt>>(receipt).map_err(|e| bad(&e.to_string()))? else {
        return Ok(ReceiptStatus::Pending);
    };
    let hexnum = |key: &str, v: &Option<Cow<str>>| -> Result<u64, AdapterError> {
        let s = v.as_deref().ok_or_else(|| bad(&format!("no {key}")))?;
        u64::from_str_radix(s.trim_start_matches("0x"), 16).map_err(|_| bad(&format!("bad {key}")))
    };
    let tx_hash = r.transaction_hash.as_deref().ok_or_else(|| bad("no transactionHash"))?.to_string();
    if hexnum("status", &r.status)? != 1 {
        return Ok(ReceiptStatus::Failed(format!("transaction {tx_hash} reverted")));
    }
    let block = hexnum("blockNumber", &r.block_number)?;
    let logs = r.logs.ok_or_else(|| bad("no logs"))?;
    let token = token.to_string();
    for log in &logs {
        let Some(addr) = log.address.as_deref() else { continue };
        if !same_address(addr, &token) {
            continue;
        }
        let topics: Vec<B256> = log.topics.iter().filter_map(|x| x.parse().ok()).collect();
        let data = log.data.as_deref().and_then(|d| hex::decode(d).ok()).unwrap_or_default();
        let Ok(ev) = Transfer::decode_raw_log(topics.iter().copied(), &data) else { continue };
        if ev.from == *from && ev.to == *to && ev.value == amount {
            return Ok(ReceiptStatus::Settled(SettledTransfer { tx_hash, to: checksum(to), amount: amount.to_string(), block }));
        }
    }
    Ok(ReceiptStatus::Failed(format!("transaction {tx_hash} succeeded but moved no {amount} from {from} to {to}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evm::eip3009::TransferWithAuthorization;
    use crate::evm::permit2::{PermitWitnessTransferFrom, TokenPermissions, Witness};

    fn addresses() -> Vec<Address> {
        (0u8..=255).map(|i| Address::from_slice(&host::keccak256(&[i, 7])[12..])).collect()
    }

    /// The host's separator is used as given; without one, the kit's own is
    /// alloy's, for both domain shapes.
    #[test]
    fn token_separator_is_the_hosts_or_alloys() {
        use crate::types::{DomainShape, Eip712Domain as Domain};
        let token = addresses()[3];
        let ctx = |shape, separator: Option<Vec<u8>>| AssetContext {
            chain: "base".into(),
            network: "eip155:8453".into(),
            family: Family::Evm,
            chain_id: Some(8453),
            asset: "usdc".into(),
            token: checksum(&token),
            decimals: 6,
            eip712: Some(Domain { name: "USD Coin".into(), version: "2".into(), shape }),
            relayer: None,
            params: vec![],
            domain_separator: separator,
        };
        let id = U256::from(8453u64);
        let standard = Eip712Domain::new(Some("USD Coin".into()), Some("2".into()), Some(id), Some(token), None);
        let salted = Eip712Domain::new(Some("USD Coin".into()), Some("2".into()), None, Some(token), Some(B256::from(id)));
        assert_eq!(token_separator(&ctx(DomainShape::Standard, None)).unwrap(), standard.separator().0);
        assert_eq!(token_separator(&ctx(DomainShape::Salted, None)).unwrap(), salted.separator().0);
        assert_eq!(token_separator(&ctx(DomainShape::Standard, Some(vec![7; 32]))).unwrap(), [7; 32]);
    }

    #[test]
    fn checksum_is_eip55() {
        for a in addresses() {
            assert_eq!(checksum(&a), a.to_checksum(None));
        }
        // EIP-55's own examples.
        for s in [
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
            "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
        ] {
            assert_eq!(checksum(&s.parse().unwrap()), s);
        }
    }

    /// The digest built from the host's hashes is alloy's, for the shapes
    /// adapters sign: every domain member set, a salted domain, a domain
    /// without version, a nested struct (Permit2's witness transfer).
    #[test]
    fn signing_hash_is_eip712() {
        let a = addresses();
        let auth = TransferWithAuthorization {
            from: a[1],
            to: a[2],
            value: U256::from(1_000_000u64),
            validAfter: U256::from(1u64),
            validBefore: U256::MAX,
            nonce: B256::repeat_byte(9),
        };
        let domains = [
            Eip712Domain::new(Some("USD Coin".into()), Some("2".into()), Some(U256::from(8453u64)), Some(a[3]), None),
            Eip712Domain::new(Some("USD Coin (PoS)".into()), Some("1".into()), None, Some(a[4]), Some(B256::from(U256::from(137u64)))),
            permit2::domain(8453, permit2::PERMIT2),
            Eip712Domain::new(None, None, None, None, None),
        ];
        let permit = PermitWitnessTransferFrom {
            permitted: TokenPermissions { token: a[5], amount: U256::from(5u64) },
            spender: permit2::EXACT_PROXY,
            nonce: U256::from(77u64),
            deadline: U256::from(1u64 << 40),
            witness: Witness { to: a[6], validAfter: U256::ZERO },
        };
        for d in &domains {
            assert_eq!(signing_hash(&auth, d), auth.eip712_signing_hash(d));
            assert_eq!(signing_hash(&permit, d), permit.eip712_signing_hash(d));
        }
    }
}
