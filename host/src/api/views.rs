//! JSON shapes of intents as the API shows them.

use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::intent::{rfc3339, Intent, Status};

fn put(m: &mut Map<String, Value>, k: &str, v: impl Into<Value>) {
    m.insert(k.into(), v.into());
}

fn put_opt(m: &mut Map<String, Value>, k: &str, v: &Option<String>) {
    if let Some(v) = v {
        put(m, k, v.clone());
    }
}

fn explorer(cfg: &Config, chain: &str, tx: &str) -> Value {
    match cfg.chains.get(chain) {
        Some(c) if !c.explorer_tx_url.is_empty() => c.explorer_tx_url.replace("{tx}", tx).into(),
        _ => Value::Null,
    }
}

fn fee_breakdown(i: &Intent) -> Value {
    serde_json::from_str(&i.fee_breakdown).unwrap_or(Value::Null)
}

/// The requirements with `maxTimeoutSeconds` = seconds left to pay.
fn requirements(i: &Intent, now_ms: i64) -> Value {
    let mut r: Value = serde_json::from_str(&i.payment_requirements).unwrap_or(Value::Null);
    if let Some(o) = r.as_object_mut() {
        o.insert("maxTimeoutSeconds".into(), (((i.expires_at - now_ms).max(0) + 999) / 1000).into());
    }
    r
}

/// Fields every intent body shares.
fn base(i: &Intent, now_ms: i64) -> Map<String, Value> {
    let mut m = Map::new();
    put(&mut m, "intent_id", i.id.clone());
    put_opt(&mut m, "agent_id", &i.agent_id);
    put(&mut m, "status", i.effective_status(now_ms).as_str());
    put(&mut m, "payer_chain", i.payer_chain.clone());
    put(&mut m, "target_chain", i.target_chain.clone());
    put(&mut m, "payer_asset", i.payer_asset.clone());
    put(&mut m, "target_asset", i.target_asset.clone());
    put(&mut m, "merchant_recipient", i.merchant_recipient.clone());
    put(&mut m, "sending_amount", i.sending_amount.clone());
    put(&mut m, "receiving_amount", i.receiving_amount.clone());
    put(&mut m, "estimated_fee", i.estimated_fee.clone());
    put(&mut m, "fee_breakdown", fee_breakdown(i));
    put(&mut m, "expires_at", rfc3339(i.expires_at));
    m
}

/// Create response (201).
pub fn created(i: &Intent, now_ms: i64) -> Value {
    let mut m = base(i, now_ms);
    put(&mut m, "payment_requirements", requirements(i, now_ms));
    Value::Object(m)
}

/// Read form (GET intent).
pub fn intent(cfg: &Config, i: &Intent, now_ms: i64) -> Value {
    let status = i.effective_status(now_ms);
    let mut m = base(i, now_ms);
    put(&mut m, "created_at", rfc3339(i.created_at));
    if status == Status::AwaitingPayment {
        put(&mut m, "payment_requirements", requirements(i, now_ms));
    }
    if let Some(tx) = &i.source_tx_hash {
        put(&mut m, "source_payment", json!({
            "chain": i.payer_chain,
            "tx_hash": tx,
            "settle_proof": i.settle_proof,
            "settled_at": i.source_settled_at.map(rfc3339),
            "explorer_url": explorer(cfg, &i.payer_chain, tx),
        }));
    }
    if status == Status::TargetSettled {
        if let Some(tx) = &i.target_tx_hash {
            put(&mut m, "target_payment", json!({
                "tx_hash": tx,
                "settle_proof": i.target_settle_proof,
                "settled_at": i.target_settled_at.map(rfc3339),
                "explorer_url": explorer(cfg, &i.target_chain, tx),
            }));
        }
    }
    put_opt(&mut m, "error_message", &i.error_message);
    if let Some(code) = i.error_code {
        put(&mut m, "error_code", code.code());
    }
    Value::Object(m)
}

/// ListIntents row.
pub fn row(i: &Intent, now_ms: i64) -> Value {
    let mut m = Map::new();
    put(&mut m, "intent_id", i.id.clone());
    put_opt(&mut m, "agent_id", &i.agent_id);
    put(&mut m, "merchant_recipient", i.merchant_recipient.clone());
    put(&mut m, "sending_amount", i.sending_amount.clone());
    put(&mut m, "receiving_amount", i.receiving_amount.clone());
    put(&mut m, "estimated_fee", i.estimated_fee.clone());
    put(&mut m, "payer_chain", i.payer_chain.clone());
    put(&mut m, "target_chain", i.target_chain.clone());
    put(&mut m, "status", i.effective_status(now_ms).as_str());
    put(&mut m, "created_at", rfc3339(i.created_at));
    put(&mut m, "expires_at", rfc3339(i.expires_at));
    Value::Object(m)
}
