//! What differs between x402 schemes, as one table: the rest of the host
//! asks `scheme::rules()` instead of testing which scheme it has. A new
//! scheme is a row here, an adapter and its config.

use super::reason::Reason;
use crate::config::X402Scheme;

pub struct Rules {
    /// May the requirements' amount be zero? (An `upto` charge of nothing is
    /// verified and answered without a transaction.)
    pub zero_amount: bool,
    /// May its settlement share a batch with other calls? If not, the
    /// relayer sends it alone (the `upto` proxy checks its caller).
    pub batchable: bool,
    /// Does a settle answer report the amount charged?
    pub reports_amount: bool,
    /// Does `/supported` name the facilitator's address in `extra` (the
    /// only caller its proxy accepts)?
    pub names_facilitator: bool,
    /// Does x402 v1 have it (so `/supported` lists v1 kinds of it)?
    pub in_v1: bool,
    /// The refusal when no served asset takes the requirements in it.
    pub unmatched: Reason,
}

static EXACT: Rules = Rules {
    zero_amount: false,
    batchable: true,
    reports_amount: false,
    names_facilitator: false,
    in_v1: true,
    unmatched: Reason::InvalidPaymentRequirements,
};

static UPTO: Rules = Rules {
    zero_amount: true,
    batchable: false,
    reports_amount: true,
    names_facilitator: true,
    in_v1: false,
    unmatched: Reason::UnsupportedScheme,
};

/// The rules of the scheme called `name` on the wire, if it is one.
pub fn named(name: &str) -> Option<&'static Rules> {
    X402Scheme::parse(name).map(rules)
}

/// The scheme's rules.
pub fn rules(scheme: X402Scheme) -> &'static Rules {
    match scheme {
        X402Scheme::Exact => &EXACT,
        X402Scheme::Upto => &UPTO,
    }
}
