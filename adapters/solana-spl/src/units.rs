//! Amounts: SPL amounts are u64 base units.

/// Most decimal places an amount may carry (the spec's precision limit).
const MAX_FRACTION: usize = 6;

/// A base-unit integer string.
pub fn parse(text: &str) -> Result<u64, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{text}` is not a base-unit integer"));
    }
    text.parse::<u64>().map_err(|_| format!("`{text}` does not fit an SPL amount (u64)"))
}

/// `12.5` with `decimals` 6 is 12500000, exactly, or an error that says why.
pub fn base_units(amount: &str, decimals: u8) -> Result<u64, String> {
    let (whole, fraction) = amount.split_once('.').unwrap_or((amount, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || (amount.contains('.') && !digits(fraction)) {
        return Err(format!("`{amount}` is not a decimal amount"));
    }
    if fraction.len() > MAX_FRACTION || fraction.len() > usize::from(decimals) {
        return Err(format!("`{amount}` has more decimal places than allowed"));
    }
    let scaled = format!("{whole}{fraction:0<width$}", width = usize::from(decimals));
    parse(&scaled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_scaling() {
        assert_eq!(base_units("12.5", 6), Ok(12_500_000));
        assert_eq!(base_units("0.000001", 6), Ok(1));
        assert_eq!(base_units("7", 0), Ok(7));
        assert!(base_units("0.0000001", 9).is_err());
        assert!(base_units("1.", 6).is_err());
        assert!(base_units("-1", 6).is_err());
        assert!(base_units("18446744073709.551616", 6).is_err());
        assert_eq!(parse("18446744073709551615"), Ok(u64::MAX));
    }
}
