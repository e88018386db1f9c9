//! Payment intents: statuses, the stored record, fee quotes.

pub mod fees;
pub mod requirements;
pub mod views;

use std::fmt;

/// Intent statuses (spec: States and transitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    AwaitingPayment,
    Pending,
    SourceSettled,
    TargetSettling,
    TargetSettled,
    VerificationFailed,
    PartialSettlement,
    Expired,
    Blocked,
}

impl Status {
    pub const ALL: [Status; 9] = [
        Status::AwaitingPayment,
        Status::Pending,
        Status::SourceSettled,
        Status::TargetSettling,
        Status::TargetSettled,
        Status::VerificationFailed,
        Status::PartialSettlement,
        Status::Expired,
        Status::Blocked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::AwaitingPayment => "AWAITING_PAYMENT",
            Status::Pending => "PENDING",
            Status::SourceSettled => "SOURCE_SETTLED",
            Status::TargetSettling => "TARGET_SETTLING",
            Status::TargetSettled => "TARGET_SETTLED",
            Status::VerificationFailed => "VERIFICATION_FAILED",
            Status::PartialSettlement => "PARTIAL_SETTLEMENT",
            Status::Expired => "EXPIRED",
            Status::Blocked => "BLOCKED",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// ExactOut (`amount`: the merchant receives exactly it) or ExactIn
/// (`to_amount`: the payer sends exactly it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmountMode {
    ExactOut,
    ExactIn,
}

impl AmountMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AmountMode::ExactOut => "exact_out",
            AmountMode::ExactIn => "exact_in",
        }
    }
}

/// An intent as stored. Amounts are exact decimal strings; times are Unix ms.
#[derive(Debug, Clone)]
pub struct Intent {
    pub id: String,
    pub agent_id: Option<String>,
    pub status: Status,
    pub payer_chain: String,
    pub target_chain: String,
    pub payer_asset: String,
    pub target_asset: String,
    pub merchant_recipient: String,
    pub recipient_email: Option<String>,
    pub payer_address: Option<String>,
    pub amount_mode: String,
    pub sending_amount: String,
    pub receiving_amount: String,
    pub estimated_fee: String,
    /// JSON object text.
    pub fee_breakdown: String,
    /// What the payer was asked to pay, as the payer adapter made it.
    pub payment_requirements: crate::payment::PaymentRequirements,
    pub settle_proof: Option<String>,
    pub replay_key: Option<String>,
    pub payer: Option<String>,
    pub source_tx_hash: Option<String>,
    pub source_settled_at: Option<i64>,
    pub target_tx_hash: Option<String>,
    pub target_settle_proof: Option<String>,
    pub target_settled_at: Option<i64>,
    pub error_message: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    pub updated_at: i64,
    /// Why it failed or waits; `error_message` is the sentence for it.
    pub error_code: Option<crate::failure::Failure>,
    /// The advisory screen at create found `payer_address` on a sanctions
    /// list. For operators only; settlement screens the real payer again.
    pub payer_listed: bool,
    /// The `traceparent` of the request that made it: its settlement's
    /// spans join that trace. `None` when tracing was off.
    pub trace: Option<String>,
}

impl Intent {
    /// The status a reader sees: an unpaid intent past its expiry is
    /// `EXPIRED` even before the sweeper records it.
    pub fn effective_status(&self, now_ms: i64) -> Status {
        if self.status == Status::AwaitingPayment && now_ms >= self.expires_at {
            Status::Expired
        } else {
            self.status
        }
    }
}

/// Intent lifetime (spec: 10 minutes after creation).
pub const LIFETIME_MS: i64 = 10 * 60 * 1000;

pub fn new_id() -> String {
    format!("int_{}", ulid::Ulid::new())
}
