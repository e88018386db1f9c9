//! Payments a payer signed: Permit2's witness transfer over TIP-712, which
//! the relayer settles through the x402 Permit2 proxy.

use alloy_primitives::{keccak256, Address, U256};
use alloy_sol_types::SolStruct;
use permit2_wire::payload::Permit2Payload;
use permit2_wire::{PermitWitnessTransferFrom, TokenPermissions, Witness};
use tron_wire::address;

use crate::stablerail::adapter0_1_0::types::*;
use crate::stablerail::adapter0_1_0::{clock, crypto};
use crate::stablerail::adapter0_6_0::types::AssetContext;
use crate::stablerail::adapter0_7_0::types::ProofError;
use crate::{units, Setup, VALIDITY_MARGIN_SECS};

/// Replay keys of Permit2 payments start with this.
pub const PERMIT2_KEY: &str = "permit2:";

/// A proof that passed every offline check.
pub struct Checked {
    pub payment: VerifiedPayment,
    pub permit: PermitWitnessTransferFrom,
    pub owner: Address,
    pub signature: Vec<u8>,
}

pub fn check(ctx: &AssetContext, setup: &Setup, req: &PaymentRequirements, p: Permit2Payload) -> Result<Checked, ProofError> {
    let auth = &p.permit2_authorization;
    // Base58check as TRON writes addresses, or 0x-hex as x402-rs's client does.
    let addr = |what: &str, text: &str| {
        address::parse_signed(text).ok_or_else(|| ProofError::Malformed(format!("{what} `{text}` is not a TRON address")))
    };
    let num = |text: &str| units(text).map_err(ProofError::Malformed);
    let owner = addr("from", &auth.from)?;
    let permit = PermitWitnessTransferFrom {
        permitted: TokenPermissions { token: addr("permitted.token", &auth.permitted.token)?, amount: num(&auth.permitted.amount)? },
        spender: addr("spender", &auth.spender)?,
        nonce: num(&auth.nonce)?,
        deadline: num(&auth.deadline)?,
        witness: Witness { to: addr("witness.to", &auth.witness.to)?, validAfter: num(&auth.witness.valid_after)? },
    };
    let signature =
        hex::decode(p.signature.trim_start_matches("0x")).map_err(|_| ProofError::InvalidSignature("signature is not hex".into()))?;
    if permit.permitted.token != setup.token {
        return Err(ProofError::RequirementsMismatch(format!(
            "permitted token is {}, must be {}",
            address::show(&permit.permitted.token),
            address::show(&setup.token)
        )));
    }
    if permit.spender != setup.proxy {
        return Err(ProofError::RequirementsMismatch(format!(
            "spender is {}, must be the x402 Permit2 proxy {}",
            address::show(&permit.spender),
            address::show(&setup.proxy)
        )));
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
        replay_key: format!("{PERMIT2_KEY}{}:{:#x}:{:#x}:{}", ctx.network, setup.permit2, owner, permit.nonce),
    };
    Ok(Checked { payment, permit, owner, signature })
}
