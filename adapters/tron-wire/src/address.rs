//! TRON addresses: base58check of `0x41 ‖ 20 bytes`, the 20 bytes being the
//! same as the EVM address of the key.

use alloy_primitives::Address;

const PREFIX: u8 = 0x41;

/// `T…` to the 20-byte address; anything else (another prefix, a bad
/// checksum, another length) is refused.
pub fn parse(text: &str) -> Option<Address> {
    let bytes = bs58::decode(text).with_check(None).into_vec().ok()?;
    match bytes.as_slice() {
        [PREFIX, rest @ ..] if rest.len() == 20 => Some(Address::from_slice(rest)),
        _ => None,
    }
}

/// `T…`, or the 20 bytes as `0x` + 40 hex digits: the form x402-rs's TRON
/// client writes inside a Permit2 authorization (what TIP-712 signs is the
/// 20 bytes either way).
pub fn parse_signed(text: &str) -> Option<Address> {
    match text.strip_prefix("0x") {
        Some(hex) if hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => text.parse().ok(),
        Some(_) => None,
        None => parse(text),
    }
}

pub fn show(a: &Address) -> String {
    let mut body = vec![PREFIX];
    body.extend_from_slice(a.as_slice());
    bs58::encode(body).with_check().into_string()
}

/// The 21-byte form TRON's protobuf and HTTP API use.
pub fn raw(a: &Address) -> Vec<u8> {
    let mut out = vec![PREFIX];
    out.extend_from_slice(a.as_slice());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_vectors() {
        let usdt = parse("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t").unwrap();
        assert_eq!(format!("{usdt:#x}"), "0xa614f803b6fd780986a42c78ec9c7f77e6ded13c");
        assert_eq!(show(&usdt), "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t");
        assert_eq!(show(&Address::ZERO), "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb");
        assert_eq!(parse("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u"), None, "checksum");
        assert_eq!(parse("0xa614f803b6fd780986a42c78ec9c7f77e6ded13c"), None);
        assert_eq!(parse_signed("0xa614f803b6fd780986a42c78ec9c7f77e6ded13c"), Some(usdt));
        assert_eq!(parse_signed("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"), Some(usdt));
        assert_eq!(parse_signed("0x41a614f803b6fd780986a42c78ec9c7f77e6ded13c"), None, "21 bytes");
        assert_eq!(parse_signed("0xa614f803b6fd780986a42c78ec9c7f77e6ded1zz"), None);
    }
}
