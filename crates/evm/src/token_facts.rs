//! What a served EVM token says about itself, compared with what chains.toml
//! states: its decimals, its EIP-712 domain, and code at every contract its
//! scheme calls. chains.toml is the operator's statement; a chain that says
//! otherwise withholds the asset (a payer would sign a domain the token
//! rejects, or be paid a thousandth of what was agreed).

use alloy_primitives::{address, Address, Bytes, B256, U256};
use alloy_sol_types::{sol, Eip712Domain, SolCall};
use serde_json::json;

use crate::config::{Asset, DomainKind};
use crate::family::chain::{ChainClient, ChainError};

sol! {
    function decimals() external view returns (uint8);
    function name() external view returns (string);
    function version() external view returns (string);
    function DOMAIN_SEPARATOR() external view returns (bytes32);
    function eip712Domain() external view returns (
        bytes1 fields, string name, string version, uint256 chainId,
        address verifyingContract, bytes32 salt, uint256[] extensions
    );
}

/// Canonical Permit2 and x402's exact-Permit2 proxy (CREATE2, the same on
/// every chain where deployed); an asset's `permit2-address` and
/// `proxy-address` params override them, as they do for the adapter.
pub const PERMIT2: Address = address!("000000000022D473030F116dDEE9F6B43aC78BA3");
pub const X402_EXACT_PROXY: Address = address!("402085c248EeA27D92E8b30b2C58ed07f9E20001");

/// Every way the chain disagrees with chains.toml about one asset (empty:
/// it agrees). `Err` when the chain could not be asked: nothing is known.
pub async fn differences(client: &ChainClient, chain_id: Option<u64>, asset: &Asset) -> Result<Vec<String>, ChainError> {
    let mut out = Vec::new();
    let token: Address = match asset.token.parse() {
        Ok(t) => t,
        Err(_) => return Ok(vec![format!("token `{}` is not an EVM address", asset.token)]),
    };
    let mut contracts = vec![("token", token)];
    if asset.scheme == "permit2" {
        for (role, key, default) in [("Permit2", "permit2-address", PERMIT2), ("x402 proxy", "proxy-address", X402_EXACT_PROXY)] {
            match asset.params.get(key).map(|a| a.parse::<Address>()) {
                None => contracts.push((role, default)),
                Some(Ok(a)) => contracts.push((role, a)),
                Some(Err(_)) => out.push(format!("params.{key} is not an EVM address")),
            }
        }
    }
    for (role, at) in &contracts {
        let code = client.rpc("eth_getCode", json!([at, "latest"])).await?;
        if code.as_str().is_none_or(|c| c.trim_start_matches("0x").is_empty()) {
            out.push(format!("no contract code at the {role} address {at}"));
        }
    }
    if !out.is_empty() {
        return Ok(out);
    }

    match call(client, token, decimalsCall {}).await? {
        Some(d) if d == asset.decimals => {}
        Some(d) => out.push(format!("decimals: chains.toml says {}, the token says {d}", asset.decimals)),
        None => out.push("the token does not answer decimals()".into()),
    }
    if asset.domain != DomainKind::None {
        out.extend(domain_differences(client, chain_id.unwrap_or_default(), token, asset).await?);
    }
    Ok(out)
}

/// The token's EIP-712 domain against chains.toml's: `eip712Domain()`
/// (EIP-5267) where the token has it, else `DOMAIN_SEPARATOR()` against the
/// separator of the configured values, with `name()`/`version()` to say
/// which value differs.
async fn domain_differences(client: &ChainClient, chain_id: u64, token: Address, asset: &Asset) -> Result<Vec<String>, ChainError> {
    let (Some(want_name), Some(want_version)) = (&asset.eip712_name, &asset.eip712_version) else {
        return Ok(vec!["the asset has an EIP-712 domain but no eip712_name or eip712_version".into()]);
    };
    let salted = asset.domain == DomainKind::Salted;
    let mut out = Vec::new();
    if let Some(d) = call(client, token, eip712DomainCall {}).await? {
        let fields = d.fields.0[0];
        let has = |bit: u8| fields & bit != 0;
        if !has(0x01) || d.name != *want_name {
            out.push(format!("eip712_name: chains.toml says {want_name:?}, the token's domain says {:?}", d.name));
        }
        if !has(0x02) || d.version != *want_version {
            out.push(format!("eip712_version: chains.toml says {want_version:?}, the token's domain says {:?}", d.version));
        }
        if !has(0x08) || d.verifyingContract != token {
            out.push(format!("the token's domain names verifying contract {}", d.verifyingContract));
        }
        let salt = B256::from(U256::from(chain_id));
        match (salted, has(0x04), has(0x10)) {
            (false, true, false) if d.chainId == U256::from(chain_id) => {}
            (true, false, true) if d.salt == salt => {}
            _ => out.push(format!(
                "domain: chains.toml says {} domain for chain id {chain_id}; the token's has fields {fields:#04x}, chainId {}, salt {}",
                if salted { "a salted" } else { "a standard" },
                d.chainId,
                d.salt
            )),
        }
        return Ok(out);
    }
    let Some(separator) = call(client, token, DOMAIN_SEPARATORCall {}).await? else {
        return Ok(vec!["the token answers neither eip712Domain() nor DOMAIN_SEPARATOR()".into()]);
    };
    if separator == domain(want_name, want_version, chain_id, token, salted).separator() {
        return Ok(out);
    }
    let said_name = call(client, token, nameCall {}).await?;
    let said_version = call(client, token, versionCall {}).await?;
    if said_name.as_ref().is_some_and(|n| n != want_name) {
        out.push(format!("eip712_name: chains.toml says {want_name:?}, the token says {:?}", said_name.unwrap_or_default()));
    }
    if said_version.as_ref().is_some_and(|v| v != want_version) {
        out.push(format!("eip712_version: chains.toml says {want_version:?}, the token says {:?}", said_version.unwrap_or_default()));
    }
    if out.is_empty() {
        out.push(format!(
            "the token's DOMAIN_SEPARATOR() is not the {} domain chains.toml describes",
            if salted { "salted" } else { "standard" }
        ));
    }
    Ok(out)
}

/// The standard domain, or polygon's salted one (no chainId; the salt is
/// the chain id as 32 bytes).
pub fn domain(name: &str, version: &str, chain_id: u64, token: Address, salted: bool) -> Eip712Domain {
    let (chain, salt) = if salted { (None, Some(B256::from(U256::from(chain_id)))) } else { (Some(U256::from(chain_id)), None) };
    Eip712Domain::new(Some(name.to_string().into()), Some(version.to_string().into()), chain, Some(token), salt)
}

/// A view call's decoded answer; `None` when the token has no such function
/// (the call reverts or answers something that does not decode).
pub(super) async fn call<C: SolCall>(client: &ChainClient, to: Address, call: C) -> Result<Option<C::Return>, ChainError> {
    let data = Bytes::from(call.abi_encode());
    let answer = match client.rpc("eth_call", json!([{ "to": to, "data": data }, "latest"])).await {
        Ok(v) => v,
        Err(e) if e.is_node() => return Ok(None),
        Err(e) => return Err(e),
    };
    let bytes = answer.as_str().and_then(|h| alloy_primitives::hex::decode(h).ok());
    Ok(bytes.and_then(|b| C::abi_decode_returns(&b).ok()))
}
