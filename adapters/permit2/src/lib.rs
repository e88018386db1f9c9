//! Permit2 SignatureTransfer with the x402 witness, settled through the x402
//! exact-Permit2 proxy (`extra.assetTransferMethod == "permit2"`), with the
//! `eip2612GasSponsoring` and `erc20ApprovalGasSponsoring` extensions.
//!
//! Params (chains.toml `params`): `permit2-address` and `proxy-address`
//! (canonical addresses by default); `extensions`, a comma list of accepted
//! extension names (by default the spec's: EIP-2612 where the token has a
//! domain, both where it has none); `reset-allowance-first = "true"` for
//! tokens that refuse to change a non-zero allowance (ethereum USDT).

use alloy_primitives::{address, hex, Address, Bytes, U256};
use alloy_sol_types::{Eip712Domain, SolCall};
use permit2_wire::payload::{Authorization, Permit2Payload, Permitted, WitnessJson};
use permit2_wire::*;
use serde_json::json;
use stablerail_adapter_kit::amount::{base_units, parse_units};
use stablerail_adapter_kit::evm::{self, as_adapter_error, parse_address, same_address};
use stablerail_adapter_kit::types::{
    AdapterError, AssetContext, Description, EvmCall, Family, PaymentProof, PaymentRequirements, ProofError, ReceiptStatus, SchemeRef,
    SettleStep, SigningRequest, Submission, Terms, Transfer, VerifiedPayment,
};
use stablerail_adapter_kit::x402::{decode_payload, AmountRule, PaymentPayload, Requirements, X402_VERSION};
use stablerail_adapter_kit::{host, Guest};

use stablerail_adapter_kit::evm::sponsor::{self, Expect, Sponsor};

const PERMIT2: Address = address!("000000000022D473030F116dDEE9F6B43aC78BA3");
const X402_PROXY: Address = address!("402085c248EeA27D92E8b30b2C58ed07f9E20001");

/// This (chain, asset)'s Permit2 settings.
struct Setup {
    token: Address,
    permit2: Address,
    proxy: Address,
    extensions: Vec<String>,
    reset_first: bool,
}

impl Setup {
    fn of(ctx: &AssetContext) -> Result<Setup, AdapterError> {
        let cfg = |m: String| AdapterError::Config(format!("{}/{}: {m}", ctx.chain, ctx.asset));
        let param = |k: &str| ctx.params.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        let addr = |k: &str, default: Address| match param(k) {
            Some(v) => parse_address(v).map_err(|e| cfg(format!("{k}: {e}"))),
            None => Ok(default),
        };
        let extensions = sponsor::accepted(ctx, param("extensions")).map_err(cfg)?;
        Ok(Setup {
            token: parse_address(&ctx.token).map_err(cfg)?,
            permit2: addr("permit2-address", PERMIT2)?,
            proxy: addr("proxy-address", X402_PROXY)?,
            extensions,
            reset_first: param("reset-allowance-first") == Some("true"),
        })
    }

    /// `of`, for calls that answer with a proof error.
    fn for_proof(ctx: &AssetContext) -> Result<Setup, ProofError> {
        Setup::of(ctx).map_err(|e| ProofError::Unsupported(format!("{e:?}")))
    }

    fn domain(&self, ctx: &AssetContext) -> Result<Eip712Domain, AdapterError> {
        let chain_id = ctx.chain_id.ok_or_else(|| AdapterError::Config(format!("{}: chain id is not set", ctx.chain)))?;
        Ok(permit2_wire::domain(chain_id, self.permit2))
    }
}

/// A proof that passed every offline check.
struct Checked {
    payment: VerifiedPayment,
    permit: PermitWitnessTransferFrom,
    owner: Address,
    signature: Vec<u8>,
    sponsor: Option<Sponsor>,
}

struct Permit2Scheme;

impl Guest for Permit2Scheme {
    fn describe() -> Description {
        Description {
            name: "permit2".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            serves: vec![SchemeRef { family: Family::Evm, scheme: "permit2".into() }],
            config_keys: ["permit2-address", "proxy-address", "extensions", "reset-allowance-first"].map(String::from).to_vec(),
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

    fn requirements(ctx: AssetContext, terms: Terms) -> Result<PaymentRequirements, AdapterError> {
        let setup = Setup::of(&ctx)?;
        evm::exact_requirements(&ctx, terms, json!({ "assetTransferMethod": "permit2", "extensions": setup.extensions }))
    }

    fn verify(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<VerifiedPayment, ProofError> {
        check(&ctx, &Setup::for_proof(&ctx)?, &requirements, &proof.json).map(|c| c.payment)
    }

    fn preflight(ctx: AssetContext, payment: VerifiedPayment) -> Result<(), ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        let owner = parse_address(&payment.payer).map_err(ProofError::Malformed)?;
        stablerail_adapter_kit::evm::permit2::check_unused(&setup.permit2, owner, &payment.replay_key)?;
        let amount = parse_units(&payment.amount).map_err(ProofError::Malformed)?;
        evm::check_balance(&setup.token, owner, amount)?;
        Ok(())
    }

    fn settle(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<Vec<SettleStep>, ProofError> {
        let setup = Setup::for_proof(&ctx)?;
        let c = check(&ctx, &setup, &requirements, &proof.json)?;
        let amount = c.permit.permitted.amount;
        let allowance = evm::allowance_of(&setup.token, c.owner, setup.permit2)?;
        let permit = PermitTransferFrom { permitted: c.permit.permitted.clone(), nonce: c.permit.nonce, deadline: c.permit.deadline };
        let plain = settleCall {
            permit: permit.clone(),
            owner: c.owner,
            witness: c.permit.witness.clone(),
            signature: Bytes::from(c.signature.clone()),
        };
        let call =
            |data: Vec<u8>| Submission::EvmCall(EvmCall { to: evm::checksum(&setup.proxy), data, value: "0".into(), gas_limit: None });
        let settle_step = |data: Vec<u8>| SettleStep { label: "settle".into(), submission: call(data) };
        if allowance >= amount {
            // Already approved (perhaps by an earlier payment): the extension is not needed.
            return Ok(vec![settle_step(plain.abi_encode())]);
        }
        match c.sponsor {
            None => Err(ProofError::NotApproved(format!(
                "Permit2 allowance {allowance} < {amount}; approve Permit2 once, or attach an extension this asset accepts ({})",
                setup.extensions.join(", ")
            ))),
            Some(Sponsor::Permit { value, nonce, deadline, signature }) => {
                sponsor::check_next_nonce(&setup.token, c.owner, nonce)?;
                let (v, r, s) = evm::split_signature(&signature);
                let with = settleWithPermitCall {
                    permit2612: EIP2612Permit { value, deadline, r, s, v },
                    permit,
                    owner: c.owner,
                    witness: c.permit.witness,
                    signature: Bytes::from(c.signature),
                };
                Ok(vec![SettleStep { label: "settleWithPermit".into(), submission: call(with.abi_encode()) }])
            }
            Some(Sponsor::Approval { .. }) if setup.reset_first && allowance != U256::ZERO => Err(ProofError::NotApproved(format!(
                "this token refuses to change a non-zero allowance: Permit2 allowance is {allowance}; \
                 send approve(Permit2, 0) first, then sign the approval again"
            ))),
            Some(Sponsor::Approval { raw }) => {
                Ok(vec![SettleStep { label: "approve".into(), submission: Submission::EvmRaw(raw) }, settle_step(plain.abi_encode())])
            }
        }
    }

    fn read_receipt(ctx: AssetContext, payment: VerifiedPayment, receipt: String) -> Result<ReceiptStatus, AdapterError> {
        evm::read_payment_receipt(&ctx, &payment, &receipt)
    }

    fn authorize(ctx: AssetContext, transfer: Transfer) -> Result<SigningRequest, AdapterError> {
        let setup = Setup::of(&ctx)?;
        let permit = permit_of(&setup, &transfer)?;
        Ok(SigningRequest::Eip712Digest(evm::signing_hash(&permit, &setup.domain(&ctx)?).to_vec()))
    }

    fn prepare_sender(ctx: AssetContext, sender: String, amount: String) -> Result<Vec<SettleStep>, AdapterError> {
        let setup = Setup::of(&ctx)?;
        let owner = parse_address(&sender).map_err(AdapterError::InvalidAddress)?;
        let amount = parse_units(&amount).map_err(AdapterError::InvalidAmount)?;
        let allowance = evm::allowance_of(&setup.token, owner, setup.permit2).map_err(as_adapter_error)?;
        if allowance >= amount {
            return Ok(vec![]);
        }
        let mut calls = vec![];
        if setup.reset_first && allowance != U256::ZERO {
            calls.push(evm::approve_call(&setup.token, setup.permit2, U256::ZERO));
        }
        calls.push(evm::approve_call(&setup.token, setup.permit2, U256::MAX));
        Ok(calls.into_iter().map(evm::setup_step).collect())
    }

    fn assemble(
        ctx: AssetContext,
        requirements: PaymentRequirements,
        transfer: Transfer,
        _request: SigningRequest,
        signature: Vec<u8>,
    ) -> Result<String, AdapterError> {
        let setup = Setup::of(&ctx)?;
        let p = permit_of(&setup, &transfer)?;
        let payload = PaymentPayload {
            x402_version: X402_VERSION,
            resource: None,
            accepted: Requirements::from_wit(&requirements),
            payload: Permit2Payload {
                signature: hex::encode_prefixed(signature),
                permit2_authorization: Authorization {
                    from: evm::checksum(&parse_address(&transfer.sender).map_err(AdapterError::InvalidAddress)?),
                    permitted: Permitted { token: evm::checksum(&p.permitted.token), amount: p.permitted.amount.to_string() },
                    spender: evm::checksum(&p.spender),
                    nonce: p.nonce.to_string(),
                    deadline: p.deadline.to_string(),
                    witness: WitnessJson { to: evm::checksum(&p.witness.to), valid_after: p.witness.validAfter.to_string() },
                },
            },
            extensions: None,
        };
        serde_json::to_string(&payload).map_err(|e| AdapterError::Malformed(e.to_string()))
    }
}

/// The Permit2 authorization a host-held wallet signs for `t`.
fn permit_of(setup: &Setup, t: &Transfer) -> Result<PermitWitnessTransferFrom, AdapterError> {
    if t.nonce.len() != 32 {
        return Err(AdapterError::Malformed("transfer nonce must be 32 bytes".into()));
    }
    Ok(PermitWitnessTransferFrom {
        permitted: TokenPermissions { token: setup.token, amount: parse_units(&t.amount).map_err(AdapterError::InvalidAmount)? },
        spender: setup.proxy,
        nonce: U256::from_be_slice(&t.nonce),
        deadline: U256::from(t.valid_before),
        witness: Witness { to: parse_address(&t.recipient).map_err(AdapterError::InvalidAddress)?, validAfter: U256::from(t.valid_after) },
    })
}

/// Every offline check of a Permit2 proof and its extension.
fn check(ctx: &AssetContext, setup: &Setup, req: &PaymentRequirements, proof: &str) -> Result<Checked, ProofError> {
    let p: PaymentPayload<Permit2Payload> = decode_payload(proof, req, same_address, AmountRule::Exact)?;
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
            validAfter: parse_units(&a.witness.valid_after).map_err(malformed)?,
        },
    };
    let signature = hex::decode(&p.payload.signature).map_err(|_| ProofError::InvalidSignature("signature is not hex".into()))?;

    if permit.permitted.token != setup.token {
        return Err(ProofError::RequirementsMismatch(format!("permitted token is {}, must be {}", permit.permitted.token, setup.token)));
    }
    if permit.spender != setup.proxy {
        return Err(ProofError::RequirementsMismatch(format!(
            "spender is {}, must be the x402 Permit2 proxy {}",
            permit.spender, setup.proxy
        )));
    }
    if !same_address(&a.witness.to, &req.pay_to) {
        return Err(ProofError::WrongRecipient(format!("witness pays {}, not {}", a.witness.to, req.pay_to)));
    }
    let required = parse_units(&req.amount).map_err(malformed)?;
    if permit.permitted.amount != required {
        return Err(ProofError::WrongAmount(format!("permitted amount {} != {required}", permit.permitted.amount)));
    }
    evm::check_window(permit.witness.validAfter, permit.deadline)?;
    let now = host::now();
    let domain = setup.domain(ctx).map_err(|e| ProofError::Unsupported(format!("{e:?}")))?;
    let (signature, _) = evm::payer::check_deployed(&evm::signing_hash(&permit, &domain), &signature, &owner)?;

    let expect = Expect { ctx, payer: owner, token: setup.token, permit2: setup.permit2, amount: required, now };
    let sponsor = sponsor::of_payload(&expect, p.extensions.as_ref(), &setup.extensions)?;

    let window = |v: U256| u64::try_from(v).unwrap_or(u64::MAX);
    let payment = VerifiedPayment {
        payer: evm::checksum(&owner),
        pay_to: evm::checksum(&permit.witness.to),
        amount: required.to_string(),
        valid_after: window(permit.witness.validAfter),
        valid_before: window(permit.deadline),
        // Permit2 nonces are per owner and chain, whatever the token.
        replay_key: stablerail_adapter_kit::evm::permit2::replay_key(&ctx.network, &setup.permit2, &owner, permit.nonce),
    };
    Ok(Checked { payment, permit, owner, signature, sponsor })
}

stablerail_adapter_kit::export!(Permit2Scheme with_types_in stablerail_adapter_kit::bindings);
