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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_body_becomes_its_v2_form() {
        let req = json!({ "scheme": "exact", "network": "base", "maxAmountRequired": "10000", "resource": "http://shop/r",
            "description": "", "payTo": "0xabc", "maxTimeoutSeconds": 300, "asset": "0xdef", "extra": { "name": "USD Coin" } });
        let payload = json!({ "x402Version": 1, "scheme": "exact", "network": "base", "payload": { "signature": "0x1" } });
        let (p, r) = upgrade(&payload, &req).unwrap();
        assert_eq!(r["network"], "eip155:8453");
        assert_eq!(r["amount"], "10000");
        assert_eq!(p["accepted"], r);
        assert_eq!(p["payload"]["signature"], "0x1");
        let other = json!({ "x402Version": 1, "scheme": "exact", "network": "polygon", "payload": {} });
        assert_eq!(upgrade(&other, &req), Err(Reason::InvalidPayload));
        let mut unknown = req.clone();
        unknown["network"] = json!("atlantis");
        assert_eq!(upgrade(&payload, &unknown), Err(Reason::InvalidNetwork));
        assert_eq!(name("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"), Some("solana"));
    }

    #[test]
    fn malformed_v1_bodies_are_refused_with_their_reason() {
        let req = json!({ "scheme": "exact", "network": "base", "maxAmountRequired": "1", "payTo": "0xabc",
            "maxTimeoutSeconds": 60, "asset": "0xdef" });
        let payload = json!({ "x402Version": 1, "scheme": "exact", "network": "base", "payload": {} });
        assert!(upgrade(&payload, &req).is_ok());
        for missing in ["scheme", "network", "maxAmountRequired", "payTo", "maxTimeoutSeconds", "asset"] {
            let mut r = req.clone();
            r.as_object_mut().unwrap().remove(missing);
            assert_eq!(upgrade(&payload, &r), Err(Reason::InvalidPaymentRequirements), "{missing}");
        }
        let mut text_timeout = req.clone();
        text_timeout["maxTimeoutSeconds"] = json!("60");
        assert_eq!(upgrade(&payload, &text_timeout), Err(Reason::InvalidPaymentRequirements));
        for bad in [
            json!({ "x402Version": 1, "scheme": "exact", "network": "base" }),
            json!({ "scheme": "exact", "network": "base", "payload": "x" }),
            json!("text"),
        ] {
            assert_eq!(upgrade(&bad, &req), Err(Reason::InvalidPayload), "{bad}");
        }
    }
}
