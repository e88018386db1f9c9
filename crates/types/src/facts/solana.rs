//! The Solana family's facts.

use super::Facts;
use super::KeyKind;
use crate::config::Family;
use crate::payment::SigningRequest;

pub static FACTS: Facts = Facts {
    family: Family::Solana,
    name: "solana",
    caip2_namespace: "solana",
    chain_type: "solana",
    key_kind: KeyKind::Ed25519,
    zero_addresses: &["11111111111111111111111111111111"],
    reads: READS,
    hex_addresses: false,
    lowercase_ids: false,
    opens_accounts: true,
    payload_answers_once: true,
    x402_fee_payer: true,
    x402_gas_sponsoring: false,
    wallet_approves: false,
    native_tokens: &["11111111111111111111111111111111"],
    is_address: |t| bs58::decode(t).into_vec().is_ok_and(|b| b.len() == 32),
    address20: |_| None,
    show_address: |b| bs58::encode(b).into_string(),
    signs: |r| matches!(r, SigningRequest::SolanaMessage(_)),
    is_tx_id: |t| bs58::decode(t).into_vec().is_ok_and(|b| b.len() == 64),
    // The CAIP-2 reference is the genesis hash's first 32 characters.
    identity: |c| c.network().and_then(|n| n.strip_prefix("solana:").map(str::to_string)),
};

const READS: &[&str] = &[
    "getAccountInfo",
    "getMultipleAccounts",
    "getBalance",
    "getTokenAccountBalance",
    "getTokenAccountsByOwner",
    "getLatestBlockhash",
    "isBlockhashValid",
    "getSignatureStatuses",
    "getTransaction",
    "getSlot",
    "getBlockHeight",
    "getMinimumBalanceForRentExemption",
    "getFeeForMessage",
    "simulateTransaction",
];
