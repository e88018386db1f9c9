//! The spec's whole EVM matrix on the devnet (`devnet up --chains all`):
//! every chain served in its roles, and payments that settle on the chains
//! the matrix added: skale-base, which takes legacy (type 0) transactions
//! only (its devnet runs anvil's berlin hardfork and refuses EIP-1559), and
//! megaeth's 18-decimal MegaUSD paid out on monad.

use crate::common;

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Bytes, TxKind, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use serde_json::json;

use common::devnet::{decode_proof, rpc, rpc_answer, x402_pay, x402_pay_on, Devnet};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_evm_chain_of_the_spec_and_a_legacy_only_chain_settles() {
    let dn = Devnet::start(23645, "all", "").await;
    let (_, listed) = dn.call("GET", "/api/chains", None, &[]).await;
    assert_eq!(
        listed,
        json!({
            "chains": ["arbitrum", "base", "bsc", "ethereum", "hyperevm", "megaeth", "monad", "polygon", "skale-base"],
            "target_chains": ["arbitrum", "base", "bsc", "ethereum", "hyperevm", "monad", "polygon"],
        })
    );
    // Payer-only chains are refused as targets.
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": "skale-base" });
    let (status, _) = dn.call("POST", "/api/intents", Some(body), &[]).await;
    assert_eq!(status, 400);

    // The legacy chain refuses what it would refuse on mainnet: a type-2 transaction.
    let skale = dn.rpc_url("skale-base");
    let (_, key) = dn.payer(7);
    let signer: PrivateKeySigner = key.parse().unwrap();
    let nonce = rpc(&skale, "eth_getTransactionCount", json!([signer.address(), "pending"])).await;
    let tx = TxEip1559 {
        chain_id: 1187947933,
        nonce: u64::from_str_radix(nonce.as_str().unwrap().trim_start_matches("0x"), 16).unwrap(),
        gas_limit: 21_000,
        max_fee_per_gas: 10_000_000_000,
        max_priority_fee_per_gas: 0,
        to: TxKind::Call(signer.address()),
        value: U256::ZERO,
        access_list: Default::default(),
        input: Bytes::new(),
    };
    let sig = signer.sign_hash_sync(&tx.signature_hash()).unwrap();
    let raw = TxEnvelope::from(tx.into_signed(sig)).encoded_2718();
    let refused = rpc_answer(&skale, "eth_sendRawTransaction", json!([Bytes::from(raw)])).await;
    assert!(refused.get("error").is_some(), "a berlin chain takes no EIP-1559 transaction: {refused}");

    // A payment from skale-base, signed by the real x402 client: the relayer
    // settles it with a legacy transaction, and the merchant is paid on base.
    let (done, _) = dn.settle_public(("skale-base", "usdc"), ("base", "usdc"), "1.5", 0, x402_pay).await;
    let hash = done["source_payment"]["tx_hash"].as_str().unwrap();
    let tx = rpc(&skale, "eth_getTransactionByHash", json!([hash])).await;
    assert_eq!(tx["type"], "0x0", "a legacy transaction: {tx}");
    let receipt = rpc(&skale, "eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");

    // MegaUSD (18 decimals, Permit2 with an EIP-2612 permit) paid on megaeth,
    // paid out on monad (chain id 143).
    let url = dn.rpc_url("megaeth");
    let (_, proof) = dn.settle_public(("megaeth", "usdc"), ("monad", "usdc"), "2", 1, |r, k| x402_pay_on(r, k, &url)).await;
    let accepted = &decode_proof(&proof)["accepted"];
    assert_eq!(accepted["network"], "eip155:4326");
    assert_eq!(accepted["extra"]["decimals"], 18);
    assert_eq!(accepted["extra"]["name"], "MegaUSD");
}
