//! EIP-3009 `transferWithAuthorization` as the x402 `exact` scheme on EVM
//! chains (`assetTransferMethod` absent). Standard and salted token domains.

use alloy_primitives::{hex, Address, Bytes, B256, U256};
use alloy_sol_types::SolCall;
use serde::{Deserialize, Serialize};
use serde_json::json;
use stablerail_adapter_kit::amount::{base_units, parse_units};
use stablerail_adapter_kit::evm::eip3009::*;
use stablerail_adapter_kit::evm::payer::{self, Deployment, Signed};
use stablerail_adapter_kit::evm::{self, parse_address, parse_b256, same_address, token_domain, token_separator};
use stablerail_adapter_kit::types::{
    AdapterError, AssetContext, Description, Eip3009Payload, EvmCall, Family, PaymentProof, PaymentRequirements, ProofError, ReceiptStatus,
    SchemeRef, SettleStep, SigningRequest, Submission, Terms, Transfer, VerifiedPayment,
};
use stablerail_adapter_kit::x402::{decode_payload, decoded_eip3009, AmountRule, PaymentPayload, Requirements, X402_VERSION};
use stablerail_adapter_kit::Guest;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Exact3009 {
    signature: String,
    authorization: Authorization,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Authorization {
    from: String,
    to: String,
    value: String,
    valid_after: String,
    valid_before: String,
    nonce: String,
}

/// A proof that passed every offline check.
struct Checked {
    payment: VerifiedPayment,
    auth: TransferWithAuthorization,
    /// What the token is given.
    signature: Vec<u8>,
    /// The payer has code: the token asks it (ERC-1271), and its 65-byte
    /// signatures are passed as they are, never re-encoded as (v, r, s).
    contract: bool,
    /// A smart wallet to deploy first (ERC-6492, allowed factory).
    deployment: Option<Deployment>,
}

pub struct Eip3009;

impl Guest for Eip3009 {
    fn describe() -> Description {
        Description {
            name: "eip3009".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            serves: vec![SchemeRef { family: Family::Evm, scheme: "eip3009".into() }],
            config_keys: vec![],
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
        token_domain(&ctx)?;
        evm::exact_requirements(&ctx, terms, json!({}))
    }

    fn verify(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<VerifiedPayment, ProofError> {
        check(&ctx, &requirements, &proof).map(|c| c.payment)
    }

    fn preflight(ctx: AssetContext, payment: VerifiedPayment) -> Result<(), ProofError> {
        let token = parse_address(&ctx.token).map_err(ProofError::Unsupported)?;
        let from = parse_address(&payment.payer).map_err(ProofError::Malformed)?;
        let nonce = nonce_of(&payment.replay_key)?;
        let out = evm::eth_call(&token, authorizationStateCall { authorizer: from, nonce }.abi_encode())?;
        let used = authorizationStateCall::abi_decode_returns(&out)
            .map_err(|e| ProofError::ChainUnavailable(format!("authorizationState answer: {e}")))?;
        if used {
            return Err(ProofError::AlreadyUsed);
        }
        let amount = parse_units(&payment.amount).map_err(ProofError::Malformed)?;
        evm::check_balance(&token, from, amount)
    }

    fn settle(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<Vec<SettleStep>, ProofError> {
        let c = check(&ctx, &requirements, &proof)?;
        let mut steps: Vec<SettleStep> = c.deployment.iter().map(|d| payer::deployment_step(&ctx, d)).collect();
        let data = transfer_call(&c.auth, &c.signature, c.contract);
        steps.push(SettleStep {
            label: "transferWithAuthorization".into(),
            submission: Submission::EvmCall(EvmCall { to: requirements.asset, data, value: "0".into(), gas_limit: None }),
        });
        Ok(steps)
    }

    fn read_receipt(ctx: AssetContext, payment: VerifiedPayment, receipt: String) -> Result<ReceiptStatus, AdapterError> {
        evm::read_payment_receipt(&ctx, &payment, &receipt)
    }

    fn authorize(ctx: AssetContext, transfer: Transfer) -> Result<SigningRequest, AdapterError> {
        let separator = token_separator(&ctx)?;
        let auth = authorization_of(&transfer)?;
        Ok(SigningRequest::Eip712Digest(evm::digest(&auth, &separator).to_vec()))
    }

    /// EIP-3009 needs no allowance: nothing to prepare.
    fn prepare_sender(_ctx: AssetContext, _sender: String, _amount: String) -> Result<Vec<SettleStep>, AdapterError> {
        Ok(vec![])
    }

    fn assemble(
        _ctx: AssetContext,
        requirements: PaymentRequirements,
        transfer: Transfer,
        _request: SigningRequest,
        signature: Vec<u8>,
    ) -> Result<String, AdapterError> {
        let a = authorization_of(&transfer)?;
        let payload = PaymentPayload {
            x402_version: X402_VERSION,
            resource: None,
            accepted: Requirements::from_wit(&requirements),
            payload: Exact3009 {
                signature: hex::encode_prefixed(signature),
                authorization: Authorization {
                    from: evm::checksum(&a.from),
                    to: evm::checksum(&a.to),
                    value: a.value.to_string(),
                    valid_after: a.validAfter.to_string(),
                    valid_before: a.validBefore.to_string(),
                    nonce: a.nonce.to_string(),
                },
            },
            extensions: None,
        };
        serde_json::to_string(&payload).map_err(|e| AdapterError::Malformed(e.to_string()))
    }
}

/// Every offline check of an EIP-3009 proof, in the order x402 lists them.
fn check(ctx: &AssetContext, req: &PaymentRequirements, proof: &PaymentProof) -> Result<Checked, ProofError> {
    let (auth, signature) = match decoded_eip3009(proof, req, same_address, AmountRule::Exact)? {
        Some(typed) => typed_authorization(typed)?,
        None => decode_authorization(&proof.json, req)?,
    };
    let malformed = |e: String| ProofError::Malformed(e);
    if !req.pay_to.parse::<Address>().is_ok_and(|pay_to| pay_to == auth.to) {
        return Err(ProofError::WrongRecipient(format!("authorization pays {}, not {}", evm::checksum(&auth.to), req.pay_to)));
    }
    let required = parse_units(&req.amount).map_err(malformed)?;
    if auth.value != required {
        return Err(ProofError::WrongAmount(format!("authorization value {} != {}", auth.value, required)));
    }
    evm::check_window(auth.validAfter, auth.validBefore)?;

    let separator = token_separator(ctx).map_err(|e| ProofError::Unsupported(format!("{e:?}")))?;
    let (signature, contract, deployment) = match payer::check(&evm::digest(&auth, &separator), &signature, &auth.from)? {
        Signed::Checked { signature, contract } => (signature, contract, None),
        Signed::Counterfactual { deployment, inner } => {
            payer::require_allowed(ctx, &deployment)?;
            // The wallet's signature is good only if the transfer goes
            // through once the wallet exists: one simulation says both.
            let token = parse_address(&ctx.token).map_err(ProofError::Unsupported)?;
            if !payer::simulate_after_deployment(ctx, &deployment, &token, transfer_call(&auth, &inner, true))? {
                return Err(ProofError::InvalidSignature(format!(
                    "the transfer fails after deploying {} through factory {}",
                    auth.from, deployment.factory
                )));
            }
            (inner, true, Some(deployment))
        }
    };

    let window = |v: U256| u64::try_from(v).unwrap_or(u64::MAX);
    let payment = VerifiedPayment {
        payer: evm::checksum(&auth.from),
        pay_to: evm::checksum(&auth.to),
        amount: auth.value.to_string(),
        valid_after: window(auth.validAfter),
        valid_before: window(auth.validBefore),
        replay_key: format!("eip3009:{}:{}:{:#x}:{}", ctx.network, ctx.token.to_lowercase(), auth.from, auth.nonce),
    };
    Ok(Checked { payment, auth, signature, contract, deployment })
}

/// The authorization as the host typed it (0.6.0).
fn typed_authorization(p: &Eip3009Payload) -> Result<(TransferWithAuthorization, Vec<u8>), ProofError> {
    let sized = |bytes: &[u8], n: usize, what: &str| match bytes.len() == n {
        true => Ok(()),
        false => Err(ProofError::Malformed(format!("{what} must be {n} bytes"))),
    };
    sized(&p.from, 20, "from")?;
    sized(&p.to, 20, "to")?;
    sized(&p.nonce, 32, "nonce")?;
    let word = |(a, b, c, d): (u64, u64, u64, u64)| U256::from_limbs([d, c, b, a]);
    let auth = TransferWithAuthorization {
        from: Address::from_slice(&p.from),
        to: Address::from_slice(&p.to),
        value: word(p.value),
        validAfter: word(p.valid_after),
        validBefore: word(p.valid_before),
        nonce: B256::from_slice(&p.nonce),
    };
    Ok((auth, p.signature.clone()))
}

/// The authorization decoded from the proof's JSON, where the host did not
/// type it: the requirements matched and every member parsed, or refused.
fn decode_authorization(json: &str, req: &PaymentRequirements) -> Result<(TransferWithAuthorization, Vec<u8>), ProofError> {
    let p: PaymentPayload<Exact3009> = decode_payload(json, req, same_address, AmountRule::Exact)?;
    let a = &p.payload.authorization;
    let malformed = |e: String| ProofError::Malformed(e);
    let auth = TransferWithAuthorization {
        from: parse_address(&a.from).map_err(malformed)?,
        to: parse_address(&a.to).map_err(malformed)?,
        value: parse_units(&a.value).map_err(malformed)?,
        validAfter: parse_units(&a.valid_after).map_err(malformed)?,
        validBefore: parse_units(&a.valid_before).map_err(malformed)?,
        nonce: parse_b256(&a.nonce, "nonce").map_err(malformed)?,
    };
    let signature = hex::decode(&p.payload.signature).map_err(|_| ProofError::InvalidSignature("signature is not hex".into()))?;
    Ok((auth, signature))
}

/// `transferWithAuthorization`: (v, r, s) for an EOA's 65 bytes, the
/// `bytes` form (FiatToken 2.2) for anything a contract validates.
fn transfer_call(a: &TransferWithAuthorization, signature: &[u8], contract: bool) -> Vec<u8> {
    if signature.len() == 65 && !contract {
        let (v, r, s) = evm::split_signature(signature);
        transferWithAuthorization_0Call {
            from: a.from,
            to: a.to,
            value: a.value,
            validAfter: a.validAfter,
            validBefore: a.validBefore,
            nonce: a.nonce,
            v,
            r,
            s,
        }
        .abi_encode()
    } else {
        transferWithAuthorization_1Call {
            from: a.from,
            to: a.to,
            value: a.value,
            validAfter: a.validAfter,
            validBefore: a.validBefore,
            nonce: a.nonce,
            signature: Bytes::from(signature.to_vec()),
        }
        .abi_encode()
    }
}

fn nonce_of(replay_key: &str) -> Result<B256, ProofError> {
    let nonce = replay_key.rsplit(':').next().unwrap_or_default();
    parse_b256(nonce, "nonce").map_err(ProofError::Malformed)
}

fn authorization_of(t: &Transfer) -> Result<TransferWithAuthorization, AdapterError> {
    if t.nonce.len() != 32 {
        return Err(AdapterError::Malformed("transfer nonce must be 32 bytes".into()));
    }
    Ok(TransferWithAuthorization {
        from: parse_address(&t.sender).map_err(AdapterError::InvalidAddress)?,
        to: parse_address(&t.recipient).map_err(AdapterError::InvalidAddress)?,
        value: parse_units(&t.amount).map_err(AdapterError::InvalidAmount)?,
        validAfter: U256::from(t.valid_after),
        validBefore: U256::from(t.valid_before),
        nonce: B256::from_slice(&t.nonce),
    })
}

#[cfg(feature = "export")]
stablerail_adapter_kit::export!(Eip3009 with_types_in stablerail_adapter_kit::bindings);
