//! `[facilitator]`: who may use `/x402` and how long `/settle` waits.

use super::*;

/// `[facilitator]`: who may use `/x402` and how long `/settle` waits.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Facilitator {
    /// Serve `/x402` at all.
    pub enabled: bool,
    /// Without a facilitator key, anyone may verify and settle (spending the
    /// relayer's gas): then the limits below apply to keyless callers.
    pub public: bool,
    /// Keyless `/x402/verify` and `/x402/settle` requests per minute per IP.
    pub public_requests_per_minute: u32,
    /// Keyless `/x402/settle` settlements per minute per payer, and per payTo.
    pub public_settlements_per_minute: u32,
    /// Relayer gas keyless settlements may spend per hour, per payer and
    /// per payTo on each chain (each settlement counts the most it can
    /// cost: a contract payer its chain's `contract_payer_gas_cap` more).
    pub public_gas_per_hour: u64,
    /// Relayer gas all keyless settlements together may spend per hour on
    /// each chain (fresh payers and shops do not buy more of it).
    pub public_chain_gas_per_hour: u64,
    /// Smallest keyless settlement, in the asset's units ("0.01").
    pub public_min_amount: String,
    /// When not empty, keyless settlements may pay only these addresses.
    pub public_pay_to: Vec<String>,
    /// How long `/settle` waits for the transfer to be final before it
    /// answers `settlement_pending` with the broadcast transaction.
    pub settle_wait_seconds: u64,
    /// How long a repeated `/settle` of a pending payload waits.
    pub settle_retry_wait_seconds: u64,
    /// Settlements this replica works on at once. A settlement gives its
    /// worker back while it waits for its batch or its block, so this
    /// bounds work, not settlements in flight; past this many at work, a
    /// `/settle` queues for a free worker.
    pub workers: usize,
    /// Sign claims and refunds for resource servers that delegate the
    /// `batch-settlement` receiver authorizer to this facilitator, with a
    /// key of its own (`authorizer:evm`, made by `keys init`, never a
    /// wallet that holds or sends money), advertised in `/supported`. Only
    /// for channels whose receiver the calling facilitator key was created
    /// for (`facilitator create-key --receiver`).
    pub receiver_authorizer: bool,
}

impl Default for Facilitator {
    fn default() -> Self {
        Facilitator {
            enabled: true,
            public: false,
            public_requests_per_minute: 120,
            public_settlements_per_minute: 60,
            public_gas_per_hour: 10_000_000,
            public_chain_gas_per_hour: 100_000_000,
            public_min_amount: "0.001".into(),
            public_pay_to: vec![],
            settle_wait_seconds: 20,
            settle_retry_wait_seconds: 60,
            workers: 256,
            receiver_authorizer: false,
        }
    }
}
