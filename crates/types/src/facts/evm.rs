//! The EVM family's facts.

use alloy_primitives::Address;

use super::KeyKind;
use super::{is_hex, Facts};
use crate::config::Family;
use crate::payment::SigningRequest;

pub static FACTS: Facts = Facts {
    family: Family::Evm,
    name: "evm",
    caip2_namespace: "eip155",
    chain_type: "ethereum",
    key_kind: KeyKind::Secp256k1,
    zero_addresses: &["0x0000000000000000000000000000000000000000"],
    reads: READS,
    hex_addresses: true,
    lowercase_ids: true,
    opens_accounts: false,
    payload_answers_once: false,
    x402_fee_payer: false,
    x402_gas_sponsoring: true,
    wallet_approves: false,
    native_tokens: &["0x0000000000000000000000000000000000000000", "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE"],
    is_address: |t| is_hex(t, 40),
    address20: |t| t.parse().ok(),
    show_address: |b| Address::from_slice(b).to_checksum(None),
    signs: |r| matches!(r, SigningRequest::Eip712Digest(_)),
    is_tx_id: |t| is_hex(t, 64),
    identity: |c| c.chain_id.map(|id| id.to_string()),
};

const READS: &[&str] = &[
    "eth_call",
    "eth_chainId",
    "eth_blockNumber",
    "eth_getBalance",
    "eth_getCode",
    "eth_getStorageAt",
    "eth_getTransactionCount",
    "eth_getTransactionByHash",
    "eth_getTransactionReceipt",
    "eth_getBlockByNumber",
    "eth_getLogs",
    "eth_estimateGas",
    "eth_gasPrice",
    "eth_maxPriorityFeePerGas",
    "eth_feeHistory",
];
