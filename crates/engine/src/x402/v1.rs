//! x402 v1 at the facilitator's edge: v1 bodies (network names such as
//! `base`, `maxAmountRequired`, a payload with top-level `scheme` and
//! `network`) are rewritten into v2 terms on the way in, and answers name
//! the network as the caller did. Nothing below this module knows v1.

use serde_json::{json, Value};

use super::reason::Reason;

/// v1 network names and their CAIP-2 ids: `@x402/evm`'s and `@x402/svm`'s
/// v1 tables, and for chains x402 v1 never named, the chain's own name as
/// the shipped `chains.toml` spells it (docs/decisions.md).
const NAMES: &[(&str, &str)] = &[
    ("base", "eip155:8453"),
    ("base-sepolia", "eip155:84532"),
    ("ethereum", "eip155:1"),
    ("sepolia", "eip155:11155111"),
    ("polygon", "eip155:137"),
    ("polygon-amoy", "eip155:80002"),
    ("avalanche", "eip155:43114"),
    ("avalanche-fuji", "eip155:43113"),
    ("monad", "eip155:143"),
    ("megaeth", "eip155:4326"),
    ("arbitrum", "eip155:42161"),
    ("bsc", "eip155:56"),
    ("hyperevm", "eip155:999"),
    ("skale-base", "eip155:1187947933"),
    ("solana", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"),
    ("solana-devnet", "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"),
    ("solana-testnet", "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"),
    ("tron", "tron:0x2b6653dc"),
    ("tron-nile", "tron:0xcd8690dc"),
];

/// The CAIP-2 id a v1 name stands for (a CAIP-2 id passes as it is).
pub fn caip2(network: &str) -> Option<String> {
    if network.contains(':') {
        return Some(network.to_string());
    }
    NAMES.iter().find(|(n, _)| *n == network).map(|(_, id)| id.to_string())
}

/// The v1 name of a CAIP-2 id, if x402 v1 has one.
pub fn name(caip2: &str) -> Option<&'static str> {
    NAMES.iter().find(|(_, id)| *id == caip2).map(|(n, _)| *n)
}

/// A v1 request's payload and requirements in v2 form: requirements with
/// `amount` and a CAIP-2 network, a payload whose `accepted` repeats them.
pub fn upgrade(payload: &Value, requirements: &Value) -> Result<(Value, Value), Reason> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let bad = Reason::InvalidPaymentRequirements;
    let network = text(requirements, "network").ok_or(bad)?;
    let scheme = text(requirements, "scheme").ok_or(bad)?;
    let id = caip2(&network).ok_or(Reason::InvalidNetwork)?;
    let mut req = json!({
        "scheme": scheme,
        "network": id,
        "amount": text(requirements, "maxAmountRequired").ok_or(bad)?,
        "asset": text(requirements, "asset").ok_or(bad)?,
        "payTo": text(requirements, "payTo").ok_or(bad)?,
        "maxTimeoutSeconds": requirements.get("maxTimeoutSeconds").and_then(Value::as_u64).ok_or(bad)?,
    });
    if let Some(extra) = requirements.get("extra").filter(|e| !e.is_null()) {
        req["extra"] = extra.clone();
    }
    // The payload names the same kind it pays for.
    if text(payload, "scheme").as_deref() != Some(scheme.as_str()) || text(payload, "network").as_deref() != Some(network.as_str()) {
        return Err(Reason::InvalidPayload);
    }
    let inner = payload.get("payload").filter(|p| p.is_object()).ok_or(Reason::InvalidPayload)?;
    let mut upgraded = json!({ "x402Version": 2, "accepted": req, "payload": inner });
    if let Some(url) = text(requirements, "resource") {
        upgraded["resource"] = json!({ "url": url });
    }
    Ok((upgraded, req))
}
