//! JSON shapes the API answers with. Each is a type, so the OpenAPI
//! document is generated from the same definitions the handlers serialize.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{Intent, Status};
use crate::clock::rfc3339;
use crate::config::Config;

/// An intent as `GET` shows it (and, without `created_at`, as create
/// answers it). Optional fields are absent, not null, when they do not apply.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntentView {
    #[schema(example = "01JD3Q5W8Z6X2V4T7R9P1M3K5H")]
    pub intent_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[schema(example = "AWAITING_PAYMENT")]
    pub status: &'static str,
    #[schema(example = "base")]
    pub payer_chain: String,
    #[schema(example = "arbitrum")]
    pub target_chain: String,
    #[schema(example = "usdc")]
    pub payer_asset: String,
    #[schema(example = "usdc")]
    pub target_asset: String,
    pub merchant_recipient: String,
    /// Decimal string, in whole tokens.
    #[schema(example = "10.03")]
    pub sending_amount: String,
    #[schema(example = "10")]
    pub receiving_amount: String,
    #[schema(example = "0.03")]
    pub estimated_fee: String,
    #[schema(value_type = Object)]
    pub fee_breakdown: Value,
    /// RFC 3339, UTC.
    pub expires_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// x402 `PaymentRequirements`; present while the intent awaits payment.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub payment_requirements: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_payment: Option<SourcePayment>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_payment: Option<TargetPayment>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Stable machine-readable reason beside `error_message`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "agent_wallet_short")]
    pub error_code: Option<&'static str>,
    /// Create answer: the email the intent pays, when created for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Create answer: the address on the payer chain the payer pays
    /// (the requirements' `payTo`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_recipient: Option<String>,
    /// Read: the email the intent pays, when created for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver_email: Option<String>,
    /// Read: the wallet that paid, once its proof was accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer_wallet: Option<String>,
    /// Read: when the merchant was paid (`TARGET_SETTLED`), RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SourcePayment {
    pub chain: String,
    pub tx_hash: String,
    pub settle_proof: Option<String>,
    pub settled_at: Option<String>,
    pub explorer_url: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TargetPayment {
    pub tx_hash: String,
    pub settle_proof: Option<String>,
    pub settled_at: Option<String>,
    pub explorer_url: Option<String>,
}

/// One row of `GET /v2/intents/list`.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntentRow {
    pub intent_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub merchant_recipient: String,
    pub sending_amount: String,
    pub receiving_amount: String,
    pub estimated_fee: String,
    pub payer_chain: String,
    pub target_chain: String,
    pub status: &'static str,
    pub created_at: String,
    pub expires_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IntentList {
    pub intents: Vec<IntentRow>,
    pub total: i64,
    pub page: i64,
    pub page_size: i64,
}

/// Answer to a proof submission or an execute.
#[derive(Debug, Serialize, ToSchema)]
pub struct Accepted {
    pub intent_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[schema(example = "PENDING")]
    pub status: &'static str,
    pub message: &'static str,
    pub sending_amount: String,
    pub receiving_amount: String,
    pub estimated_fee: String,
}

impl Accepted {
    pub fn new(i: &Intent, status: Status, message: &'static str) -> Accepted {
        Accepted {
            intent_id: i.id.clone(),
            agent_id: i.agent_id.clone(),
            status: status.as_str(),
            message,
            sending_amount: i.sending_amount.clone(),
            receiving_amount: i.receiving_amount.clone(),
            estimated_fee: i.estimated_fee.clone(),
        }
    }
}

/// The requirements with `maxTimeoutSeconds` = seconds left to pay.
fn requirements(i: &Intent, now_ms: i64) -> Value {
    let mut r = serde_json::to_value(&i.payment_requirements).expect("requirements serialize");
    if let Some(o) = r.as_object_mut() {
        o.insert("maxTimeoutSeconds".into(), (((i.expires_at - now_ms).max(0) + 999) / 1000).into());
    }
    r
}

/// Fields every intent body shares.
fn base(i: &Intent, now_ms: i64) -> IntentView {
    IntentView {
        intent_id: i.id.clone(),
        agent_id: i.agent_id.clone(),
        status: i.effective_status(now_ms).as_str(),
        payer_chain: i.payer_chain.clone(),
        target_chain: i.target_chain.clone(),
        payer_asset: i.payer_asset.clone(),
        target_asset: i.target_asset.clone(),
        merchant_recipient: shown_recipient(i),
        sending_amount: i.sending_amount.clone(),
        receiving_amount: i.receiving_amount.clone(),
        estimated_fee: i.estimated_fee.clone(),
        fee_breakdown: serde_json::from_str(&i.fee_breakdown).unwrap_or(Value::Null),
        expires_at: rfc3339(i.expires_at),
        created_at: None,
        payment_requirements: None,
        source_payment: None,
        target_payment: None,
        error_message: None,
        error_code: None,
        email: None,
        source_recipient: None,
        receiver_email: None,
        payer_wallet: None,
        completed_at: None,
    }
}

/// Whom an intent pays, as any answer shows it: for an intent created for
/// an email, the email and never the wallet it resolved to (the email's
/// owner chose that wallet on the dashboard; an agent paying it has no need
/// to learn it).
fn shown_recipient(i: &Intent) -> String {
    i.recipient_email.clone().unwrap_or_else(|| i.merchant_recipient.clone())
}

/// What a public answer may show of an intent: not who owns it (SPEC).
pub fn public(mut v: IntentView) -> IntentView {
    v.agent_id = None;
    v
}

/// Create response (201).
pub fn created(i: &Intent, now_ms: i64) -> IntentView {
    IntentView {
        payment_requirements: Some(requirements(i, now_ms)),
        email: i.recipient_email.clone(),
        source_recipient: Some(i.payment_requirements.pay_to.clone()),
        ..base(i, now_ms)
    }
}

/// Read form (GET intent).
pub fn intent(cfg: &Config, i: &Intent, now_ms: i64) -> IntentView {
    let status = i.effective_status(now_ms);
    IntentView {
        created_at: Some(rfc3339(i.created_at)),
        payment_requirements: (status == Status::AwaitingPayment).then(|| requirements(i, now_ms)),
        source_payment: i.source_tx_hash.as_ref().map(|tx| SourcePayment {
            chain: i.payer_chain.clone(),
            tx_hash: tx.clone(),
            settle_proof: i.settle_proof.clone(),
            settled_at: i.source_settled_at.map(rfc3339),
            explorer_url: cfg.explorer_tx_url(&i.payer_chain, tx),
        }),
        target_payment: match (&i.target_tx_hash, status) {
            (Some(tx), Status::TargetSettled) => Some(TargetPayment {
                tx_hash: tx.clone(),
                settle_proof: i.target_settle_proof.clone(),
                settled_at: i.target_settled_at.map(rfc3339),
                explorer_url: cfg.explorer_tx_url(&i.target_chain, tx),
            }),
            _ => None,
        },
        error_message: i.error_message.clone(),
        error_code: i.error_code.map(|c| c.code()),
        receiver_email: i.recipient_email.clone(),
        payer_wallet: i.payer.clone(),
        completed_at: if status == Status::TargetSettled { i.target_settled_at.map(rfc3339) } else { None },
        ..base(i, now_ms)
    }
}

/// ListIntents row.
pub fn row(i: &Intent, now_ms: i64) -> IntentRow {
    IntentRow {
        intent_id: i.id.clone(),
        agent_id: i.agent_id.clone(),
        merchant_recipient: shown_recipient(i),
        sending_amount: i.sending_amount.clone(),
        receiving_amount: i.receiving_amount.clone(),
        estimated_fee: i.estimated_fee.clone(),
        payer_chain: i.payer_chain.clone(),
        target_chain: i.target_chain.clone(),
        status: i.effective_status(now_ms).as_str(),
        created_at: rfc3339(i.created_at),
        expires_at: rfc3339(i.expires_at),
    }
}
