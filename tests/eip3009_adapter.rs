//! The real EIP-3009 adapter, loaded in the real runtime, against payloads
//! signed by an independent signer (alloy's local signer).

use crate::common;

use std::sync::Arc;

use alloy_primitives::{address, hex, Address, B256, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use alloy_sol_types::{sol, Eip712Domain, SolCall, SolStruct};
use serde_json::{json, Value};
use stablerail::adapter::AssetAdapter;
use stablerail::payment::{AdapterError, PaymentRequirements, ProofError, ReceiptStatus, SigningRequest, Submission, Terms, Transfer};

use common::eip3009::{usdc_domain as domain, TransferWithAuthorization, COLLECTOR, USDC};
use common::{TestClock, BASE_USDC};

sol! {
    function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external;
}

struct Fixture {
    _dir: tempfile::TempDir,
    clock: TestClock,
    usdc: Arc<AssetAdapter>,
    payer: PrivateKeySigner,
}

fn fixture_with(body: &str, chain: &str, asset: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let reg = common::registry(dir.path(), body, clock.clock()).expect("registry loads");
    let usdc = reg.asset(chain, asset).expect("asset is served");
    Fixture { _dir: dir, clock, usdc, payer: PrivateKeySigner::random() }
}

fn fixture() -> Fixture {
    fixture_with(BASE_USDC, "base", "usdc")
}

impl Fixture {
    fn requirements(&self, amount: &str) -> PaymentRequirements {
        let terms = Terms { amount: amount.into(), pay_to: COLLECTOR.to_string(), max_timeout_seconds: 600 };
        common::wait(self.usdc.requirements(&terms)).unwrap().expect("requirements build")
    }

    fn authorization(&self, value: u64) -> TransferWithAuthorization {
        let now = self.clock.now();
        TransferWithAuthorization {
            from: self.payer.address(),
            to: COLLECTOR,
            value: U256::from(value),
            validAfter: U256::from(now - 60),
            validBefore: U256::from(now + 600),
            nonce: B256::repeat_byte(0x42),
        }
    }

    fn sign(&self, auth: &TransferWithAuthorization, domain: &Eip712Domain) -> String {
        common::eip3009::sign(&self.payer, auth, domain)
    }

    fn proof(&self, req: &PaymentRequirements, auth: &TransferWithAuthorization, signature: &str) -> Value {
        common::eip3009::proof(req, auth, signature)
    }

    fn verify(&self, req: &PaymentRequirements, proof: &Value) -> Result<stablerail::payment::VerifiedPayment, ProofError> {
        common::wait(self.usdc.verify(req, &proof.to_string())).expect("call completes")
    }
}

#[test]
fn requirements_carry_every_extra_member() {
    let f = fixture();
    let req = f.requirements("1010000");
    assert_eq!(req.scheme, "exact");
    assert_eq!(req.network, "eip155:8453");
    assert_eq!(req.amount, "1010000");
    assert_eq!(req.asset, USDC.to_checksum(None));
    assert_eq!(req.pay_to, COLLECTOR.to_checksum(None));
    assert_eq!(req.max_timeout_seconds, 600);
    let extra: Value = serde_json::from_str(&req.extra).unwrap();
    assert_eq!(extra["name"], "USD Coin");
    assert_eq!(extra["version"], "2");
    assert_eq!(extra["decimals"], 6);
    assert_eq!(extra["asset"], USDC.to_checksum(None));
    assert_eq!(extra["amount"], "1010000");
    assert!(extra.get("assetTransferMethod").is_none(), "EIP-3009 is signalled by absence");
    assert!(extra.get("domainType").is_none());
}

#[test]
fn independent_signature_verifies() {
    let f = fixture();
    let req = f.requirements("1000000");
    let auth = f.authorization(1_000_000);
    let proof = f.proof(&req, &auth, &f.sign(&auth, &domain(Some(8453), None)));
    let paid = f.verify(&req, &proof).expect("valid proof");
    assert_eq!(paid.payer, f.payer.address().to_checksum(None));
    assert_eq!(paid.pay_to, COLLECTOR.to_checksum(None));
    assert_eq!(paid.amount, "1000000");
    assert_eq!(paid.valid_before, f.clock.now() + 600);
    assert!(paid.replay_key.ends_with(&auth.nonce.to_string()), "{}", paid.replay_key);
    assert!(paid.replay_key.contains(&format!("{:#x}", f.payer.address())));
}

#[test]
fn tampered_amount_is_wrong_amount() {
    let f = fixture();
    let req = f.requirements("1000000");
    let auth = f.authorization(1_000_000);
    let mut proof = f.proof(&req, &auth, &f.sign(&auth, &domain(Some(8453), None)));
    proof["payload"]["authorization"]["value"] = json!("2000000");
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::WrongAmount(_))));

    // Signed for less than required: the amount check refuses it before the signature.
    let short = f.authorization(999_999);
    let proof = f.proof(&req, &short, &f.sign(&short, &domain(Some(8453), None)));
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::WrongAmount(_))));
}

#[test]
fn accepted_that_differs_from_requirements_is_refused() {
    let f = fixture();
    let req = f.requirements("1000000");
    let auth = f.authorization(1_000_000);
    let mut proof = f.proof(&req, &auth, &f.sign(&auth, &domain(Some(8453), None)));
    proof["accepted"]["amount"] = json!("1");
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::RequirementsMismatch(_))));
    let mut proof = f.proof(&req, &auth, &f.sign(&auth, &domain(Some(8453), None)));
    proof["accepted"]["network"] = json!("eip155:1");
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::RequirementsMismatch(_))));
}

#[test]
fn wrong_recipient_is_refused() {
    let f = fixture();
    let req = f.requirements("1000000");
    let mut auth = f.authorization(1_000_000);
    auth.to = address!("000000000000000000000000000000000000dead");
    let proof = f.proof(&req, &auth, &f.sign(&auth, &domain(Some(8453), None)));
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::WrongRecipient(_))));
}

#[test]
fn validity_window_is_enforced_with_margin() {
    let f = fixture();
    let req = f.requirements("1000000");
    let auth = f.authorization(1_000_000);
    let proof = f.proof(&req, &auth, &f.sign(&auth, &domain(Some(8453), None)));
    let valid_before = f.clock.now() + 600;

    f.clock.set(valid_before - 7);
    assert!(f.verify(&req, &proof).is_ok(), "7 s left is enough");
    f.clock.set(valid_before - 5);
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::Expired)), "inside the 6 s margin");
    f.clock.set(valid_before + 100);
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::Expired)));

    f.clock.set(valid_before - 600 - 61);
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::NotYetValid)));
}

#[test]
fn bad_signatures_are_refused() {
    let f = fixture();
    let req = f.requirements("1000000");
    let auth = f.authorization(1_000_000);
    let good = f.sign(&auth, &domain(Some(8453), None));

    let proof = f.proof(&req, &auth, "not hex at all");
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::InvalidSignature(_))));

    // 65 bytes that are no signature (r = s = 0).
    let zero = format!("0x{}1b", "00".repeat(64));
    assert!(matches!(f.verify(&req, &f.proof(&req, &auth, &zero)), Err(ProofError::InvalidSignature(_))));

    // The same signature with s flipped to the upper half: malleable, refused.
    let mut bytes = hex::decode(&good).unwrap();
    let n = U256::from_be_bytes(hex!("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"));
    let s = U256::from_be_slice(&bytes[32..64]);
    bytes[32..64].copy_from_slice(&(n - s).to_be_bytes::<32>());
    bytes[64] ^= 1;
    let flipped = hex::encode_prefixed(&bytes);
    assert!(matches!(f.verify(&req, &f.proof(&req, &auth, &flipped)), Err(ProofError::InvalidSignature(_))));

    // Signed by someone else.
    let other = PrivateKeySigner::random();
    let sig = other.sign_hash_sync(&auth.eip712_signing_hash(&domain(Some(8453), None))).unwrap();
    let proof = f.proof(&req, &auth, &hex::encode_prefixed(sig.as_bytes()));
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::SignerMismatch(_))));

    // Signed over another chain's domain: recovers to a stranger.
    let proof = f.proof(&req, &auth, &f.sign(&auth, &domain(Some(1), None)));
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::SignerMismatch(_))));
}

#[test]
fn malformed_proofs_are_refused() {
    let f = fixture();
    let req = f.requirements("1000000");
    for bad in ["", "not json", "{}", "[1,2]", r#"{"x402Version":2}"#] {
        assert!(matches!(common::wait(f.usdc.verify(&req, bad)).unwrap(), Err(ProofError::Malformed(_))), "{bad:?}");
    }
    let auth = f.authorization(1_000_000);
    let good = f.proof(&req, &auth, &f.sign(&auth, &domain(Some(8453), None)));

    let mut p = good.clone();
    p["payload"]["authorization"].as_object_mut().unwrap().remove("nonce");
    assert!(matches!(f.verify(&req, &p), Err(ProofError::Malformed(_))));
    let mut p = good.clone();
    p["payload"]["authorization"]["from"] = json!("0x1234");
    assert!(matches!(f.verify(&req, &p), Err(ProofError::Malformed(_))));
    let mut p = good.clone();
    p["payload"]["authorization"]["value"] = json!("1e6");
    assert!(matches!(f.verify(&req, &p), Err(ProofError::Malformed(_))));
    // What the host does not type (0.6.0) the adapter decodes and refuses
    // in its own words: a wrong EIP-55 checksum, a signature that is not hex,
    // a member given twice.
    let mut p = good.clone();
    let from = f.payer.address().to_checksum(None);
    let flipped: String = from.chars().map(|c| if c.is_ascii_uppercase() { c.to_ascii_lowercase() } else { c }).collect();
    let flipped = flipped.replacen(|c: char| c.is_ascii_lowercase() && c.is_ascii_hexdigit() && !c.is_ascii_digit(), "A", 1);
    p["payload"]["authorization"]["from"] = json!(flipped);
    assert!(matches!(f.verify(&req, &p), Err(ProofError::Malformed(m)) if m.contains("EIP-55")), "{flipped}");
    let mut p = good.clone();
    p["payload"]["signature"] = json!("0xnothex");
    assert!(matches!(f.verify(&req, &p), Err(ProofError::InvalidSignature(m)) if m.contains("not hex")));
    let twice = good.to_string().replacen("\"signature\":", "\"signature\":\"0x00\",\"signature\":", 1);
    assert!(
        matches!(common::wait(f.usdc.verify(&req, &twice)).unwrap(), Err(ProofError::Malformed(m)) if m.contains("duplicate")),
        "{twice}"
    );
    let mut p = good.clone();
    p["x402Version"] = json!(1);
    assert!(matches!(f.verify(&req, &p), Err(ProofError::Unsupported(_))));
    let mut p = good;
    p["accepted"]["scheme"] = json!("upto");
    assert!(matches!(f.verify(&req, &p), Err(ProofError::Unsupported(_))));
}

#[test]
fn settle_is_transfer_with_authorization_vrs() {
    let f = fixture();
    let req = f.requirements("1000000");
    let auth = f.authorization(1_000_000);
    let sig_hex = f.sign(&auth, &domain(Some(8453), None));
    let proof = f.proof(&req, &auth, &sig_hex);
    let steps = common::wait(f.usdc.settle(&req, &proof.to_string())).unwrap().expect("settles");
    assert_eq!(steps.len(), 1);
    let Submission::EvmCall(call) = &steps[0].submission else { panic!("expected an EVM call") };
    assert_eq!(call.to, USDC.to_checksum(None));
    assert_eq!(call.value, "0");
    let decoded = transferWithAuthorizationCall::abi_decode(&call.data).expect("v,r,s overload");
    let sig = hex::decode(&sig_hex).unwrap();
    assert_eq!(decoded.from, f.payer.address());
    assert_eq!(decoded.to, COLLECTOR);
    assert_eq!(decoded.value, U256::from(1_000_000));
    assert_eq!(decoded.nonce, auth.nonce);
    assert_eq!(decoded.r.as_slice(), &sig[..32]);
    assert_eq!(decoded.s.as_slice(), &sig[32..64]);
    assert!(decoded.v == 27 || decoded.v == 28);

    // settle re-checks: a bad proof yields no transaction.
    let mut bad = proof;
    bad["payload"]["authorization"]["value"] = json!("5");
    assert!(common::wait(f.usdc.settle(&req, &bad.to_string())).unwrap().is_err());
}

#[test]
fn authorize_and_assemble_round_trip() {
    let f = fixture();
    let req = f.requirements("2500000");
    let now = f.clock.now();
    let transfer = Transfer {
        sender: f.payer.address().to_string(),
        recipient: COLLECTOR.to_string(),
        amount: "2500000".into(),
        valid_after: now - 5,
        valid_before: now + 300,
        nonce: vec![7u8; 32],
    };
    let request = common::wait(f.usdc.authorize(&transfer)).unwrap().unwrap();
    let SigningRequest::Eip712Digest(digest) = request.clone() else { panic!("EIP-3009 asks for an EIP-712 digest") };
    // The digest is the standard one: the same struct hashed by alloy here.
    let expected = TransferWithAuthorization {
        from: f.payer.address(),
        to: COLLECTOR,
        value: U256::from(2_500_000),
        validAfter: U256::from(now - 5),
        validBefore: U256::from(now + 300),
        nonce: B256::repeat_byte(7),
    }
    .eip712_signing_hash(&domain(Some(8453), None));
    assert_eq!(digest, expected.to_vec());

    let sig = f.payer.sign_hash_sync(&B256::from_slice(&digest)).unwrap();
    let proof = common::wait(f.usdc.assemble(&req, &transfer, &request, sig.as_bytes().to_vec())).unwrap().expect("assembles");
    let paid = common::wait(f.usdc.verify(&req, &proof)).unwrap().expect("assembled proof verifies");
    assert_eq!(paid.amount, "2500000");
}

#[test]
fn salted_domain_signature_verifies_and_chain_id_domain_does_not() {
    let body = BASE_USDC.replace("eip712_version = \"2\"", "eip712_version = \"2\"\ndomain = \"salted\"");
    let f = fixture_with(&body, "base", "usdc");
    let req = f.requirements("1000000");
    let extra: Value = serde_json::from_str(&req.extra).unwrap();
    assert_eq!(extra["domainType"], "salted");
    let auth = f.authorization(1_000_000);
    let salt = B256::from(U256::from(8453));
    let salted = domain(None, Some(salt));
    // Known-answer: the salted domain's typehash.
    assert_eq!(alloy_primitives::keccak256(salted.encode_type()), hex!("36c25de3e541d5d970f66e4210d728721220fff5c077cc6cd008b3a0c62adab7"));
    let proof = f.proof(&req, &auth, &f.sign(&auth, &salted));
    assert!(f.verify(&req, &proof).is_ok());
    let proof = f.proof(&req, &auth, &f.sign(&auth, &domain(Some(8453), None)));
    assert!(matches!(f.verify(&req, &proof), Err(ProofError::SignerMismatch(_))));
}

#[test]
fn amounts_and_addresses() {
    let f = fixture();
    let units = |a: &str| common::wait(f.usdc.to_base_units(a)).unwrap();
    assert_eq!(units("1").unwrap(), "1000000");
    assert_eq!(units("0.02").unwrap(), "20000");
    assert_eq!(units("1000000.123456").unwrap(), "1000000123456");
    for bad in ["1.1234567", "", "abc", "-1", "1.", ".5", "1e3", " 1"] {
        assert!(matches!(units(bad), Err(AdapterError::InvalidAmount(_))), "{bad:?}");
    }
    let evm = stablerail::payment::Family::Evm;
    let norm = |a: &str| common::wait(f.usdc.normalize_address(evm, a)).unwrap();
    assert_eq!(norm("0x833589fcd6edb6e08f4c7c32d4f71b54bda02913").unwrap(), USDC.to_checksum(None));
    assert_eq!(norm("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913").unwrap(), USDC.to_checksum(None));
    for bad in [
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02914",
        "0x833589fCD6eDb6E08F4c7C32D4f71b54bdA02913",
        "833589fcd6edb6e08f4c7c32d4f71b54bda02913",
        "0x1234",
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
    ] {
        assert!(matches!(norm(bad), Err(AdapterError::InvalidAddress(_))), "{bad:?}");
    }
}

#[test]
fn bsc_eighteen_decimals_scale_exactly() {
    let body = BASE_USDC
        .replace("chain_id = 8453", "chain_id = 56")
        .replace("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d")
        .replace("decimals = 6", "decimals = 18");
    let f = fixture_with(&body, "base", "usdc");
    assert_eq!(common::wait(f.usdc.to_base_units("0.02")).unwrap().unwrap(), "20000000000000000");
    assert_eq!(common::wait(f.usdc.to_base_units("1000000")).unwrap().unwrap(), "1000000000000000000000000");
    let req = f.requirements("20000000000000000");
    let extra: Value = serde_json::from_str(&req.extra).unwrap();
    assert_eq!(extra["decimals"], 18);
}

#[test]
fn receipts_are_read_for_the_exact_transfer() {
    let f = fixture();
    let req = f.requirements("1000000");
    let auth = f.authorization(1_000_000);
    let proof = f.proof(&req, &auth, &f.sign(&auth, &domain(Some(8453), None)));
    let paid = f.verify(&req, &proof).unwrap();
    let topic = |a: Address| format!("0x{:0>64}", hex::encode(a));
    let transfer_sig = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
    let receipt = |status: &str, value: u64| {
        json!({
            "transactionHash": "0xabc0000000000000000000000000000000000000000000000000000000000001",
            "blockNumber": "0x10", "status": status,
            "logs": [{
                "address": USDC.to_string().to_lowercase(),
                "topics": [transfer_sig, topic(f.payer.address()), topic(COLLECTOR)],
                "data": format!("0x{:064x}", value),
            }]
        })
        .to_string()
    };
    let read = |r: &str| common::wait(f.usdc.read_receipt(&paid, r)).unwrap();
    match read(&receipt("0x1", 1_000_000)).unwrap() {
        ReceiptStatus::Settled(s) => {
            assert_eq!(s.amount, "1000000");
            assert_eq!(s.block, 16);
            assert_eq!(s.to, COLLECTOR.to_checksum(None));
        }
        other => panic!("expected settled, got {other:?}"),
    }
    assert!(matches!(read(&receipt("0x0", 1_000_000)).unwrap(), ReceiptStatus::Failed(_)));
    assert!(matches!(read(&receipt("0x1", 999_999)).unwrap(), ReceiptStatus::Failed(_)));
    assert!(matches!(read("null").unwrap(), ReceiptStatus::Pending));
    assert!(matches!(read("{not json"), Err(AdapterError::Malformed(_))));
    assert!(matches!(read(r#"{"transactionHash":"0x1","blockNumber":"0x1","status":"0x1"}"#), Err(AdapterError::Malformed(_))));

    // A batch's receipt, as a node returns it: every call's logs with all
    // their fields, another token's and other payers' transfers around ours.
    let log = |token: Address, from: Address, value: u64, index: usize| {
        json!({
            "address": token.to_string(), "blockHash": format!("0x{:064x}", 7), "blockNumber": "0x10",
            "blockTimestamp": "0x6543", "data": format!("0x{:064x}", value), "logIndex": format!("{index:#x}"),
            "removed": false, "topics": [transfer_sig, topic(from), topic(COLLECTOR)],
            "transactionHash": format!("0x{:064x}", 1), "transactionIndex": "0x0",
        })
    };
    let mut logs: Vec<Value> = (0..40).map(|n| log(USDC, Address::repeat_byte(n as u8 + 1), 1_000_000, n)).collect();
    logs.insert(17, log(Address::repeat_byte(0xee), f.payer.address(), 1_000_000, 99)); // not the token
    let batch = |logs: &[Value]| {
        json!({
            "transactionHash": format!("0x{:064x}", 1), "blockNumber": "0x10", "status": "0x1", "type": "0x2",
            "cumulativeGasUsed": "0x1", "effectiveGasPrice": "0x1", "from": f.payer.address().to_string(),
            "to": USDC.to_string(), "contractAddress": null, "logsBloom": format!("0x{}", "0".repeat(512)), "logs": logs,
        })
        .to_string()
    };
    assert!(matches!(read(&batch(&logs)).unwrap(), ReceiptStatus::Failed(_)), "only another token moved the payer's funds");
    logs.insert(30, log(USDC, f.payer.address(), 1_000_000, 100));
    assert!(matches!(read(&batch(&logs)).unwrap(), ReceiptStatus::Settled(_)));
}

#[test]
fn chain_checks_report_an_unreachable_chain() {
    // A chain that answers no eth_call (the empty chain): preflight cannot
    // read the authorization's state or the balance and says so, rather
    // than passing a payment it could not check.
    let f = fixture();
    let req = f.requirements("1000000");
    let auth = f.authorization(1_000_000);
    let paid = f.verify(&req, &f.proof(&req, &auth, &f.sign(&auth, &domain(Some(8453), None)))).unwrap();
    let r = common::wait(f.usdc.preflight(&paid));
    assert!(matches!(r.unwrap(), Err(ProofError::ChainUnavailable(_))));
}
