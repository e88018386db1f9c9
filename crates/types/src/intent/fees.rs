//! Amount grammar, limits and the fee quote, in exact decimals.

use rust_decimal::{Decimal, RoundingStrategy};

use super::AmountMode;

pub const MIN_AMOUNT: Decimal = Decimal::from_parts(2, 0, 0, false, 2); // 0.02
pub const MAX_AMOUNT: Decimal = Decimal::from_parts(1_000_000, 0, 0, false, 0);
pub const PRECISION: u32 = 6;

/// `digits[.1-6 digits]` within 0.02 ..= 1,000,000.
pub fn parse_amount(s: &str) -> Result<Decimal, AmountError> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    let well_formed = !int.is_empty()
        && digits(int)
        && digits(frac)
        && (s.contains('.') != frac.is_empty())
        && frac.len() <= PRECISION as usize
        && int.len() <= 12;
    if !well_formed {
        return Err(AmountError::Format);
    }
    let d: Decimal = s.parse().map_err(|_| AmountError::Format)?;
    if d < MIN_AMOUNT || d > MAX_AMOUNT {
        return Err(AmountError::Range);
    }
    Ok(d)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmountError {
    Format,
    Range,
    /// ExactIn amount that does not cover the fees.
    BelowFees,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    pub sending: Decimal,
    pub receiving: Decimal,
    pub source_fee: Decimal,
    pub target_fee: Decimal,
    pub platform_fee: Decimal,
    pub platform_pct: Decimal,
    pub total_fee: Decimal,
}

/// The platform fee is `pct` percent of what the merchant receives, in both
/// modes, so an ExactIn intent and the ExactOut intent it implies agree.
/// Rounding always favours exactness of the amount the caller fixed: ExactOut
/// rounds the fee up; ExactIn rounds the merchant's share down.
pub fn quote(mode: AmountMode, amount: Decimal, source_fee: Decimal, target_fee: Decimal, pct: Decimal) -> Result<Quote, AmountError> {
    let hundred = Decimal::ONE_HUNDRED;
    let network = source_fee + target_fee;
    let (sending, receiving, platform_fee) = match mode {
        AmountMode::ExactOut => {
            let platform = (amount * pct / hundred).round_dp_with_strategy(PRECISION, RoundingStrategy::AwayFromZero);
            (amount + network + platform, amount, platform)
        }
        AmountMode::ExactIn => {
            let receiving =
                ((amount - network) / (Decimal::ONE + pct / hundred)).round_dp_with_strategy(PRECISION, RoundingStrategy::ToZero);
            if receiving <= Decimal::ZERO {
                return Err(AmountError::BelowFees);
            }
            (amount, receiving, amount - network - receiving)
        }
    };
    Ok(Quote { sending, receiving, source_fee, target_fee, platform_fee, platform_pct: pct, total_fee: sending - receiving })
}

/// The fee_breakdown member naming what opening the recipient's token
/// account added to `target_chain_fee`; the payout reads it back.
pub const RECIPIENT_ACCOUNT_FEE: &str = "recipient_account_fee";

/// A decimal as the API shows it: no exponent, no trailing zeros.
pub fn show(d: Decimal) -> String {
    d.normalize().to_string()
}
