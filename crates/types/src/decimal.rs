//! Exact decimal parsing for configuration and amounts. Money is never a float.

use rust_decimal::Decimal;

/// Parse a plain non-negative decimal (`12`, `0.5`). No exponent, no sign.
pub fn parse(s: &str) -> Result<Decimal, String> {
    let ok = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && s.bytes().filter(|&b| b == b'.').count() <= 1
        && !s.starts_with('.')
        && !s.ends_with('.');
    if !ok {
        return Err(format!("`{s}` is not a plain decimal number"));
    }
    s.parse::<Decimal>().map_err(|e| format!("`{s}`: {e}"))
}
