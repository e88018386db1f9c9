//! A payer's signature, checked as the chain will check it (x402's rule,
//! `@x402/evm` `verifySignature.ts`): no code at the payer → ECDSA; code
//! (a deployed wallet, or an EOA delegated under EIP-7702, `0xef0100…`) →
//! a strict ERC-1271 `isValidSignature` that must answer `0x1626ba7e`, with
//! no ECDSA fallback; an ERC-6492 signature of a wallet with no code yet →
//! the wallet's deployment, which the scheme simulates with the transfer
//! and, if the chain's `erc6492-factories` allows the factory, sends first.
//!
//! ```ignore
//! match evm::payer::check(&ctx, &digest, &signature, &auth.from)? {
//!     Signed::Checked { signature, .. } => { /* give `signature` to the token */ }
//!     Signed::Counterfactual { deployment, inner } => { /* simulate, then deploy first */ }
//! }
//! ```

use alloy_primitives::{hex, Address, Bytes, B256};
use alloy_sol_types::{sol, SolCall, SolValue};
use serde_json::{json, Value};

use crate::chain::{self, QueryError};
use crate::types::{AssetContext, EvmCall, ProofError, SettleStep, Submission};

sol! {
    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }
    struct Result3 {
        bool success;
        bytes returnData;
    }
    function aggregate3(Call3[] calls) external payable returns (Result3[] returnData);
}

/// ERC-6492's suffix: a signature ending in it is
/// `abi.encode(factory, factoryCalldata, innerSignature) ++ MAGIC`.
pub const ERC6492_MAGIC: [u8; 32] = hex!("6492649264926492649264926492649264926492649264926492649264926492");
const ERC1271_MAGIC: [u8; 4] = hex!("1626ba7e");
/// Multicall3's canonical address (the `multicall3` param overrides it).
pub const MULTICALL3: Address = Address::new(hex!("cA11bde05977b3631167028862bE2a173976CA11"));

/// How a smart wallet that does not exist yet is deployed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployment {
    pub factory: Address,
    pub calldata: Vec<u8>,
}

/// A payer's signature that checked out, or what is needed to check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    /// Valid now: `signature` is what the token or Permit2 is given (an
    /// ERC-6492 wrapper of an already deployed wallet removed); `contract`:
    /// the payer has code, so the chain asks it (ERC-1271) too.
    Checked { signature: Vec<u8>, contract: bool },
    /// A wallet with no code and an ERC-6492 signature: valid only once
    /// `deployment` ran, which only a simulation can tell. `inner` is the
    /// signature the wallet will validate.
    Counterfactual { deployment: Deployment, inner: Vec<u8> },
}

/// Split an ERC-6492 signature. A zero factory is no deployment (as viem
/// and `@x402/evm` read it): the bytes are then not a signature at all.
pub fn parse_erc6492(signature: &[u8]) -> Option<(Deployment, Vec<u8>)> {
    let body = signature.strip_suffix(&ERC6492_MAGIC)?;
    let (factory, calldata, inner) = <(Address, Bytes, Bytes)>::abi_decode_params(body).ok()?;
    (!factory.is_zero()).then(|| (Deployment { factory, calldata: calldata.to_vec() }, inner.to_vec()))
}

/// Whether `address` has code (a contract, or an EIP-7702 delegation).
pub fn has_code(address: &Address) -> Result<bool, ProofError> {
    let code: String = chain::query("eth_getCode", &json!([address.to_string(), "latest"]))?;
    let bytes = hex::decode(&code).map_err(|_| ProofError::ChainUnavailable("eth_getCode answer is not hex".into()))?;
    Ok(!bytes.is_empty())
}

/// Check `signature` over `digest` as `payer`'s, as the chain will.
pub fn check(digest: &B256, signature: &[u8], payer: &Address) -> Result<Signed, ProofError> {
    let wrapped = parse_erc6492(signature);
    let deployed = has_code(payer)?;
    match wrapped {
        Some((deployment, inner)) if !deployed => Ok(Signed::Counterfactual { deployment, inner }),
        Some((_, inner)) => erc1271(payer, digest, &inner).map(|()| Signed::Checked { signature: inner, contract: true }),
        None if deployed => erc1271(payer, digest, signature).map(|()| Signed::Checked { signature: signature.to_vec(), contract: true }),
        None => {
            let got = super::recover(digest, signature).map_err(ProofError::InvalidSignature)?;
            if got != *payer {
                return Err(ProofError::SignerMismatch(format!("signed by {got}, not {payer}")));
            }
            Ok(Signed::Checked { signature: signature.to_vec(), contract: false })
        }
    }
}

/// [`check`] for schemes that cannot deploy a wallet before paying
/// (Permit2: the wallet would also need an allowance it cannot have given):
/// a counterfactual wallet is `undeployed-smart-wallet`. Returns the
/// signature to pass on and whether the payer is a contract.
pub fn check_deployed(digest: &B256, signature: &[u8], payer: &Address) -> Result<(Vec<u8>, bool), ProofError> {
    match check(digest, signature, payer)? {
        Signed::Checked { signature, contract } => Ok((signature, contract)),
        Signed::Counterfactual { deployment, .. } => Err(ProofError::UndeployedSmartWallet(format!(
            "{payer} has no code yet (an ERC-6492 signature through factory {}); this scheme pays from deployed wallets only",
            deployment.factory
        ))),
    }
}

/// Strict ERC-1271: `isValidSignature` answers exactly `0x1626ba7e`. A
/// revert or any other answer is a refusal, not an outage.
pub fn erc1271(wallet: &Address, digest: &B256, signature: &[u8]) -> Result<(), ProofError> {
    let call = super::isValidSignatureCall { hash: *digest, signature: signature.to_vec().into() };
    let refused = || ProofError::InvalidSignature(format!("{wallet} does not accept this signature (ERC-1271)"));
    match call_outcome(wallet, call.abi_encode())? {
        Some(out) => match super::isValidSignatureCall::abi_decode_returns(&out) {
            Ok(m) if m.0 == ERC1271_MAGIC => Ok(()),
            _ => Err(refused()),
        },
        None => Err(refused()),
    }
}

/// The chain's allowlist of ERC-6492 factories (`erc6492-factories`).
pub fn factory_allowed(ctx: &AssetContext, factory: &Address) -> bool {
    crate::param(ctx, "erc6492-factories")
        .unwrap_or_default()
        .split(',')
        .filter_map(|a| a.trim().parse::<Address>().ok())
        .any(|a| a == *factory)
}

/// Refused unless the chain allows `deployment`'s factory.
pub fn require_allowed(ctx: &AssetContext, deployment: &Deployment) -> Result<(), ProofError> {
    if factory_allowed(ctx, &deployment.factory) {
        return Ok(());
    }
    Err(ProofError::FactoryNotAllowed(format!("factory {} is not in {}'s erc6492_factories", deployment.factory, ctx.chain)))
}

/// The chain's Multicall3.
pub fn multicall3(ctx: &AssetContext) -> Address {
    crate::param(ctx, "multicall3").and_then(|a| a.parse().ok()).unwrap_or(MULTICALL3)
}

/// Simulate the deployment and then `to.call(data)` in one `eth_call`
/// (Multicall3 `aggregate3`): whether the call succeeds once the wallet exists.
pub fn simulate_after_deployment(ctx: &AssetContext, deployment: &Deployment, to: &Address, data: Vec<u8>) -> Result<bool, ProofError> {
    let calls = vec![
        Call3 { target: deployment.factory, allowFailure: true, callData: deployment.calldata.clone().into() },
        Call3 { target: *to, allowFailure: true, callData: data.into() },
    ];
    let Some(out) = call_outcome(&multicall3(ctx), aggregate3Call { calls }.abi_encode())? else { return Ok(false) };
    let results = aggregate3Call::abi_decode_returns(&out).map_err(|e| ProofError::ChainUnavailable(format!("aggregate3 answer: {e}")))?;
    Ok(results.get(1).is_some_and(|r| r.success))
}

/// The deployment as the first settle step: through Multicall3 with
/// `allowFailure`, so a wallet someone else deployed in the meantime (the
/// factory then reverts) costs a no-op, not a failed payment. The transfer
/// after it is simulated by the host before it is sent.
pub fn deployment_step(ctx: &AssetContext, deployment: &Deployment) -> SettleStep {
    let calls = vec![Call3 { target: deployment.factory, allowFailure: true, callData: deployment.calldata.clone().into() }];
    let data = aggregate3Call { calls }.abi_encode();
    let label = format!("deploy:{}", &hex::encode(crate::host::keccak256(&deployment.calldata))[..16]);
    SettleStep {
        label,
        submission: Submission::EvmCall(EvmCall { to: super::checksum(&multicall3(ctx)), data, value: "0".into(), gas_limit: None }),
    }
}

/// An `eth_call`'s return data, or `None` when the call reverted. A node
/// that cannot be reached is `chain-unavailable`.
fn call_outcome(to: &Address, data: Vec<u8>) -> Result<Option<Vec<u8>>, ProofError> {
    let params = json!([{ "to": to.to_string(), "data": hex::encode_prefixed(data) }, "latest"]);
    match chain::query::<String>("eth_call", &params) {
        Ok(text) => hex::decode(text).map(Some).map_err(|_| ProofError::ChainUnavailable("eth_call answer is not hex".into())),
        Err(QueryError::Rpc(error)) if reverted(&error) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A node's JSON-RPC error that means "the call reverted": EIP-1474's code
/// 3 (execution reverted, with data), or geth's and anvil's -32000 / -32003
/// whose message names the revert.
fn reverted(error: &str) -> bool {
    let Ok(e) = serde_json::from_str::<Value>(error) else { return false };
    match e["code"].as_i64() {
        Some(3) => true,
        Some(-32000 | -32003 | -32015) => e["message"].as_str().is_some_and(|m| m.to_ascii_lowercase().contains("revert")),
        _ => false,
    }
}
