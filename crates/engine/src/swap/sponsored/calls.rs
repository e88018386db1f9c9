//! The calls a sponsored run makes and checks: the pull's requirements,
//! the payer's signed payment checked, EVM calls and their simulation.

use super::*;

/// The x402 requirements of a pull of `amount` to the relayer.
pub(super) async fn requirements(adapter: &Arc<AssetAdapter>, relayer: &str, amount: U256) -> Result<PaymentRequirements, SwapError> {
    let terms = Terms { amount: amount.to_string(), pay_to: relayer.to_string(), max_timeout_seconds: PULL_VALIDITY_SECS };
    adapter.requirements(&terms).await.or_refused("requirements").map_err(internal)
}

/// What the agent's wallet may see happen in the simulation: exactly
/// `amount` of the input leaves, only to the relayer; any approval it
/// grants is of the input to its asset's Permit2 (a permit the pull uses).
pub(super) fn check_payer(
    from: &SwapChain,
    events: &[guard::Event],
    me: &str,
    relayer: &str,
    from_token: &str,
    amount: U256,
    asset: &crate::config::Asset,
) -> Result<(), SwapError> {
    let facts = from.family.facts();
    let (me, relayer) = (facts.address20(me).ok_or(SwapError::WalletNotReady)?, facts.address20(relayer).ok_or(SwapError::WalletNotReady)?);
    let token = facts.address20(from_token).ok_or(SwapError::Invalid("from_token"))?;
    let permit2 = asset.params.get("permit2-address").and_then(|a| a.parse().ok()).unwrap_or(crate::family::evm::token_facts::PERMIT2);
    let mut left = U256::ZERO;
    for e in events {
        match *e {
            guard::Event::Transfer { token: t, from, to, amount } if from == me => {
                if t != token || to != relayer {
                    return Err(SwapError::Refused(format!("the sponsored swap moves {amount} of {t} from the wallet to {to}")));
                }
                left += amount;
            }
            guard::Event::Approval { owner, spender, .. } if owner == me && spender != permit2 => {
                return Err(SwapError::Refused(format!("the sponsored swap has the wallet approve {spender}")));
            }
            _ => {}
        }
    }
    if left != amount {
        return Err(SwapError::Refused(format!("the sponsored swap takes {left} from the wallet, not {amount}")));
    }
    Ok(())
}

pub(super) fn evm_call(to: &str, data: &str, value: Option<&str>, gas_limit: Option<&str>) -> Result<Submission, SwapError> {
    let number = |h: Option<&str>| h.and_then(|h| u128::from_str_radix(h.trim_start_matches("0x"), 16).ok());
    let data =
        alloy_primitives::hex::decode(data.trim_start_matches("0x")).map_err(|_| SwapError::Unavailable("calldata is not hex".into()))?;
    // A stablecoin input: no native value goes along.
    if number(value).unwrap_or(0) != 0 {
        return Err(SwapError::Refused("the sponsored swap would send native value".into()));
    }
    Ok(Submission::EvmCall(EvmCall {
        to: to.to_string(),
        data,
        value: "0".into(),
        gas_limit: number(gas_limit).and_then(|g| u64::try_from(g).ok()),
    }))
}

/// A host-signed EVM call as the guard simulates it.
pub(super) fn simulated(s: &Submission) -> Option<guard::EvmCall> {
    match s {
        Submission::EvmCall(c) => {
            Some(guard::EvmCall { to: c.to.parse().ok()?, data: c.data.clone(), value: U256::from_str_radix(&c.value, 10).ok()? })
        }
        _ => None,
    }
}

pub(super) fn parse_units(text: &str) -> Result<U256, SwapError> {
    U256::from_str_radix(text, 10).map_err(|_| SwapError::Unavailable(format!("`{text}` is not an amount")))
}
