//! stablerail's TRON adapter: x402 `exact` payments in TRC-20 tokens through
//! Permit2 (`extra.assetTransferMethod == "permit2"`), built against
//! `stablerail:adapter@0.3.0`.
//!
//! The payer signs Permit2's `PermitWitnessTransferFrom` with the x402
//! witness over TIP-712 (EIP-712 with TRON's chain id, addresses as their 20
//! bytes); the service's relayer settles it with a TriggerSmartContract of
//! the x402 Permit2 proxy's `settle`, whose `raw_data` this adapter builds
//! and the host signs. Addresses are base58check everywhere a user sees them.
//!
//! Params (chains.toml): `permit2-address` and `proxy-address` (base58check;
//! required: TRON's Permit2 is not at the EVM address), `fee-limit` (sun per
//! settlement, default 100 TRX, at most 1,000 TRX).
//!
//! Not yet: transfers from host-held wallets (`authorize`/`assemble`: TRON
//! payouts and `/v2` payers); they answer `unsupported`.

wit_bindgen::generate!({
    world: "stablerail:adapter/adapter@0.3.0",
    path: "../../wit/0.3.0",
    generate_all,
});

mod address;
mod node;
mod raw;

use alloy_primitives::{keccak256, Address, Bytes, U256};
use alloy_sol_types::{SolCall, SolStruct};
use exports::stablerail::adapter0_3_0::scheme::Guest;
use permit2_wire::payload::Permit2Payload;
use permit2_wire::{settleCall, PermitTransferFrom, PermitWitnessTransferFrom, TokenPermissions, Witness};
use serde_json::json;
use stablerail::adapter0_1_0::types::*;
use stablerail::adapter0_1_0::{clock, crypto};
use stablerail::adapter0_3_0::types::AssetContext;

const SCHEME: &str = "exact";
/// Seconds an authorization must still be valid for, so the settlement lands.
const VALIDITY_MARGIN_SECS: u64 = 6;
/// How long a settlement transaction stays valid, in milliseconds.
const TX_LIFETIME_MS: i64 = 60_000;
const DEFAULT_FEE_LIMIT: i64 = 100_000_000;
const MAX_FEE_LIMIT: i64 = 1_000_000_000;

/// This (chain, asset)'s Permit2 settings.
struct Setup {
    token: Address,
    permit2: Address,
    proxy: Address,
    chain_id: u64,
    fee_limit: i64,
}

impl Setup {
    fn of(ctx: &AssetContext) -> Result<Setup, AdapterError> {
        let cfg = |m: String| AdapterError::Config(format!("{}/{}: {m}", ctx.chain, ctx.asset));
        let param = |k: &str| ctx.params.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        let addr = |k: &str| {
            let v = param(k).ok_or_else(|| cfg(format!("`{k}` is required")))?;
            address::parse(v).ok_or_else(|| cfg(format!("{k} `{v}` is not a TRON address")))
        };
        let fee_limit = match param("fee-limit") {
            Some(v) => v.parse::<i64>().ok().filter(|f| (1..=MAX_FEE_LIMIT).contains(f)).ok_or_else(|| cfg(format!("fee-limit `{v}` is not 1..={MAX_FEE_LIMIT} sun")))?,
            None => DEFAULT_FEE_LIMIT,
        };
        Ok(Setup {
            token: address::parse(&ctx.token).ok_or_else(|| cfg(format!("token `{}` is not a TRON address", ctx.token)))?,
            permit2: addr("permit2-address")?,
            proxy: addr("proxy-address")?,
            chain_id: ctx.chain_id.ok_or_else(|| cfg("chain_id is not set".into()))?,
            fee_limit,
        })
    }

    fn for_proof(ctx: &AssetContext) -> Result<Setup, ProofError> {
        Setup::of(ctx).map_err(|e| ProofError::Unsupported(format!("{e:?}")))
    }
}

fn units(text: &str) -> Result<U256, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{text}` is not a base-unit integer"));
    }
    U256::from_str_radix(text, 10).map_err(|_| format!("`{text}` is too large"))
}

/// A proof that passed every offline check.
struct Checked {
    payment: VerifiedPayment,
    permit: PermitWitnessTransferFrom,
    owner: Address,
    signature: Vec<u8>,
}

fn check(ctx: &AssetContext, setup: &Setup, req: &PaymentRequirements, proof: &str) -> Result<Checked, ProofError> {
    let issued = x402_wire::Issued { scheme: &req.scheme, network: &req.network, amount: &req.amount, asset: &req.asset, pay_to: &req.pay_to };
    let p: Permit2Payload = x402_wire::decode(proof, &issued).map_err(|r| match r {
        x402_wire::Refusal::Malformed(m) => ProofError::Malformed(m),
        x402_wire::Refusal::Unsupported(m) => ProofError::Unsupported(m),
        x402_wire::Refusal::Mismatch(m) => ProofError::RequirementsMismatch(m),
    })?;
    let auth = &p.permit2_authorization;
    let addr = |what: &str, text: &str| address::parse(text).ok_or_else(|| ProofError::Malformed(format!("{what} `{text}` is not a TRON address")));
    let num = |text: &str| units(text).map_err(ProofError::Malformed);
    let owner = addr("from", &auth.from)?;
    let permit = PermitWitnessTransferFrom {
        permitted: TokenPermissions { token: addr("permitted.token", &auth.permitted.token)?, amount: num(&auth.permitted.amount)? },
        spender: addr("spender", &auth.spender)?,
        nonce: num(&auth.nonce)?,
        deadline: num(&auth.deadline)?,
        witness: Witness { to: addr("witness.to", &auth.witness.to)?, validAfter: num(&auth.witness.valid_after)? },
    };
    let signature = hex::decode(p.signature.trim_start_matches("0x")).map_err(|_| ProofError::InvalidSignature("signature is not hex".into()))?;
    if permit.permitted.token != setup.token {
        return Err(ProofError::RequirementsMismatch(format!("permitted token is {}, must be {}", address::show(&permit.permitted.token), address::show(&setup.token))));
    }
    if permit.spender != setup.proxy {
        return Err(ProofError::RequirementsMismatch(format!("spender is {}, must be the x402 Permit2 proxy {}", address::show(&permit.spender), address::show(&setup.proxy))));
    }
    if Some(permit.witness.to) != address::parse(&req.pay_to) {
        return Err(ProofError::WrongRecipient(format!("witness pays {}, not {}", auth.witness.to, req.pay_to)));
    }
    let required = num(&req.amount)?;
    if permit.permitted.amount != required {
        return Err(ProofError::WrongAmount(format!("permitted amount {} != {required}", permit.permitted.amount)));
    }
    let now = clock::now();
    if permit.witness.validAfter > U256::from(now) {
        return Err(ProofError::NotYetValid);
    }
    if permit.deadline < U256::from(now + VALIDITY_MARGIN_SECS) {
        return Err(ProofError::Expired);
    }
    let digest = permit.eip712_signing_hash(&permit2_wire::domain(setup.chain_id, setup.permit2));
    let key = crypto::secp256k1_recover(digest.as_slice(), &signature).map_err(ProofError::InvalidSignature)?;
    let signer = Address::from_slice(&keccak256(&key[1..])[12..]);
    if signer != owner {
        return Err(ProofError::SignerMismatch(format!("signed by {}, not by {}", address::show(&signer), auth.from)));
    }
    let window = |v: U256| u64::try_from(v).unwrap_or(u64::MAX);
    let payment = VerifiedPayment {
        payer: address::show(&owner),
        pay_to: address::show(&permit.witness.to),
        amount: required.to_string(),
        valid_after: window(permit.witness.validAfter),
        valid_before: window(permit.deadline),
        // Permit2 nonces are per owner and chain, whatever the token.
        replay_key: format!("permit2:{}:{:#x}:{:#x}:{}", ctx.network, setup.permit2, owner, permit.nonce),
    };
    Ok(Checked { payment, permit, owner, signature })
}

struct TronPermit2;

impl Guest for TronPermit2 {
    fn describe() -> Description {
        Description {
            name: "tron-permit2".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            serves: vec![SchemeRef { family: Family::Tron, scheme: "tron-permit2".into() }],
            config_keys: vec!["permit2-address".into(), "proxy-address".into(), "fee-limit".into()],
        }
    }

    fn normalize_address(family: Family, text: String) -> Result<String, AdapterError> {
        if family != Family::Tron {
            return Err(AdapterError::Unsupported("tron-permit2 handles TRON addresses only".into()));
        }
        address::parse(&text).map(|a| address::show(&a)).ok_or(AdapterError::InvalidAddress(text))
    }

    fn to_base_units(amount: String, decimals: u8) -> Result<String, AdapterError> {
        x402_wire::base_units(&amount, decimals).map_err(AdapterError::InvalidAmount)
    }

    fn requirements(ctx: AssetContext, terms: Terms) -> Result<PaymentRequirements, AdapterError> {
        let setup = Setup::of(&ctx)?;
        let pay_to = address::parse(&terms.pay_to).ok_or_else(|| AdapterError::InvalidAddress(terms.pay_to.clone()))?;
        units(&terms.amount).map_err(AdapterError::InvalidAmount)?;
        let extra = json!({
            "assetTransferMethod": "permit2",
            "permit2Address": address::show(&setup.permit2),
            "spender": address::show(&setup.proxy),
            "decimals": ctx.decimals,
        });
        Ok(PaymentRequirements {
            scheme: SCHEME.into(),
            network: ctx.network.clone(),
            amount: terms.amount,
            asset: address::show(&setup.token),
            pay_to: address::show(&pay_to),
            max_timeout_seconds: terms.max_timeout_seconds,
            extra: extra.to_string(),
        })
    }

    fn verify(ctx: AssetContext, requirements: PaymentRequirements, proof: String) -> Result<VerifiedPayment, ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        Ok(check(&ctx, &setup, &requirements, &proof)?.payment)
    }

    fn preflight(ctx: AssetContext, payment: VerifiedPayment) -> Result<(), ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        let owner = address::parse(&payment.payer).ok_or_else(|| ProofError::Malformed("payer is not a TRON address".into()))?;
        let amount = units(&payment.amount).map_err(ProofError::Malformed)?;
        let held = node::balance_of(&setup.token, &owner)?;
        if held < amount {
            return Err(ProofError::InsufficientFunds(format!("the payer holds {held}, the payment is {amount}")));
        }
        let allowance = node::allowance(&setup.token, &owner, &setup.permit2)?;
        if allowance < amount {
            return Err(ProofError::NotApproved(format!(
                "the payer's Permit2 allowance is {allowance}, below {amount}: approve Permit2 once (POST /api/tron/permit2/approve/prepare, then /submit)"
            )));
        }
        Ok(())
    }

    fn settle(ctx: AssetContext, requirements: PaymentRequirements, proof: String) -> Result<Vec<SettleStep>, ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        let c = check(&ctx, &setup, &requirements, &proof)?;
        let relayer = ctx.relayer.as_deref().and_then(address::parse).ok_or_else(|| ProofError::Unsupported("the host named no TRON relayer".into()))?;
        let permit = PermitTransferFrom { permitted: c.permit.permitted.clone(), nonce: c.permit.nonce, deadline: c.permit.deadline };
        let call = settleCall { permit, owner: c.owner, witness: c.permit.witness, signature: Bytes::from(c.signature) };
        let head = node::now_block()?;
        let now_ms = (clock::now() as i64) * 1000;
        let raw = raw::trigger(address::raw(&relayer), address::raw(&setup.proxy), call.abi_encode(), &head, now_ms, now_ms.max(head.timestamp_ms) + TX_LIFETIME_MS, setup.fee_limit);
        // Unsigned: the host signs it with the relayer, whose address is its owner.
        Ok(vec![SettleStep { label: "settle".into(), submission: Submission::TronSigned(TronTransaction { raw_data: raw, signatures: vec![] }) }])
    }

    fn read_receipt(ctx: AssetContext, payment: VerifiedPayment, receipt: String) -> Result<ReceiptStatus, AdapterError> {
        let setup = Setup::of(&ctx)?;
        let to = address::parse(&payment.pay_to).ok_or_else(|| AdapterError::InvalidAddress(payment.pay_to.clone()))?;
        let amount = units(&payment.amount).map_err(AdapterError::InvalidAmount)?;
        node::read_receipt(&receipt, &setup.token, &to, amount)
    }

    fn authorize(_ctx: AssetContext, _transfer: Transfer) -> Result<SigningRequest, AdapterError> {
        Err(AdapterError::Unsupported("transfers from host-held TRON wallets are not built yet".into()))
    }

    fn prepare_sender(_ctx: AssetContext, _sender: String, _amount: String) -> Result<Vec<SettleStep>, AdapterError> {
        Err(AdapterError::Unsupported("transfers from host-held TRON wallets are not built yet".into()))
    }

    fn assemble(_ctx: AssetContext, _req: PaymentRequirements, _transfer: Transfer, _request: SigningRequest, _signature: Vec<u8>) -> Result<String, AdapterError> {
        Err(AdapterError::Unsupported("transfers from host-held TRON wallets are not built yet".into()))
    }
}

export!(TronPermit2);
