//! The x402 gas-sponsoring extensions of Permit2 payments (`exact` and
//! `upto`), checked field by field: how a payer with no Permit2 allowance
//! yet gets one within the same payment. `eip2612GasSponsoring` carries an
//! EIP-2612 permit to Permit2, applied by the proxy's `settleWithPermit`;
//! `erc20ApprovalGasSponsoring` the payer's signed `approve(Permit2, …)`,
//! broadcast before the settlement.

use crate::amount::parse_units;
use crate::evm::{self, decode_approve, parse_address, token_domain};
use crate::types::{AssetContext, DomainShape, ProofError};
use alloy_consensus::{SignableTransaction, Signed, Transaction, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{hex, Address, B256, U256};
use alloy_sol_types::{sol, Eip712Domain};

use permit2_wire::payload::{self as wire, ApprovalInfo, Extensions, PermitInfo};

sol! {
    struct Permit {
        address owner;
        address spender;
        uint256 value;
        uint256 nonce;
        uint256 deadline;
    }
}

/// A sponsoring extension that passed its checks.
pub enum Sponsor {
    /// EIP-2612 permit to Permit2, applied through `settleWithPermit`.
    Permit { value: U256, nonce: U256, deadline: U256, signature: Vec<u8> },
    /// The payer's signed approve, broadcast before the settlement.
    Approval { raw: Vec<u8> },
}

/// What both extensions must agree on with the Permit2 authorization.
pub struct Expect<'a> {
    pub ctx: &'a AssetContext,
    pub payer: Address,
    pub token: Address,
    pub permit2: Address,
    pub amount: U256,
    pub now: u64,
}

/// The extensions an asset accepts: its `extensions` param (a comma list),
/// or by default the spec's: EIP-2612 where the token has a domain, both
/// where it has none.
pub fn accepted(ctx: &AssetContext, param: Option<&str>) -> Result<Vec<String>, String> {
    let list: Vec<String> = match param {
        Some(list) => list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect(),
        None if ctx.eip712.is_none() => vec![wire::EIP2612_GAS_SPONSORING.into(), wire::ERC20_APPROVAL_GAS_SPONSORING.into()],
        None => vec![wire::EIP2612_GAS_SPONSORING.into()],
    };
    match list.iter().find(|e| *e != wire::EIP2612_GAS_SPONSORING && *e != wire::ERC20_APPROVAL_GAS_SPONSORING) {
        Some(unknown) => Err(format!("unknown extension `{unknown}`")),
        None => Ok(list),
    }
}

/// The payload's gas-sponsoring extension, if it carries one, checked
/// against what the asset accepts and what the authorization says. At
/// most one per payment.
pub fn of_payload(e: &Expect, extensions: Option<&serde_json::Value>, accepted: &[String]) -> Result<Option<Sponsor>, ProofError> {
    let ext: Extensions = match extensions {
        Some(v) => serde_json::from_value(v.clone()).map_err(|err| ProofError::Malformed(format!("extensions: {err}")))?,
        None => Extensions::default(),
    };
    let accepts = |name: &str| accepted.iter().any(|a| a == name);
    let refuse = |name: &str| ProofError::Unsupported(format!("extension {name} is not accepted for {}/{}", e.ctx.chain, e.ctx.asset));
    match (ext.eip2612, ext.approval) {
        (Some(_), Some(_)) => Err(ProofError::Malformed("at most one gas-sponsoring extension per payment".into())),
        (Some(_), None) if !accepts(wire::EIP2612_GAS_SPONSORING) => Err(refuse(wire::EIP2612_GAS_SPONSORING)),
        (None, Some(_)) if !accepts(wire::ERC20_APPROVAL_GAS_SPONSORING) => Err(refuse(wire::ERC20_APPROVAL_GAS_SPONSORING)),
        (Some(w), None) => check_permit(e, &w.info).map(Some),
        (None, Some(w)) => check_approval(e, &w.info).map(Some),
        (None, None) => Ok(None),
    }
}

/// A permit is applied only with the token's next EIP-2612 nonce (read on
/// chain now); else it would revert inside the settlement.
pub fn check_next_nonce(token: &Address, owner: Address, nonce: U256) -> Result<(), ProofError> {
    use alloy_sol_types::SolCall;
    let out = evm::eth_call(token, permit2_wire::noncesCall { owner }.abi_encode())?;
    let next =
        permit2_wire::noncesCall::abi_decode_returns(&out).map_err(|e| ProofError::ChainUnavailable(format!("nonces answer: {e}")))?;
    if next != nonce {
        return Err(ProofError::NotApproved(format!("EIP-2612 permit nonce {nonce} is not the token's next nonce {next}")));
    }
    Ok(())
}

fn same(got: &str, want: &Address, what: &str) -> Result<(), ProofError> {
    let parsed = parse_address(got).map_err(ProofError::Malformed)?;
    if parsed != *want {
        return Err(ProofError::RequirementsMismatch(format!("{what} is {got}, must be {want}")));
    }
    Ok(())
}

pub fn check_permit(e: &Expect, info: &PermitInfo) -> Result<Sponsor, ProofError> {
    if e.ctx.eip712.is_none() {
        return Err(ProofError::Unsupported("this token has no EIP-2612 permit".into()));
    }
    same(&info.from, &e.payer, "eip2612GasSponsoring.from")?;
    same(&info.asset, &e.token, "eip2612GasSponsoring.asset")?;
    same(&info.spender, &e.permit2, "eip2612GasSponsoring.spender")?;
    let malformed = |m: String| ProofError::Malformed(format!("eip2612GasSponsoring: {m}"));
    let value = parse_units(&info.amount).map_err(malformed)?;
    let nonce = parse_units(&info.nonce).map_err(malformed)?;
    let deadline = parse_units(&info.deadline).map_err(malformed)?;
    if value != e.amount {
        return Err(ProofError::WrongAmount(format!("EIP-2612 permit value {value} != permitted amount {}", e.amount)));
    }
    if deadline < U256::from(e.now + crate::x402::VALIDITY_MARGIN_SECS) {
        return Err(ProofError::Expired);
    }
    let signature = hex::decode(&info.signature).map_err(|_| ProofError::InvalidSignature("permit signature is not hex".into()))?;
    let permit = Permit { owner: e.payer, spender: e.permit2, value, nonce, deadline };
    let domain = token_domain(e.ctx).map_err(|err| ProofError::Unsupported(format!("{err:?}")))?;
    match evm::payer::check_deployed(&evm::signing_hash(&permit, &domain), &signature, &e.payer) {
        // The proxy hands the token (v, r, s) only.
        Ok((signature, _)) if signature.len() != 65 => Err(ProofError::InvalidSignature(format!(
            "EIP-2612 permit signature is {} bytes; the x402 proxy passes a 65-byte (v, r, s) permit only",
            signature.len()
        ))),
        Err(ProofError::SignerMismatch(m)) if e.ctx.eip712.as_ref().is_some_and(|d| d.shape == DomainShape::Salted) => {
            // Name the usual mistake: a chainId domain for a salted token.
            let chain_domain = Eip712Domain { salt: None, chain_id: e.ctx.chain_id.map(U256::from), ..domain };
            let hint = if evm::recover(&evm::signing_hash(&permit, &chain_domain), &signature).ok() == Some(e.payer) {
                "; it was signed over a chainId domain, but this token's domain is salted (salt = chainId, no chainId)"
            } else {
                ""
            };
            Err(ProofError::SignerMismatch(format!("EIP-2612 permit {m}{hint}")))
        }
        Err(ProofError::SignerMismatch(m)) => Err(ProofError::SignerMismatch(format!("EIP-2612 permit {m}"))),
        other => other.map(|(signature, _)| Sponsor::Permit { value, nonce, deadline, signature }),
    }
}

pub fn check_approval(e: &Expect, info: &ApprovalInfo) -> Result<Sponsor, ProofError> {
    same(&info.from, &e.payer, "erc20ApprovalGasSponsoring.from")?;
    same(&info.asset, &e.token, "erc20ApprovalGasSponsoring.asset")?;
    same(&info.spender, &e.permit2, "erc20ApprovalGasSponsoring.spender")?;
    let raw = hex::decode(&info.signed_transaction)
        .map_err(|_| ProofError::Malformed("erc20ApprovalGasSponsoring.signedTransaction is not hex".into()))?;
    let tx = TxEnvelope::decode_2718(&mut raw.as_slice())
        .map_err(|err| ProofError::Malformed(format!("approval transaction does not decode: {err}")))?;
    let (to, input, value, chain_id, signer) = match &tx {
        TxEnvelope::Legacy(s) => fields(s)?,
        TxEnvelope::Eip2930(s) => fields(s)?,
        TxEnvelope::Eip1559(s) => fields(s)?,
        _ => return Err(ProofError::Unsupported("approval transaction type".into())),
    };
    let mismatch = |m: String| Err(ProofError::RequirementsMismatch(m));
    if to != Some(e.token) {
        return mismatch(format!("approval transaction calls {to:?}, not the token {}", e.token));
    }
    if chain_id != e.ctx.chain_id {
        return mismatch(format!("approval transaction is for chain {chain_id:?}, not {:?}", e.ctx.chain_id));
    }
    if value != U256::ZERO {
        return mismatch("approval transaction sends native value".into());
    }
    let Some((spender, approved)) = decode_approve(&input) else {
        return Err(ProofError::Malformed("approval transaction is not approve(address,uint256)".into()));
    };
    if spender != e.permit2 {
        return mismatch(format!("approval transaction approves {spender}, not Permit2 {}", e.permit2));
    }
    if parse_units(&info.amount).ok() != Some(approved) {
        return mismatch(format!("erc20ApprovalGasSponsoring.amount {} != approved {approved}", info.amount));
    }
    if approved < e.amount {
        return Err(ProofError::WrongAmount(format!("approval of {approved} does not cover {}", e.amount)));
    }
    if signer != e.payer {
        return Err(ProofError::SignerMismatch(format!("approval transaction signed by {signer}, not {}", e.payer)));
    }
    Ok(Sponsor::Approval { raw })
}

type Fields = (Option<Address>, Vec<u8>, U256, Option<u64>, Address);

/// to, input, value, chain id and signer of a signed transaction; the signer
/// is recovered through the host's native secp256k1.
fn fields<T>(s: &Signed<T>) -> Result<Fields, ProofError>
where
    T: SignableTransaction<alloy_primitives::Signature> + Transaction,
{
    let tx = s.tx();
    let hash: B256 = s.signature_hash();
    let signer =
        evm::recover(&hash, &s.signature().as_bytes()).map_err(|m| ProofError::InvalidSignature(format!("approval transaction: {m}")))?;
    Ok((tx.to(), tx.input().to_vec(), tx.value(), tx.chain_id(), signer))
}
