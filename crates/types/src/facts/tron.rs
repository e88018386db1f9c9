//! The TRON family's facts.

use alloy_primitives::Address;

use super::Facts;
use super::KeyKind;
use crate::config::Family;
use crate::payment::SigningRequest;

pub static FACTS: Facts = Facts {
    family: Family::Tron,
    name: "tron",
    caip2_namespace: "tron",
    chain_type: "tron",
    key_kind: KeyKind::Secp256k1,
    // base58check of 0x41 followed by twenty zero bytes, and its hex form
    zero_addresses: &["T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb", "0x0000000000000000000000000000000000000000"],
    reads: READS,
    hex_addresses: true,
    lowercase_ids: false,
    opens_accounts: false,
    payload_answers_once: false,
    x402_fee_payer: false,
    x402_gas_sponsoring: false,
    wallet_approves: true,
    native_tokens: &["T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb"],
    is_address: |t| tron_wire::address::parse(t).is_some(),
    address20: tron_wire::address::parse,
    show_address: |b| tron_wire::address::show(&Address::from_slice(b)),
    signs: |r| matches!(r, SigningRequest::TronRawData(_)),
    is_tx_id: |t| {
        let hex = t.strip_prefix("0x").unwrap_or(t);
        hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())
    },
    // A TRON node's HTTP API does not say which chain it is on.
    identity: |_| None,
};

const READS: &[&str] = &[
    "/wallet/triggerconstantcontract",
    "/wallet/estimateenergy",
    "/wallet/gettransactioninfobyid",
    "/wallet/gettransactionbyid",
    "/wallet/getnowblock",
    "/wallet/getaccount",
    "/wallet/getaccountresource",
    "/wallet/getcontract",
    "/wallet/getchainparameters",
];
