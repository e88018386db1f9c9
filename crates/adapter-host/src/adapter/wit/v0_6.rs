//! `stablerail:adapter@0.6.0`: the host decodes once, natively,
//! what adapters decoded in the sandbox on every call. `verify` and
//! `settle` are handed a `payment-proof` (the JSON and its envelope, with
//! EIP-3009's payload typed) and the context carries the token's EIP-712
//! domain separator. Its exports are found by index (`indexed.rs`).
//!
//! The decoding here is as strict as the kit's (`adapters/kit/src/x402.rs`,
//! `evm::parse_address`, `amount::parse_units`): what it types, the kit's
//! decoding would have accepted with the same values, and what it does
//! not, the adapter decodes from the JSON itself and refuses in its own
//! words.

use alloy_primitives::{hex, Address, U256};
use alloy_sol_types::Eip712Domain;
use serde::de::IgnoredAny;
use serde::Deserialize;
use wasmtime::component::{Component, ComponentExportIndex, Instance, InstancePre, TypedFunc};
use wasmtime::Store;

use super::indexed::{indexed_scheme, typed_exports};
use super::{same_calls, types, Call, Context, Linked, Scheme, S};
use crate::adapter::HostState;
use crate::payment as p;

wasmtime::component::bindgen!({
    world: "stablerail:adapter/adapter@0.6.0",
    path: "../../wit/0.6.0",
    with: {
        "stablerail:adapter/types@0.1.0": super::v0_1::stablerail::adapter::types,
        "stablerail:adapter/types@0.2.0": super::v0_2::stablerail::adapter0_2_0::types,
        "stablerail:adapter/types@0.4.0": super::v0_4::stablerail::adapter0_4_0::types,
        "stablerail:adapter/types@0.5.0": super::v0_5::stablerail::adapter0_5_0::types,
        "stablerail:adapter/crypto@0.1.0": super::v0_1::stablerail::adapter::crypto,
        "stablerail:adapter/chain@0.1.0": super::v0_1::stablerail::adapter::chain,
        "stablerail:adapter/clock@0.1.0": super::v0_1::stablerail::adapter::clock,
        "stablerail:adapter/log@0.1.0": super::v0_1::stablerail::adapter::log,
    },
});

pub(super) use self::stablerail::adapter0_6_0::types as wit6;
use super::v0_3::stablerail::adapter0_3_0::types as wit3;
use super::v0_4::stablerail::adapter0_4_0::types as wit4;
use super::v0_5::ProofError;

indexed_scheme!(version = "0.6.0", proof = ProofError, context = wit6::AssetContext, proof_arg = wit6::PaymentProof);

/// 0.6.0's context: 0.3.0's and the domain separator the host computed.
pub(super) fn context(c: Context) -> wit6::AssetContext {
    let wit3::AssetContext { chain, network, family, chain_id, asset, token, decimals, eip712, relayer, params } = super::v0_3::context(c);
    let domain_separator = c.domain_separator.map(|s| s.to_vec());
    wit6::AssetContext { chain, network, family, chain_id, asset, token, decimals, eip712, relayer, params, domain_separator }
}

/// hashStruct(EIP712Domain) of the token's domain, as the kit's
/// `evm::token_domain` builds it: present when the asset has a domain, the
/// chain an id and the token is an EVM address.
pub fn domain_separator(a: &types::AssetContext) -> Option<[u8; 32]> {
    let domain = super::v0_2::eip712(a)?;
    let chain_id = U256::from(a.chain_id?);
    let token = parse_address(&a.token)?;
    let (chain_id, salt) = match domain.shape {
        super::v0_2::stablerail::adapter0_2_0::types::DomainShape::Standard => (Some(chain_id), None),
        super::v0_2::stablerail::adapter0_2_0::types::DomainShape::Salted => (None, Some(chain_id.into())),
    };
    let d = Eip712Domain::new(Some(domain.name.into()), Some(domain.version.into()), chain_id, Some(token), salt);
    Some(d.separator().0)
}

/// The proof as 0.6.0 hands it over.
pub(super) fn payment_proof(json: &str) -> wit6::PaymentProof {
    wit6::PaymentProof { json: json.to_string(), decoded: decode(json) }
}

/// x402 v2's PaymentPayload, member for member as the kit's `x402` module
/// decodes it (`resource` and `extensions` any JSON, `payload` the scheme's).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<P> {
    x402_version: u32,
    #[serde(default)]
    #[allow(dead_code)]
    resource: Option<IgnoredAny>,
    accepted: Accepted,
    payload: P,
    #[serde(default)]
    #[allow(dead_code)]
    extensions: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Accepted {
    scheme: String,
    network: String,
    amount: String,
    asset: String,
    pay_to: String,
    max_timeout_seconds: u64,
    #[serde(default)]
    extra: serde_json::Value,
}

/// EIP-3009's payload, as the kit's EIP-3009 adapter decodes it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Exact3009 {
    signature: String,
    authorization: Authorization,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Authorization {
    from: String,
    to: String,
    value: String,
    valid_after: String,
    valid_before: String,
    nonce: String,
}

/// The envelope and EIP-3009's payload, where they decode as the kit's would.
pub fn decode(json: &str) -> Option<wit6::DecodedProof> {
    if let Ok(e) = serde_json::from_str::<Envelope<Exact3009>>(json) {
        let payload = eip3009(&e.payload).map_or(wit6::ProofPayload::Other, wit6::ProofPayload::Eip3009);
        return Some(decoded(e, payload));
    }
    let e = serde_json::from_str::<Envelope<IgnoredAny>>(json).ok()?;
    Some(decoded(e, wit6::ProofPayload::Other))
}

fn decoded<P>(e: Envelope<P>, payload: wit6::ProofPayload) -> wit6::DecodedProof {
    let a = e.accepted;
    let accepted = types::PaymentRequirements {
        scheme: a.scheme,
        network: a.network,
        amount: a.amount,
        asset: a.asset,
        pay_to: a.pay_to,
        max_timeout_seconds: a.max_timeout_seconds,
        extra: a.extra.to_string(),
    };
    wit6::DecodedProof { x402_version: e.x402_version, accepted, payload }
}

/// Every member well-formed the way the kit checks it, or `None`.
fn eip3009(p: &Exact3009) -> Option<wit6::Eip3009Payload> {
    let a = &p.authorization;
    let nonce = hex::decode(&a.nonce).ok().filter(|n| n.len() == 32)?;
    Some(wit6::Eip3009Payload {
        signature: hex::decode(&p.signature).ok()?,
        from: parse_address(&a.from)?.to_vec(),
        to: parse_address(&a.to)?.to_vec(),
        value: u256(parse_units(&a.value)?),
        valid_after: u256(parse_units(&a.valid_after)?),
        valid_before: u256(parse_units(&a.valid_before)?),
        nonce,
    })
}

/// `0x` and 40 hex digits; mixed case must be the EIP-55 checksum.
fn parse_address(s: &str) -> Option<Address> {
    let body = s.strip_prefix("0x")?;
    if body.len() != 40 || !body.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mixed = body.bytes().any(|b| b.is_ascii_lowercase()) && body.bytes().any(|b| b.is_ascii_uppercase());
    if mixed {
        Address::parse_checksummed(s, None).ok()
    } else {
        s.parse().ok()
    }
}

/// Decimal digits that fit 256 bits.
fn parse_units(s: &str) -> Option<U256> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    U256::from_str_radix(s, 10).ok()
}

fn u256(v: U256) -> (u64, u64, u64, u64) {
    let l = v.as_limbs();
    (l[3], l[2], l[1], l[0])
}
