//! The x402 `upto` scheme on EVM, as `@x402/evm` implements it: the payer
//! signs a Permit2 witness transfer for a maximum, naming the recipient and
//! the facilitator; the resource server, when it settles, names the amount
//! it charges (at most the maximum); the facilitator calls the upto proxy's
//! `settle(permit, amount, owner, witness, signature)` from the address the
//! witness names, the only caller the proxy accepts.
//!
//! Written with `stablerail-adapter-kit` as a dropped-in adapter: enabled by
//! an `[adapters]` entry and an asset with `scheme = "upto"` in chains.toml.
//! The host's relayer on the chain is the facilitator (`ctx.relayer`, sent
//! to payers as `extra.facilitatorAddress`).
//!
//! Params: `permit2-address` and `proxy-address` (canonical by default);
//! `extensions`, the gas-sponsoring extensions accepted (as the exact
//! Permit2 adapter: by default EIP-2612 where the token has a domain, both
//! where it has none). A payer with no Permit2 allowance pays with one:
//! the proxy's `settleWithPermit` applies an EIP-2612 permit, or the
//! payer's signed approve is broadcast first.
//!
//! Host-held wallets never pay with `upto` (their transfers have an exact
//! amount): `authorize` and `assemble` answer `unsupported`.

use alloy_primitives::{hex, Address, Bytes, U256};
use alloy_sol_types::{Eip712Domain, SolCall};
use serde_json::json;
use stablerail_adapter_kit::amount::{base_units, parse_units};
use stablerail_adapter_kit::evm::permit2;
use stablerail_adapter_kit::evm::permit2::payload::UptoPayload;
use stablerail_adapter_kit::evm::permit2::upto::{
    settleCall, settleWithPermitCall, EIP2612Permit, PermitTransferFrom, PermitWitnessTransferFrom, TokenPermissions, Witness,
};
use stablerail_adapter_kit::evm::sponsor::{self, Expect, Sponsor};
use stablerail_adapter_kit::evm::{self, parse_address, same_address};
use stablerail_adapter_kit::types::{
    AdapterError, AssetContext, Description, EvmCall, Family, PaymentProof, PaymentRequirements, ProofError, ReceiptStatus, SchemeRef,
    SettleStep, SigningRequest, Submission, Terms, Transfer, VerifiedPayment,
};
use stablerail_adapter_kit::x402::{decode_payload, AmountRule, PaymentPayload, SCHEME_UPTO};
use stablerail_adapter_kit::{host, param, Guest};

/// This (chain, asset)'s settings.
struct Setup {
    token: Address,
    permit2: Address,
    proxy: Address,
    /// The facilitator: the host's relayer on this chain.
    facilitator: Address,
    /// The gas-sponsoring extensions accepted.
    extensions: Vec<String>,
}

impl Setup {
    fn of(ctx: &AssetContext) -> Result<Setup, AdapterError> {
        let cfg = |m: String| AdapterError::Config(format!("{}/{}: {m}", ctx.chain, ctx.asset));
        let addr = |k: &str, default: Address| match param(ctx, k) {
            Some(v) => parse_address(v).map_err(|e| cfg(format!("{k}: {e}"))),
            None => Ok(default),
        };
        let relayer = ctx.relayer.as_deref().ok_or_else(|| cfg("the host names no relayer on this chain".into()))?;
        Ok(Setup {
            token: parse_address(&ctx.token).map_err(cfg)?,
            permit2: addr("permit2-address", permit2::PERMIT2)?,
            proxy: addr("proxy-address", permit2::UPTO_PROXY)?,
            facilitator: parse_address(relayer).map_err(cfg)?,
            extensions: sponsor::accepted(ctx, param(ctx, "extensions")).map_err(cfg)?,
        })
    }

    fn for_proof(ctx: &AssetContext) -> Result<Setup, ProofError> {
        Setup::of(ctx).map_err(|e| ProofError::Unsupported(format!("{e:?}")))
    }

    fn domain(&self, ctx: &AssetContext) -> Result<Eip712Domain, ProofError> {
        let chain_id = ctx.chain_id.ok_or_else(|| ProofError::Unsupported(format!("{}: chain id is not set", ctx.chain)))?;
        Ok(permit2::domain(chain_id, self.permit2))
    }
}

/// A proof that passed every offline check, for the amount to charge.
struct Checked {
    payment: VerifiedPayment,
    permit: PermitWitnessTransferFrom,
    owner: Address,
    charge: U256,
    signature: Vec<u8>,
    sponsor: Option<Sponsor>,
}

struct Upto;

impl Guest for Upto {
    fn describe() -> Description {
        Description {
            name: "upto".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            serves: vec![SchemeRef { family: Family::Evm, scheme: SCHEME_UPTO.into() }],
            config_keys: ["permit2-address", "proxy-address", "extensions"].map(String::from).to_vec(),
        }
    }

    /// Answers of this scheme carry no `extra` (0.7.0).
    fn answer_extra(_: AssetContext, _: PaymentRequirements, _: PaymentProof, _: Option<String>) -> Result<Option<String>, AdapterError> {
        Ok(None)
    }

    fn normalize_address(family: Family, address: String) -> Result<String, AdapterError> {
        evm::normalize(family, &address)
    }

    fn to_base_units(amount: String, decimals: u8) -> Result<String, AdapterError> {
        base_units(&amount, decimals)
    }

    /// The maximum a payer authorizes: `terms.amount`.
    fn requirements(ctx: AssetContext, terms: Terms) -> Result<PaymentRequirements, AdapterError> {
        let setup = Setup::of(&ctx)?;
        let extra = json!({
            "assetTransferMethod": "permit2",
            "facilitatorAddress": evm::checksum(&setup.facilitator),
            "extensions": setup.extensions,
        });
        let mut req = evm::exact_requirements(&ctx, terms, extra)?;
        req.scheme = SCHEME_UPTO.into();
        Ok(req)
    }

    /// Valid for the requirements' amount, which may be less than the
    /// maximum signed: the payment is what the resource server charges.
    /// Without a gas-sponsoring extension, Permit2 must already be allowed
    /// the charge.
    fn verify(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<VerifiedPayment, ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        let c = check(&ctx, &setup, &requirements, &proof.json)?;
        if c.sponsor.is_none() && !c.charge.is_zero() {
            let allowance = evm::allowance_of(&setup.token, c.owner, setup.permit2)?;
            if allowance < c.charge {
                return Err(not_approved(allowance, c.charge));
            }
        }
        Ok(c.payment)
    }

    /// The nonce unused, and the balance for the charge.
    fn preflight(ctx: AssetContext, payment: VerifiedPayment) -> Result<(), ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        let owner = parse_address(&payment.payer).map_err(ProofError::Malformed)?;
        permit2::check_unused(&setup.permit2, owner, &payment.replay_key)?;
        let amount = parse_units(&payment.amount).map_err(ProofError::Malformed)?;
        evm::check_balance(&setup.token, owner, amount)?;
        Ok(())
    }

    /// One call of the proxy, sent by the facilitator itself (the proxy
    /// refuses any other caller); nothing at all for a charge of 0.
    fn settle(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<Vec<SettleStep>, ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        let c = check(&ctx, &setup, &requirements, &proof.json)?;
        if c.charge.is_zero() {
            return Ok(vec![]);
        }
        let allowance = evm::allowance_of(&setup.token, c.owner, setup.permit2)?;
        let p = c.permit;
        let permit = PermitTransferFrom { permitted: p.permitted, nonce: p.nonce, deadline: p.deadline };
        let call =
            |data: Vec<u8>| Submission::EvmCall(EvmCall { to: evm::checksum(&setup.proxy), data, value: "0".into(), gas_limit: None });
        let plain = settleCall {
            permit: permit.clone(),
            amount: c.charge,
            owner: c.owner,
            witness: p.witness.clone(),
            signature: Bytes::from(c.signature.clone()),
        };
        let settle_step = SettleStep { label: "settle".into(), submission: call(plain.abi_encode()) };
        if allowance >= c.charge {
            // Already approved (perhaps by an earlier payment): the extension is not needed.
            return Ok(vec![settle_step]);
        }
        match c.sponsor {
            None => Err(not_approved(allowance, c.charge)),
            Some(Sponsor::Permit { value, nonce, deadline, signature }) => {
                sponsor::check_next_nonce(&setup.token, c.owner, nonce)?;
                let (v, r, s) = evm::split_signature(&signature);
                let with = settleWithPermitCall {
                    permit2612: EIP2612Permit { value, deadline, r, s, v },
                    permit,
                    amount: c.charge,
                    owner: c.owner,
                    witness: p.witness,
                    signature: Bytes::from(c.signature),
                };
                Ok(vec![SettleStep { label: "settleWithPermit".into(), submission: call(with.abi_encode()) }])
            }
            Some(Sponsor::Approval { raw }) => {
                Ok(vec![SettleStep { label: "approve".into(), submission: Submission::EvmRaw(raw) }, settle_step])
            }
        }
    }

    fn read_receipt(ctx: AssetContext, payment: VerifiedPayment, receipt: String) -> Result<ReceiptStatus, AdapterError> {
        evm::read_payment_receipt(&ctx, &payment, &receipt)
    }

    fn authorize(_: AssetContext, _: Transfer) -> Result<SigningRequest, AdapterError> {
        Err(AdapterError::Unsupported("upto pays resource servers; host-held wallets pay with an exact scheme".into()))
    }

    fn prepare_sender(_: AssetContext, _: String, _: String) -> Result<Vec<SettleStep>, AdapterError> {
        Ok(vec![])
    }

    fn assemble(_: AssetContext, _: PaymentRequirements, _: Transfer, _: SigningRequest, _: Vec<u8>) -> Result<String, AdapterError> {
        Err(AdapterError::Unsupported("upto pays resource servers; host-held wallets pay with an exact scheme".into()))
    }
}

/// Every offline check of an upto proof against the requirements, whose
/// amount is the charge (at most what the payer accepted and signed).
fn check(ctx: &AssetContext, setup: &Setup, req: &PaymentRequirements, proof: &str) -> Result<Checked, ProofError> {
    let p: PaymentPayload<UptoPayload> = decode_payload(proof, req, same_address, AmountRule::AtMost)?;
    let a = &p.payload.permit2_authorization;
    let malformed = |e: String| ProofError::Malformed(e);
    let owner = parse_address(&a.from).map_err(malformed)?;
    let permit = PermitWitnessTransferFrom {
        permitted: TokenPermissions {
            token: parse_address(&a.permitted.token).map_err(malformed)?,
            amount: parse_units(&a.permitted.amount).map_err(malformed)?,
        },
        spender: parse_address(&a.spender).map_err(malformed)?,
        nonce: parse_units(&a.nonce).map_err(malformed)?,
        deadline: parse_units(&a.deadline).map_err(malformed)?,
        witness: Witness {
            to: parse_address(&a.witness.to).map_err(malformed)?,
            facilitator: parse_address(&a.witness.facilitator).map_err(malformed)?,
            validAfter: parse_units(&a.witness.valid_after).map_err(malformed)?,
        },
    };
    let signature = hex::decode(&p.payload.signature).map_err(|_| ProofError::InvalidSignature("signature is not hex".into()))?;

    if permit.permitted.token != setup.token {
        return Err(ProofError::RequirementsMismatch(format!("permitted token is {}, must be {}", permit.permitted.token, setup.token)));
    }
    if permit.spender != setup.proxy {
        return Err(ProofError::RequirementsMismatch(format!(
            "spender is {}, must be the x402 upto proxy {}",
            permit.spender, setup.proxy
        )));
    }
    if permit.witness.facilitator != setup.facilitator {
        return Err(ProofError::RequirementsMismatch(format!(
            "witness names facilitator {}, not this one ({})",
            permit.witness.facilitator, setup.facilitator
        )));
    }
    if !same_address(&a.witness.to, &req.pay_to) {
        return Err(ProofError::WrongRecipient(format!("witness pays {}, not {}", a.witness.to, req.pay_to)));
    }
    // The maximum signed is the maximum accepted; the charge is at most that.
    let maximum = parse_units(&p.accepted.amount).map_err(malformed)?;
    if permit.permitted.amount != maximum {
        return Err(ProofError::WrongAmount(format!("permitted amount {} != accepted maximum {maximum}", permit.permitted.amount)));
    }
    let charge = parse_units(&req.amount).map_err(malformed)?;
    evm::check_window(permit.witness.validAfter, permit.deadline)?;
    let (signature, _) = evm::payer::check_deployed(&evm::signing_hash(&permit, &setup.domain(ctx)?), &signature, &owner)?;
    // A permit or an approval must cover the maximum: the proxy applies a
    // permit of exactly the permitted amount.
    let expect = Expect { ctx, payer: owner, token: setup.token, permit2: setup.permit2, amount: maximum, now: host::now() };
    let sponsor = sponsor::of_payload(&expect, p.extensions.as_ref(), &setup.extensions)?;

    let window = |v: U256| u64::try_from(v).unwrap_or(u64::MAX);
    let payment = VerifiedPayment {
        payer: evm::checksum(&owner),
        pay_to: evm::checksum(&permit.witness.to),
        amount: charge.to_string(),
        valid_after: window(permit.witness.validAfter),
        valid_before: window(permit.deadline),
        // The same key space as the exact-Permit2 adapter: one Permit2 nonce
        // pays once, whichever scheme carries it.
        replay_key: permit2::replay_key(&ctx.network, &setup.permit2, &owner, permit.nonce),
    };
    Ok(Checked { payment, permit, owner, charge, signature, sponsor })
}

fn not_approved(allowance: U256, charge: U256) -> ProofError {
    ProofError::NotApproved(format!(
        "Permit2 allowance {allowance} < {charge}; approve Permit2 once, or attach a gas-sponsoring extension this asset accepts"
    ))
}

stablerail_adapter_kit::export!(Upto with_types_in stablerail_adapter_kit::bindings);
