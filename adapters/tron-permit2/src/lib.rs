//! stablerail's TRON adapter: x402 `exact` payments in TRC-20 tokens through
//! Permit2 (`extra.assetTransferMethod == "permit2"`), built against
//! `stablerail:adapter@0.6.0`.
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
//! Host-held wallets (the proxy paying a merchant, an agent's wallet
//! paying the collection wallet) send a plain TRC-20 `transfer` they own:
//! `authorize` builds its `raw_data` (signed by the host as `tron-raw-data`),
//! `assemble` wraps the signed transaction as the proof (see `transfer`).

// The kit's bindings of 0.6.0, under the names the modules use.
use stablerail_adapter_kit::bindings::{exports, stablerail};

mod node;
mod permit;
mod transfer;

use alloy_primitives::{hex, Address, Bytes, U256};
use alloy_sol_types::SolCall;
use exports::stablerail::adapter0_7_0::scheme::Guest;
use permit2_wire::payload::Permit2Payload;
use permit2_wire::{settleCall, PermitTransferFrom};
use serde_json::{json, Value};
use stablerail::adapter0_1_0::clock;
use stablerail::adapter0_1_0::types::*;
use stablerail::adapter0_4_0::types::SigningRequest;
use stablerail::adapter0_6_0::types::{AssetContext, PaymentProof};
use stablerail::adapter0_7_0::types::ProofError;
use tron_wire::{address, raw};

const SCHEME: &str = "exact";
/// Seconds an authorization must still be valid for, so the settlement lands.
pub(crate) const VALIDITY_MARGIN_SECS: u64 = 6;
/// How long a settlement transaction stays valid, in milliseconds.
const TX_LIFETIME_MS: i64 = 60_000;
const DEFAULT_FEE_LIMIT: i64 = 100_000_000;
pub(crate) const MAX_FEE_LIMIT: i64 = 1_000_000_000;

/// This (chain, asset)'s Permit2 settings.
pub(crate) struct Setup {
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
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|f| (1..=MAX_FEE_LIMIT).contains(f))
                .ok_or_else(|| cfg(format!("fee-limit `{v}` is not 1..={MAX_FEE_LIMIT} sun")))?,
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

pub(crate) fn units(text: &str) -> Result<U256, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{text}` is not a base-unit integer"));
    }
    U256::from_str_radix(text, 10).map_err(|_| format!("`{text}` is too large"))
}

/// The issued requirements a payload's `accepted` repeats.
fn issued(req: &PaymentRequirements) -> x402_wire::Issued<'_> {
    x402_wire::Issued { scheme: &req.scheme, network: &req.network, amount: &req.amount, asset: &req.asset, pay_to: &req.pay_to }
}

/// The two proofs this adapter takes, told apart by their payload's shape.
enum Proof {
    Permit2(permit::Checked),
    Transfer(transfer::Checked),
}

impl Proof {
    fn check(ctx: &AssetContext, setup: &Setup, req: &PaymentRequirements, text: &str) -> Result<Proof, ProofError> {
        let payload: Value = x402_wire::decode(text, &issued(req)).map_err(|r| match r {
            x402_wire::Refusal::Malformed(m) => ProofError::Malformed(m),
            x402_wire::Refusal::Unsupported(m) => ProofError::Unsupported(m),
            x402_wire::Refusal::Mismatch(m) => ProofError::RequirementsMismatch(m),
        })?;
        let shape = |e: serde_json::Error| ProofError::Malformed(format!("payload: {e}"));
        if payload.get("transaction").is_some() {
            Ok(Proof::Transfer(transfer::check(ctx, setup, req, serde_json::from_value(payload).map_err(shape)?)?))
        } else {
            let p: Permit2Payload = serde_json::from_value(payload).map_err(shape)?;
            Ok(Proof::Permit2(permit::check(ctx, setup, req, p)?))
        }
    }

    fn payment(self) -> VerifiedPayment {
        match self {
            Proof::Permit2(c) => c.payment,
            Proof::Transfer(c) => c.payment,
        }
    }
}

fn chain_error(e: ProofError) -> AdapterError {
    match e {
        ProofError::ChainUnavailable(m) => AdapterError::ChainUnavailable(m),
        other => AdapterError::Malformed(format!("{other:?}")),
    }
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

    /// Answers of this scheme carry no `extra` (0.7.0).
    fn answer_extra(_: AssetContext, _: PaymentRequirements, _: PaymentProof, _: Option<String>) -> Result<Option<String>, AdapterError> {
        Ok(None)
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
            // As on every family: callers read the asset and amount in `extra`.
            "asset": address::show(&setup.token),
            "amount": terms.amount,
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

    fn verify(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<VerifiedPayment, ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        Ok(Proof::check(&ctx, &setup, &requirements, &proof.json)?.payment())
    }

    fn preflight(ctx: AssetContext, payment: VerifiedPayment) -> Result<(), ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        let owner = address::parse(&payment.payer).ok_or_else(|| ProofError::Malformed("payer is not a TRON address".into()))?;
        let amount = units(&payment.amount).map_err(ProofError::Malformed)?;
        let held = node::balance_of(&setup.token, &owner)?;
        if held < amount {
            return Err(ProofError::InsufficientFunds(format!("the payer holds {held}, the payment is {amount}")));
        }
        // A signed transfer spends the owner's own tokens: no allowance.
        if payment.replay_key.starts_with(transfer::TRANSFER_KEY) {
            return Ok(());
        }
        let allowance = node::allowance(&setup.token, &owner, &setup.permit2)?;
        if allowance < amount {
            return Err(ProofError::NotApproved(format!(
                "the payer's Permit2 allowance is {allowance}, below {amount}: approve Permit2 once (POST /api/tron/permit2/approve/prepare, then /submit)"
            )));
        }
        Ok(())
    }

    fn settle(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<Vec<SettleStep>, ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        let c = match Proof::check(&ctx, &setup, &requirements, &proof.json)? {
            // Signed by its owner already: sent as it is.
            Proof::Transfer(t) => {
                return Ok(vec![SettleStep {
                    label: "transfer".into(),
                    submission: Submission::TronSigned(TronTransaction { raw_data: t.raw_data, signatures: vec![t.signature] }),
                }]);
            }
            Proof::Permit2(c) => c,
        };
        let relayer = ctx
            .relayer
            .as_deref()
            .and_then(address::parse)
            .ok_or_else(|| ProofError::Unsupported("the host named no TRON relayer".into()))?;
        let permit = PermitTransferFrom { permitted: c.permit.permitted.clone(), nonce: c.permit.nonce, deadline: c.permit.deadline };
        let call = settleCall { permit, owner: c.owner, witness: c.permit.witness, signature: Bytes::from(c.signature) };
        let head = node::now_block()?;
        let now_ms = (clock::now() as i64) * 1000;
        let raw = raw::trigger(
            address::raw(&relayer),
            address::raw(&setup.proxy),
            call.abi_encode(),
            &head,
            now_ms,
            now_ms.max(head.timestamp_ms) + TX_LIFETIME_MS,
            setup.fee_limit,
        );
        // Unsigned: the host signs it with the relayer, whose address is its owner.
        Ok(vec![SettleStep {
            label: "settle".into(),
            submission: Submission::TronSigned(TronTransaction { raw_data: raw, signatures: vec![] }),
        }])
    }

    fn read_receipt(ctx: AssetContext, payment: VerifiedPayment, receipt: String) -> Result<ReceiptStatus, AdapterError> {
        let setup = Setup::of(&ctx)?;
        let to = address::parse(&payment.pay_to).ok_or_else(|| AdapterError::InvalidAddress(payment.pay_to.clone()))?;
        let amount = units(&payment.amount).map_err(AdapterError::InvalidAmount)?;
        node::read_receipt(&receipt, &setup.token, &to, amount)
    }

    fn authorize(ctx: AssetContext, t: Transfer) -> Result<SigningRequest, AdapterError> {
        let setup = Setup::of(&ctx)?;
        let party = |text: &str| address::parse(text).ok_or_else(|| AdapterError::InvalidAddress(text.into()));
        let (sender, recipient) = (party(&t.sender)?, party(&t.recipient)?);
        let amount = units(&t.amount).map_err(AdapterError::InvalidAmount)?;
        let head = node::now_block().map_err(chain_error)?;
        let now_ms = (clock::now() as i64) * 1000;
        // Short-lived: a stored payout that expires unsent is authorized anew.
        let expiration =
            (now_ms.max(head.timestamp_ms) + TX_LIFETIME_MS).min(i64::try_from(t.valid_before.saturating_mul(1000)).unwrap_or(i64::MAX));
        Ok(SigningRequest::TronRawData(transfer::build(&setup, &sender, &recipient, amount, &head, now_ms, expiration)))
    }

    fn prepare_sender(_ctx: AssetContext, _sender: String, _amount: String) -> Result<Vec<SettleStep>, AdapterError> {
        // A wallet's own transfer needs no approval.
        Ok(vec![])
    }

    fn assemble(
        _ctx: AssetContext,
        req: PaymentRequirements,
        _t: Transfer,
        request: SigningRequest,
        signature: Vec<u8>,
    ) -> Result<String, AdapterError> {
        let SigningRequest::TronRawData(raw_data) = request else {
            return Err(AdapterError::Malformed("tron-permit2 signs TRON transactions only".into()));
        };
        let signed = transfer::TransferPayload {
            transaction: transfer::Signed { raw_data_hex: hex::encode(raw_data), signature: hex::encode(signature) },
        };
        Ok(x402_wire::envelope(&issued(&req), req.max_timeout_seconds, &req.extra, serde_json::to_value(signed).expect("serializable")))
    }
}

stablerail_adapter_kit::export!(TronPermit2 with_types_in stablerail_adapter_kit::bindings);
