//! x402 PaymentRequirements between the adapter's WIT record and JSON.

use serde_json::{json, Value};

use crate::payment::PaymentRequirements;

pub fn to_json(r: &PaymentRequirements) -> Value {
    json!({
        "scheme": r.scheme,
        "network": r.network,
        "amount": r.amount,
        "asset": r.asset,
        "payTo": r.pay_to,
        "maxTimeoutSeconds": r.max_timeout_seconds,
        "extra": serde_json::from_str::<Value>(&r.extra).unwrap_or(Value::Null),
    })
}

pub fn from_json(v: &Value) -> Option<PaymentRequirements> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    Some(PaymentRequirements {
        scheme: s("scheme")?,
        network: s("network")?,
        amount: s("amount")?,
        asset: s("asset")?,
        pay_to: s("payTo")?,
        max_timeout_seconds: v.get("maxTimeoutSeconds").and_then(Value::as_u64)?,
        extra: v.get("extra").map(Value::to_string).unwrap_or_else(|| "{}".into()),
    })
}

/// Decode a settle_proof: standard base64 of the PaymentPayload JSON, or the
/// JSON text itself. Returns the JSON text.
pub fn decode_proof(proof: &str) -> Option<String> {
    use base64::Engine as _;
    let proof = proof.trim();
    let text = if proof.starts_with('{') {
        proof.to_string()
    } else {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(proof)
            .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(proof))
            .ok()?;
        String::from_utf8(bytes).ok()?
    };
    serde_json::from_str::<Value>(&text).ok()?.is_object().then_some(text)
}
