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
    let (from, to) = swaps.pair(&from_chain, Some(&to_chain))?;
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

/// A digest of what a registration says, each address in its family's
/// stored form (EVM hex in lower case; Solana and TRON as they are): the
/// same details are the same intent.
fn details(i: &SwapIntent, from: crate::config::Family, to: crate::config::Family) -> String {
    use sha2::Digest;
    let (f, t) = (from.facts(), to.facts());
    let text = [
        i.to_chain.clone(),
        f.canonical(&i.from_token),
        t.canonical(&i.to_token),
        f.canonical(&i.payer_address),
        t.canonical(&i.recipient_address),
        i.sending_token_amount.clone(),
    ]
    .join("|");
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// Do two registrations say the same (addresses compared as their
/// families compare them)?
fn same(a: &SwapIntent, b: &SwapIntent, from: crate::config::Family, to: crate::config::Family) -> bool {
    let (f, t) = (from.facts(), to.facts());
    a.to_chain == b.to_chain
        && f.same_address(&a.from_token, &b.from_token)
        && t.same_address(&a.to_token, &b.to_token)
        && f.same_address(&a.payer_address, &b.payer_address)
        && t.same_address(&a.recipient_address, &b.recipient_address)
        && a.sending_token_amount == b.sending_token_amount
}

/// What the source chain shows of a registered transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Not on chain yet (or not readable): the tracker checks it later.
    NotYet,
    /// On chain and as registered, as far as the family can read it.
    Matches,
}

/// Check a registration against its source chain: the transaction's
/// sender must be the payer named, and once it is mined, the payer must
/// have sent the amount of the input token and (same chain) the recipient
/// received the output token. A registration that says otherwise is
/// refused and stored nowhere, so it blocks nobody's.
pub async fn check_on_chain(drivers: &crate::family::Drivers, config: &crate::config::Config, i: &SwapIntent) -> Result<Seen, SwapError> {
    let Some(driver) = drivers.for_chain(&i.from_chain) else { return Ok(Seen::NotYet) };
    let sender = driver.sender_of(&i.from_chain, &i.source_tx_hash).await.unwrap_or_else(|e| {
        tracing::warn!(chain = %i.from_chain, error = %e, "swap registration: could not look the transaction up");
        None
    });
    let Some(sender) = sender else { return Ok(Seen::NotYet) };
    if !driver.family().facts().same_address(&sender, &i.payer_address) {
        return Err(SwapError::NotTheSender);
    }
    let confirmations = config.chains.get(&i.from_chain).map_or(1, |c| c.confirmations.max(1));
    match driver.finality(&i.from_chain, &i.source_tx_hash, confirmations).await {
        Ok(crate::family::Finality::Confirmed(receipt)) => match mismatch(driver.as_ref(), &receipt, i) {
            true => Err(SwapError::RegistrationMismatch),
            false => Ok(Seen::Matches),
        },
        _ => Ok(Seen::NotYet),
    }
}

/// Does this registration spend the client's budget of registrations the
/// chain cannot judge yet (not mined, or a destination on another chain)?
pub fn budgeted(seen: Seen, i: &SwapIntent) -> bool {
    seen == Seen::NotYet || i.from_chain != i.to_chain
}

/// Does a confirmed source receipt contradict the registration? Only
/// what the family can read is judged (an EVM token's Transfer logs).
pub fn mismatch(driver: &dyn crate::family::Driver, receipt: &crate::family::Receipt, i: &SwapIntent) -> bool {
    if let Some(sent) = driver.debited(receipt, &i.from_token, &i.payer_address) {
        if sent.to_string() != i.sending_token_amount {
            return true;
        }
    }
    if i.from_chain == i.to_chain {
        if let Some(received) = driver.credited(receipt, &i.to_token, &i.recipient_address) {
            if received.is_zero() {
                return true;
            }
        }
    }
    false
}

/// Store a parsed, checked registration, or find the same one stored
/// before (with its details, or before registrations kept them).
pub async fn store(db: &Db, config: &crate::config::Config, new: &SwapIntent) -> Result<SwapIntent, SwapError> {
    let family = |c: &str| config.chains.get(c).map(|c| c.family).ok_or_else(|| SwapError::UnsupportedChain(c.to_string()));
    let (from, to) = (family(&new.from_chain)?, family(&new.to_chain)?);
    if let Some(old) = crate::store::swaps::legacy(db, &new.from_chain, &new.source_tx_hash).await? {
        if same(&old, new, from, to) {
            return Ok(old);
        }
    }
    Ok(crate::store::transition::swaps::register(db, new, &details(new, from, to)).await?)
}
