use alloy_primitives::{keccak256, Address, Signature, B256};
use serde_json::{json, Value};

use crate::payload::{parse, Fault, Payload};

fn keccak(data: &[u8]) -> [u8; 32] {
    keccak256(data).0
}

fn recover(digest: &B256, sig: &[u8]) -> Option<Address> {
    Signature::from_raw(sig).ok()?.recover_address_from_prehash(digest).ok()
}

fn vectors() -> Value {
    serde_json::from_str(include_str!("../vectors.json")).unwrap()
}

#[test]
fn the_reference_packages_ids_signatures_and_payloads_check_out() {
    let passed = crate::vectors::check(&vectors(), &keccak, &recover).unwrap();
    // 4 channel ids; the ERC-3009 deposit's 3 and the Permit2 one's 4;
    // 6 vouchers × 3 (channel, signer, one more is not theirs); a claim
    // batch and a refund.
    assert_eq!(passed, 4 + 3 + 4 + 6 * 3 + 2);
}

#[test]
fn a_changed_vector_fails_its_check() {
    let mut v = vectors();
    v["channels"][1]["config"]["withdrawDelay"] = json!(901);
    assert_eq!(crate::vectors::check(&v, &keccak, &recover).unwrap_err(), format!("channel id of {}", v["channels"][1]["config"]));
    let mut v = vectors();
    v["deposits"]["erc3009"]["deposit"]["amount"] = json!("100001");
    assert_eq!(crate::vectors::check(&v, &keccak, &recover).unwrap_err(), "erc3009: the ERC-3009 authorization's signer");
    let mut v = vectors();
    v["refund"]["amount"] = json!("1501");
    assert_eq!(crate::vectors::check(&v, &keccak, &recover).unwrap_err(), "the refund's signer");
}

#[test]
fn payloads_are_read_strictly_each_refusal_with_its_code() {
    let v = vectors();
    let deposit = &v["deposits"]["erc3009"];
    assert!(matches!(parse(deposit), Ok(Payload::Deposit { .. })));
    let voucher = json!({ "type": "voucher", "channelConfig": deposit["channelConfig"], "voucher": deposit["voucher"] });
    assert!(matches!(parse(&voucher), Ok(Payload::Voucher { .. })));
    let with = |base: &Value, path: &[&str], value: Value| {
        let mut p = base.clone();
        let mut at = &mut p;
        for key in &path[..path.len() - 1] {
            at = &mut at[*key];
        }
        at[path[path.len() - 1]] = value;
        p
    };
    let both = {
        let mut p = deposit.clone();
        p["deposit"]["authorization"]["permit2Authorization"] =
            v["deposits"]["permit2"]["deposit"]["authorization"]["permit2Authorization"].clone();
        p
    };
    for (payload, fault) in [
        (json!({ "channelConfig": deposit["channelConfig"] }), Fault::PayloadType),
        (with(&voucher, &["type"], json!("exact")), Fault::PayloadType),
        (with(&voucher, &["channelConfig", "withdrawDelay"], json!(899)), Fault::WithdrawDelayOutOfRange),
        (with(&voucher, &["channelConfig", "withdrawDelay"], json!(2_592_001)), Fault::WithdrawDelayOutOfRange),
        (with(&voucher, &["channelConfig", "payer"], json!("70997970C51812dc3A010C7d01b50e0d17dc79C8")), Fault::VoucherPayload),
        (with(&voucher, &["channelConfig", "salt"], json!("0x00")), Fault::VoucherPayload),
        (with(&voucher, &["voucher", "maxClaimableAmount"], json!("1e3")), Fault::VoucherPayload),
        (with(&voucher, &["voucher", "maxClaimableAmount"], json!("-1")), Fault::VoucherPayload),
        (with(&voucher, &["voucher", "maxClaimableAmount"], json!("340282366920938463463374607431768211456")), Fault::VoucherPayload),
        (with(&voucher, &["voucher", "maxClaimableAmount"], json!(1000)), Fault::VoucherPayload),
        (with(deposit, &["deposit", "amount"], json!("0x10")), Fault::DepositPayload),
        (with(deposit, &["deposit", "amount"], json!("0")), Fault::DepositPayload),
        (with(&voucher, &["voucher", "signature"], json!("0x")), Fault::VoucherPayload),
        (
            with(&voucher, &["voucher", "signature"], json!(format!("0x0x{}", &deposit["voucher"]["signature"].as_str().unwrap()[2..]))),
            Fault::VoucherPayload,
        ),
        (with(&voucher, &["voucher", "signature"], json!("0xabc")), Fault::VoucherPayload),
        (with(deposit, &["deposit", "authorization"], json!({})), Fault::DepositPayload),
        (both, Fault::DepositPayload),
        (with(&with(&voucher, &["type"], json!("refund")), &["amount"], json!("0")), Fault::RefundAmountInvalid),
        (with(&with(&voucher, &["type"], json!("refund")), &["amount"], json!("ten")), Fault::RefundAmountInvalid),
        (json!({ "type": "claim", "claims": [] }), Fault::ClaimPayload),
        (json!({ "type": "settle", "receiver": "0x000000000000000000000000000000000000bEEF" }), Fault::SettlePayload),
    ] {
        assert_eq!(parse(&payload).map(|_| ()), Err(fault), "{payload}");
    }
    // A refund without an amount is the whole rest; with one, that amount.
    let refund = with(&voucher, &["type"], json!("refund"));
    assert!(matches!(parse(&refund), Ok(Payload::Refund { amount: None, .. })));
    assert!(matches!(parse(&with(&refund, &["amount"], json!("1500"))), Ok(Payload::Refund { amount: Some(1500), .. })));
}

#[test]
fn the_contracts_calls_have_the_published_selectors() {
    use alloy_sol_types::SolCall;
    // keccak256 of the signatures in @x402/evm's batchSettlementABI.
    for (selector, signature) in [
        (crate::depositCall::SELECTOR, "deposit((address,address,address,address,address,uint40,bytes32),uint128,address,bytes)"),
        (
            crate::claimWithSignatureCall::SELECTOR,
            "claimWithSignature((((address,address,address,address,address,uint40,bytes32),uint128),bytes,uint128)[],bytes)",
        ),
        (crate::settleCall::SELECTOR, "settle(address,address)"),
        (
            crate::refundWithSignatureCall::SELECTOR,
            "refundWithSignature((address,address,address,address,address,uint40,bytes32),uint128,uint256,bytes)",
        ),
        (crate::multicallCall::SELECTOR, "multicall(bytes[])"),
        (crate::channelsCall::SELECTOR, "channels(bytes32)"),
    ] {
        assert_eq!(selector, keccak256(signature.as_bytes())[..4], "{signature}");
    }
}

#[test]
fn only_signatures_the_contract_takes_are_canonical() {
    let v = vectors();
    let sig: alloy_primitives::Bytes = v["vouchers"][1]["signature"].as_str().unwrap().parse().unwrap();
    assert!(crate::canonical(&sig));
    // The same signature malleated (s → n − s, v flipped), and with v as
    // 0/1 (which alloy's recovery, like viem's, still reads as the payer's):
    // the contract takes neither.
    let n =
        alloy_primitives::U256::from_be_bytes(alloy_primitives::hex!("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"));
    let mut high = sig.to_vec();
    high[32..64].copy_from_slice(&(n - alloy_primitives::U256::from_be_slice(&sig[32..64])).to_be_bytes::<32>());
    high[64] ^= 1;
    let mut low_v = sig.to_vec();
    low_v[64] -= 27;
    let config = crate::payload::config(&v["vouchers"][1]["config"]).unwrap();
    let digest = crate::voucher_digest(&keccak, crate::channel_id(&keccak, &config, 8453), 5000, 8453);
    assert_eq!(recover(&digest, &low_v), recover(&digest, &sig), "alloy recovers the payer from v 0/1");
    assert!(!crate::canonical(&high) && !crate::canonical(&low_v));
    assert!(!crate::canonical(&sig[..64]));
    // The check of the vectors refuses such a voucher.
    let mut v = vectors();
    v["vouchers"][1]["signature"] = json!(alloy_primitives::hex::encode_prefixed(&high));
    assert_eq!(crate::vectors::check(&v, &keccak, &recover).unwrap_err(), "voucher 5000");
}

#[test]
fn a_channel_state_that_breaks_the_contracts_invariant_is_refused() {
    use alloy_sol_types::SolValue;
    let words = |a: u128, b: u128| (alloy_primitives::U256::from(a), alloy_primitives::U256::from(b)).abi_encode_params();
    let nonce = alloy_primitives::U256::from(2).abi_encode();
    let state = crate::ChannelState::decode([&words(100, 40), &words(0, 0), &nonce]).unwrap();
    assert_eq!((state.balance, state.total_claimed, state.refund_nonce), (100, 40, alloy_primitives::U256::from(2)));
    assert!(crate::ChannelState::decode([&words(40, 100), &words(0, 0), &nonce]).unwrap_err().contains("above the balance"));
    // A uint128 with its high bits set is not a uint128.
    let mut dirty = words(100, 40);
    dirty[0] = 1;
    assert!(crate::ChannelState::decode([&dirty, &words(0, 0), &nonce]).is_err());
}

#[test]
fn the_verification_rules_refuse_each_mismatch_with_its_code() {
    use crate::payload::SignedVoucher;
    use crate::rules::{check, Kind, Signer, Terms};
    use crate::ChannelState;
    let v = vectors();
    let config = crate::payload::config(&v["vouchers"][1]["config"]).unwrap();
    let voucher = SignedVoucher {
        channel_id: v["vouchers"][1]["channelId"].as_str().unwrap().parse().unwrap(),
        max_claimable: 5000,
        signature: v["vouchers"][1]["signature"].as_str().unwrap().parse().unwrap(),
    };
    let terms = Terms {
        chain_id: 8453,
        asset: v["requirements"]["asset"].as_str().unwrap().parse().unwrap(),
        pay_to: v["requirements"]["payTo"].as_str().unwrap().parse().unwrap(),
        receiver_authorizer: v["authorizer"].as_str().unwrap().parse().unwrap(),
        withdraw_delay: Some(900),
    };
    let state = |balance: u128, total_claimed: u128| ChannelState {
        balance,
        total_claimed,
        withdraw_requested_at: 0,
        refund_nonce: Default::default(),
    };
    let run =
        |terms: &Terms, voucher: &SignedVoucher, s: ChannelState, kind: Kind| check(&keccak, &recover, terms, &config, voucher, &s, kind);
    let (id, signer) = run(&terms, &voucher, state(100_000, 0), Kind::Voucher).unwrap();
    assert_eq!((id, signer), (voucher.channel_id, Signer::Checked));

    let other: Address = "0x000000000000000000000000000000000000dEaD".parse().unwrap();
    let with = |f: &dyn Fn(&mut Terms)| {
        let mut t = terms.clone();
        f(&mut t);
        t
    };
    for (t, fault) in [
        (with(&|t| t.chain_id = 1), Fault::ChannelIdMismatch),
        (with(&|t| t.asset = other), Fault::TokenMismatch),
        (with(&|t| t.pay_to = other), Fault::ReceiverMismatch),
        (with(&|t| t.receiver_authorizer = other), Fault::ReceiverAuthorizerMismatch),
        (with(&|t| t.receiver_authorizer = Address::ZERO), Fault::ReceiverAuthorizerMismatch),
        (with(&|t| t.withdraw_delay = Some(901)), Fault::WithdrawDelayMismatch),
    ] {
        assert_eq!(run(&t, &voucher, state(100_000, 0), Kind::Voucher).unwrap_err(), fault);
    }
    // Another ceiling under the same signature; the v 0/1 twin.
    let raised = SignedVoucher { max_claimable: 5001, ..voucher.clone() };
    assert_eq!(run(&terms, &raised, state(100_000, 0), Kind::Voucher).unwrap_err(), Fault::VoucherSignature);
    let mut twin = voucher.signature.to_vec();
    twin[64] -= 27;
    let twin = SignedVoucher { signature: twin.into(), ..voucher.clone() };
    assert_eq!(run(&terms, &twin, state(100_000, 0), Kind::Voucher).unwrap_err(), Fault::VoucherSignature);
    // The channel's state on chain.
    assert_eq!(run(&terms, &voucher, state(0, 0), Kind::Voucher).unwrap_err(), Fault::ChannelNotFound);
    assert!(run(&terms, &voucher, state(0, 0), Kind::Deposit(5000)).is_ok());
    assert_eq!(run(&terms, &voucher, state(0, 0), Kind::Deposit(4999)).unwrap_err(), Fault::CumulativeExceedsBalance);
    assert_eq!(run(&terms, &voucher, state(4999, 0), Kind::Voucher).unwrap_err(), Fault::CumulativeExceedsBalance);
    assert_eq!(run(&terms, &voucher, state(10_000, 5000), Kind::Voucher).unwrap_err(), Fault::CumulativeBelowClaimed);
    assert!(run(&terms, &voucher, state(10_000, 5000), Kind::Refund).is_ok());
    assert_eq!(run(&terms, &voucher, state(10_000, 5001), Kind::Refund).unwrap_err(), Fault::CumulativeBelowClaimed);
    // No payer authorizer: the payer signs, by ECDSA or EIP-1271 (the caller asks the chain).
    let payer_signs = crate::payload::config(&v["channels"][1]["config"]).unwrap();
    let id = crate::channel_id(&keccak, &payer_signs, 8453);
    let voucher = SignedVoucher { channel_id: id, ..voucher };
    let got = check(&keccak, &recover, &terms, &payer_signs, &voucher, &state(100_000, 0), Kind::Voucher).unwrap();
    assert_eq!(got, (id, Signer::Payer(payer_signs.payer)));
}
