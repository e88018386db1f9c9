//! Decimal amounts to base units, exactly.

use alloy_primitives::U256;

/// Most decimal places an amount may carry (the spec's precision limit).
pub const MAX_FRACTION_DIGITS: usize = 6;

/// Parse `digits[.1-6 digits]` and scale it to `decimals` base units.
pub fn to_base_units(amount: &str, decimals: u8) -> Result<U256, String> {
    let (int, frac) = match amount.split_once('.') {
        Some((i, f)) => (i, f),
        None => (amount, ""),
    };
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits_ok(int) || !digits_ok(frac) {
        return Err("amount must be digits with an optional fraction".into());
    }
    if amount.contains('.') && frac.is_empty() {
        return Err("amount has a dot but no fraction digits".into());
    }
    if frac.len() > MAX_FRACTION_DIGITS {
        return Err(format!("amount has more than {MAX_FRACTION_DIGITS} decimal places"));
    }
    if frac.len() > decimals as usize {
        return Err(format!("amount has more decimal places than the asset's {decimals}"));
    }
    let overflow = || "amount too large".to_string();
    let scale = U256::from(10u8).pow(U256::from(decimals));
    let int_units = U256::from_str_radix(int, 10).map_err(|_| overflow())?.checked_mul(scale).ok_or_else(overflow)?;
    let frac_units = if frac.is_empty() {
        U256::ZERO
    } else {
        let pad = U256::from(10u8).pow(U256::from(decimals as usize - frac.len()));
        U256::from_str_radix(frac, 10).map_err(|_| overflow())? * pad
    };
    int_units.checked_add(frac_units).ok_or_else(overflow)
}

/// `to-base-units` as adapters export it.
#[cfg(feature = "bindings")]
pub fn base_units(amount: &str, decimals: u8) -> Result<String, crate::types::AdapterError> {
    to_base_units(amount, decimals).map(|u| u.to_string()).map_err(crate::types::AdapterError::InvalidAmount)
}

/// Parse a base-unit integer string (no sign, no fraction).
pub fn parse_units(s: &str) -> Result<U256, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{s}` is not a base-unit integer"));
    }
    U256::from_str_radix(s, 10).map_err(|_| format!("`{s}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_exactly() {
        assert_eq!(to_base_units("1", 6).unwrap(), U256::from(1_000_000u64));
        assert_eq!(to_base_units("0.02", 6).unwrap(), U256::from(20_000u64));
        assert_eq!(to_base_units("1000000.000001", 18).unwrap().to_string(), "1000000000001000000000000");
        assert!(to_base_units("1.1234567", 18).is_err());
        assert!(to_base_units("1.", 6).is_err());
        assert!(to_base_units(".5", 6).is_err());
        assert!(to_base_units("-1", 6).is_err());
        assert!(to_base_units("1e6", 6).is_err());
    }
}
