//! What a delivery says: the event's type, and its body (the owner's view
//! of the subject, with the event's status).

use serde_json::{json, Value};

use crate::intent::Status;
use crate::store::facilitator::SettlementStatus;

/// Every event type an endpoint may ask for.
pub const TYPES: [&str; 15] = [
    "intent.awaiting_payment",
    "intent.pending",
    "intent.source_settled",
    "intent.target_settling",
    "intent.target_settled",
    "intent.partial_settlement",
    "intent.verification_failed",
    "intent.blocked",
    "intent.expired",
    "swap.done",
    "swap.failed",
    "swap.canceled",
    "x402.settlement.pending",
    "x402.settlement.succeeded",
    "x402.settlement.failed",
];

/// An event's type from its subject and status; `None` for changes that
/// are not announced.
pub fn type_of(subject_kind: &str, status: &str) -> Option<String> {
    match subject_kind {
        "intent" => Status::parse(status).map(|s| format!("intent.{}", s.as_str().to_ascii_lowercase())),
        // A registered swap's first status (PENDING) is not announced.
        "swap" => matches!(status, "DONE" | "FAILED" | "CANCELED").then(|| format!("swap.{}", status.to_ascii_lowercase())),
        "x402_settlement" => match SettlementStatus::parse(status).ok()? {
            SettlementStatus::Queued => Some("x402.settlement.pending".into()),
            SettlementStatus::Settled => Some("x402.settlement.succeeded".into()),
            SettlementStatus::Failed => Some("x402.settlement.failed".into()),
        },
        _ => None,
    }
}

/// Does an endpoint subscribed to `events` want `kind`?
pub fn wanted(events: &[String], kind: &str) -> bool {
    events.iter().any(|e| e == "*" || e == kind)
}

/// The body every attempt of a delivery sends.
pub fn body(id: &str, kind: &str, created_at: i64, version: i64, data: Value) -> String {
    json!({
        "id": id,
        "type": kind,
        "created_at": crate::clock::rfc3339(created_at),
        "version": version,
        "data": data,
    })
    .to_string()
}
