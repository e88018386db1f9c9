//! `POST /api/swap/intents`: register a broadcast swap as an intent the
//! tracker follows. Idempotent on (source chain, transaction) for the same
//! details; the same transaction with other details is refused (409), so
//! whoever registers first cannot rewrite what another registrant sees.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{SwapError, Swaps};
use crate::db::Db;
use crate::store::swaps::SwapIntent;

/// The body's fields, in the order they are checked.
const FIELDS: [&str; 8] =
    ["source_tx_hash", "from_chain", "to_chain", "from_token", "to_token", "payer_address", "recipient_address", "sending_token_amount"];

/// A registered swap as `GET …/intents/{id}` shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SwapIntentView {
    pub intent_id: String,
    /// Always `swap`.
    pub kind: &'static str,
    /// PENDING, DONE, FAILED (the source transaction reverted or never
    /// confirmed, or the route failed) or CANCELED (the job was dropped).
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub substatus: Option<String>,
    pub from_chain: String,
    pub to_chain: String,
    pub source_tx_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dest_tx_hash: Option<String>,
    pub from_token: String,
    pub to_token: String,
    pub payer_address: String,
    pub recipient_address: String,
    /// Smallest units, decimal string.
    pub sending_token_amount: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_amount: Option<String>,
    /// Why it failed or was canceled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl SwapIntentView {
    pub fn of(i: SwapIntent) -> SwapIntentView {
        SwapIntentView {
            intent_id: i.id,
            kind: "swap",
            status: i.status,
            substatus: i.substatus,
            from_chain: i.from_chain,
            to_chain: i.to_chain,
            source_tx_hash: i.source_tx_hash,
            dest_tx_hash: i.dest_tx_hash,
            from_token: i.from_token,
            to_token: i.to_token,
            payer_address: i.payer_address,
            recipient_address: i.recipient_address,
            sending_token_amount: i.sending_token_amount,
            received_amount: i.received_amount,
            error_code: i.error_code,
            created_at: crate::clock::rfc3339(i.created_at),
            updated_at: crate::clock::rfc3339(i.updated_at),
        }
    }
}

/// The registration `body` asks for, checked (nothing stored yet).
pub fn parse(swaps: &Swaps, body: &Value, now: i64) -> Result<SwapIntent, SwapError> {
    let mut f = Vec::with_capacity(FIELDS.len());
    for name in FIELDS {
        match body.get(name).and_then(Value::as_str).map(str::trim) {
            Some(v) if !v.is_empty() => f.push(v.to_string()),
            Some(_) | None if body.get(name).is_none_or(Value::is_string) => return Err(SwapError::FieldRequired(name)),
            _ => return Err(SwapError::Invalid(name)),
        }
    }
    let [hash, from_chain, to_chain, from_token, to_token, payer, recipient, sent] = <[String; 8]>::try_from(f).expect("eight fields");
    let (from, to) = (swaps.chain(&from_chain)?, swaps.chain(&to_chain)?);
    for (ok, name) in [
        (from.family.facts().is_tx_id(&hash), "source_tx_hash"),
        (from.family.facts().is_address(&from_token), "from_token"),
        (to.family.facts().is_address(&to_token), "to_token"),
        (from.family.facts().is_address(&payer), "payer_address"),
        (to.family.facts().is_address(&recipient), "recipient_address"),
    ] {
        if !ok {
            return Err(SwapError::Invalid(name));
        }
    }
    if sent.parse::<u128>().map_or(true, |a| a == 0) || !sent.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SwapError::InvalidAmount);
    }
    let new = SwapIntent {
        id: format!("swp_{}", ulid::Ulid::new()),
        from_chain,
        to_chain,
        // EVM hashes compare in lower case; the others are case-sensitive.
        source_tx_hash: from.family.facts().canonical(&hash),
        from_token,
        to_token,
        payer_address: payer,
        recipient_address: recipient,
        sending_token_amount: sent,
        status: "PENDING".into(),
        substatus: None,
        dest_tx_hash: None,
        received_amount: None,
        error_code: None,
        created_at: now,
        updated_at: now,
    };
    Ok(new)
}

/// Store a parsed registration, or find the same one stored before.
pub async fn store(db: &Db, new: &SwapIntent) -> Result<SwapIntent, SwapError> {
    let stored = crate::store::transition::swaps::register(db, new).await?;
    // Addresses as written may differ in case (EVM checksums).
    let eq = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let same = stored.to_chain == new.to_chain
        && eq(&stored.from_token, &new.from_token)
        && eq(&stored.to_token, &new.to_token)
        && eq(&stored.payer_address, &new.payer_address)
        && eq(&stored.recipient_address, &new.recipient_address)
        && stored.sending_token_amount == new.sending_token_amount;
    if !same {
        return Err(SwapError::AlreadyRegistered);
    }
    Ok(stored)
}
