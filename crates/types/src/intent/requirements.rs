//! The payer's proof as the API receives it.

use serde_json::Value;

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
