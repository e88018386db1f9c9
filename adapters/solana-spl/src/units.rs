//! Amounts: SPL amounts are u64 base units.

/// A base-unit integer string.
pub fn parse(text: &str) -> Result<u64, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{text}` is not a base-unit integer"));
    }
    text.parse::<u64>().map_err(|_| format!("`{text}` does not fit an SPL amount (u64)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spl_amounts_are_u64() {
        assert_eq!(parse("18446744073709551615"), Ok(u64::MAX));
        assert!(parse("18446744073709551616").is_err());
        assert!(parse("1.5").is_err() && parse("").is_err() && parse("-1").is_err());
    }
}
