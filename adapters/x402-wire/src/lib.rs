//! x402 v2 for adapters that generate their own bindings (0.3.0 and later):
//! a PaymentPayload decoded and matched against the requirements the host
//! issued, and decimal amounts scaled to base units. Errors are this
//! crate's; each adapter maps them to its `proof-error` / `adapter-error`.

use serde::de::DeserializeOwned;
use serde::Deserialize;

pub const X402_VERSION: u64 = 2;
/// Most decimal places an amount may carry (the spec's precision limit).
const MAX_FRACTION: usize = 6;

/// Why a payload was refused before its scheme-specific part was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not decodable, or a member missing or mistyped.
    Malformed(String),
    /// Another x402 version or scheme.
    Unsupported(String),
    /// `accepted` differs from the issued requirements.
    Mismatch(String),
}

/// The issued requirements' fields that `accepted` must repeat exactly.
pub struct Issued<'a> {
    pub scheme: &'a str,
    pub network: &'a str,
    pub amount: &'a str,
    pub asset: &'a str,
    pub pay_to: &'a str,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Payload<P> {
    x402_version: u64,
    accepted: Accepted,
    payload: P,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Accepted {
    scheme: String,
    network: String,
    amount: String,
    asset: String,
    pay_to: String,
}

/// The scheme-specific `payload` of a PaymentPayload that answers `issued`.
pub fn decode<P: DeserializeOwned>(proof: &str, issued: &Issued) -> Result<P, Refusal> {
    let p: Payload<P> = serde_json::from_str(proof).map_err(|e| Refusal::Malformed(format!("payment payload: {e}")))?;
    if p.x402_version != X402_VERSION {
        return Err(Refusal::Unsupported(format!("x402Version {} (expected {X402_VERSION})", p.x402_version)));
    }
    let a = &p.accepted;
    if a.scheme != issued.scheme {
        return Err(Refusal::Unsupported(format!("scheme `{}`", a.scheme)));
    }
    for (what, got, want) in [
        ("network", &a.network, issued.network),
        ("amount", &a.amount, issued.amount),
        ("asset", &a.asset, issued.asset),
        ("payTo", &a.pay_to, issued.pay_to),
    ] {
        if got != want {
            return Err(Refusal::Mismatch(format!("accepted {what} is {got}, required {want}")));
        }
    }
    Ok(p.payload)
}

/// A payment payload (proof) that `decode` accepts for `issued`: what a
/// host-held wallet's signed `payload` travels as.
pub fn envelope(issued: &Issued, max_timeout_seconds: u64, extra: &str, payload: serde_json::Value) -> String {
    serde_json::json!({
        "x402Version": X402_VERSION,
        "accepted": {
            "scheme": issued.scheme,
            "network": issued.network,
            "amount": issued.amount,
            "asset": issued.asset,
            "payTo": issued.pay_to,
            "maxTimeoutSeconds": max_timeout_seconds,
            "extra": serde_json::from_str::<serde_json::Value>(extra).unwrap_or_default(),
        },
        "payload": payload,
    })
    .to_string()
}

/// `12.5` with `decimals` 6 is "12500000", exactly: the base-unit digits, or
/// why not.
pub fn base_units(amount: &str, decimals: u8) -> Result<String, String> {
    let (whole, fraction) = amount.split_once('.').unwrap_or((amount, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || (amount.contains('.') && !digits(fraction)) {
        return Err(format!("`{amount}` is not a decimal amount"));
    }
    if fraction.len() > MAX_FRACTION || fraction.len() > usize::from(decimals) {
        return Err(format!("`{amount}` has more decimal places than allowed"));
    }
    let scaled = format!("{whole}{fraction:0<width$}", width = usize::from(decimals));
    let trimmed = scaled.trim_start_matches('0');
    Ok(if trimmed.is_empty() { "0".into() } else { trimmed.into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_exactly() {
        assert_eq!(base_units("12.5", 6).as_deref(), Ok("12500000"));
        assert_eq!(base_units("0.000001", 6).as_deref(), Ok("1"));
        assert_eq!(base_units("0", 6).as_deref(), Ok("0"));
        assert!(base_units("0.0000001", 9).is_err());
        assert!(base_units("1.", 6).is_err());
        assert!(base_units("-1", 6).is_err());
        assert!(base_units("1.5", 0).is_err());
    }

    #[test]
    fn accepted_must_repeat_the_requirements() {
        let issued = Issued { scheme: "exact", network: "n", amount: "5", asset: "a", pay_to: "p" };
        let proof = |amount: &str, version: u64| {
            format!(
                r#"{{"x402Version":{version},"accepted":{{"scheme":"exact","network":"n","amount":"{amount}","asset":"a","payTo":"p"}},"payload":{{"x":1}}}}"#
            )
        };
        #[derive(Deserialize, Debug, PartialEq)]
        struct X {
            x: u8,
        }
        assert_eq!(decode::<X>(&proof("5", 2), &issued), Ok(X { x: 1 }));
        assert!(matches!(decode::<X>(&proof("6", 2), &issued), Err(Refusal::Mismatch(m)) if m.contains("amount")));
        assert!(matches!(decode::<X>(&proof("5", 1), &issued), Err(Refusal::Unsupported(_))));
        assert!(matches!(decode::<X>("{", &issued), Err(Refusal::Malformed(_))));
    }
}
