//! What differs between x402 schemes, as one table: the rest of the host
//! asks `scheme::rules()` instead of testing which scheme it has. A new
//! scheme is a row here, an adapter and its config.

use super::reason::Reason;
use crate::config::X402Scheme;

pub struct Rules {
    /// May the requirements' amount be zero?
    pub zero_amount: bool,
    /// Does an amount of zero move nothing? (An `upto` charge of nothing is
    /// verified and answered without a transaction; a batch-settlement
    /// claim, sweep or refund names no price and still moves money.)
    pub zero_moves_nothing: bool,
    /// May its settlement share a batch with other calls, and with which?
    pub batching: Batching,
    /// Does a settle answer report the amount charged?
    pub reports_amount: bool,
    /// Does `/supported` name the facilitator's address in `extra` (the
    /// only caller its proxy accepts)?
    pub names_facilitator: bool,
    /// Does x402 v1 have it (so `/supported` lists v1 kinds of it)?
    pub in_v1: bool,
    /// The refusal when no served asset takes the requirements in it.
    pub unmatched: Reason,
    /// Do its answers carry the adapter's `extra` (`answer-extra`)?
    pub answers_extra: bool,
    /// May keyless callers use it (`[facilitator] public`)?
    pub keyless: bool,
    /// The refusal of a `/settle` whose verified amount is zero, where zero
    /// means there is nothing to send (a batch-settlement voucher): refused
    /// before anything is recorded.
    pub zero_settles: Option<Reason>,
    /// Does a settle answer report what its credited movement says (the
    /// chain's amount, from the step's own event) rather than what verify
    /// foresaw? A batch-settlement sweep or refund may move other than
    /// verify read (a claim or a withdrawal landing between).
    pub amount_from_books: bool,
}

/// Whether a scheme's settlement calls share relayer batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batching {
    /// Sent alone (the `upto` proxy checks its caller).
    Alone,
    /// With other payments' transfers, each proved by its own
    /// authorization's use.
    Transfers,
    /// With the scheme's other steps that touch none of its channels
    /// (`settle::batch_share`, from the payload).
    Channels,
}

static EXACT: Rules = Rules {
    zero_amount: false,
    zero_moves_nothing: false,
    batching: Batching::Transfers,
    reports_amount: false,
    names_facilitator: false,
    in_v1: true,
    unmatched: Reason::InvalidPaymentRequirements,
    answers_extra: false,
    keyless: true,
    zero_settles: None,
    amount_from_books: false,
};

static UPTO: Rules = Rules {
    zero_amount: true,
    zero_moves_nothing: true,
    batching: Batching::Alone,
    reports_amount: true,
    names_facilitator: true,
    in_v1: false,
    unmatched: Reason::UnsupportedScheme,
    answers_extra: false,
    keyless: true,
    zero_settles: None,
    amount_from_books: false,
};

/// The channel manager's requirements name no price (`amount` 0). Steps
/// of several callers share a batch only when they touch different
/// channels: in a shared batch a call may fail while another's event of
/// the same channel lands, and the books must see only its own. Served to facilitator keys only: its claims, sweeps and refunds are a
/// resource server's operations, and their gas is not keyless budget's.
static BATCH_SETTLEMENT: Rules = Rules {
    zero_amount: true,
    zero_moves_nothing: false,
    batching: Batching::Channels,
    reports_amount: true,
    names_facilitator: false,
    in_v1: false,
    unmatched: Reason::UnsupportedScheme,
    answers_extra: true,
    keyless: false,
    zero_settles: Some(Reason::Batch(batch_wire::payload::Fault::PayloadType)),
    amount_from_books: true,
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
        X402Scheme::BatchSettlement => &BATCH_SETTLEMENT,
    }
}
