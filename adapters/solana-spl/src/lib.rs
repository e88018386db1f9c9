//! stablerail's Solana adapter: x402 `exact` payments in SPL tokens (the
//! Token and Token-2022 programs), built against `stablerail:adapter@0.3.0`.
//!
//! - Source leg: the payer sends a v0 transaction it has signed, with the
//!   host's relayer as fee payer and that signature slot empty; `verify`
//!   checks it offline against every rule of the exact-SVM scheme, `settle`
//!   hands it to the host to co-sign and send.
//! - Host-held wallets (the proxy paying a merchant, an agent paying the
//!   collection wallet): `authorize` builds the same shape of transaction
//!   (creating the recipient's token account when it has none), the host
//!   signs its message, and `assemble` turns it into a proof `verify` takes.

wit_bindgen::generate!({
    world: "stablerail:adapter/adapter@0.3.0",
    path: "../../wit/0.3.0",
    generate_all,
});

mod accounts;
mod build;
mod chain;
mod payer_tx;
mod receipt;
mod units;

use base64::Engine as _;
use exports::stablerail::adapter0_3_0::scheme::Guest;
use stablerail::adapter0_1_0::types::*;
use stablerail::adapter0_3_0::types::AssetContext;

use accounts::{Key, Parse};

/// x402's scheme name.
const SCHEME: &str = "exact";
/// chains.toml key (set by the host from the chain's
/// `max_priority_fee_microlamports`): the priority-fee cap, micro-lamports.
const MAX_PRIORITY_FEE_KEY: &str = "max-priority-fee-microlamports";

struct SolanaSpl;

impl Guest for SolanaSpl {
    fn describe() -> Description {
        Description {
            name: "solana-spl".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            serves: vec![SchemeRef { family: Family::Solana, scheme: "solana-spl".into() }],
            config_keys: vec![build::PRICE_KEY.into(), MAX_PRIORITY_FEE_KEY.into()],
        }
    }

    fn normalize_address(family: Family, address: String) -> Result<String, AdapterError> {
        if family != Family::Solana {
            return Err(AdapterError::Unsupported("solana-spl handles Solana addresses only".into()));
        }
        Key::parse(&address).map(|k| k.to_string()).ok_or(AdapterError::InvalidAddress(address))
    }

    fn to_base_units(amount: String, decimals: u8) -> Result<String, AdapterError> {
        let digits = x402_wire::base_units(&amount, decimals).map_err(AdapterError::InvalidAmount)?;
        units::parse(&digits).map(|u| u.to_string()).map_err(AdapterError::InvalidAmount)
    }

    fn requirements(ctx: AssetContext, terms: Terms) -> Result<PaymentRequirements, AdapterError> {
        let mint = mint(&ctx)?;
        let pay_to = Key::parse(&terms.pay_to).ok_or_else(|| AdapterError::InvalidAddress(terms.pay_to.clone()))?;
        units::parse(&terms.amount).map_err(AdapterError::InvalidAmount)?;
        let fee_payer = relayer(&ctx)?;
        // `asset` and `amount` in `extra` too, as on every family: callers read them there.
        let extra = serde_json::json!({
            "feePayer": fee_payer.to_string(),
            "decimals": ctx.decimals,
            "asset": mint.to_string(),
            "amount": terms.amount,
        });
        Ok(PaymentRequirements {
            scheme: SCHEME.into(),
            network: ctx.network.clone(),
            amount: terms.amount,
            asset: mint.to_string(),
            pay_to: pay_to.to_string(),
            max_timeout_seconds: terms.max_timeout_seconds,
            extra: extra.to_string(),
        })
    }

    fn verify(ctx: AssetContext, requirements: PaymentRequirements, proof: String) -> Result<VerifiedPayment, ProofError> {
        let tx = payer_tx::decode_proof(&proof, &requirements)?;
        let checked = payer_tx::check(&tx, &expectations(&ctx, &requirements)?, ed25519_verify)?;
        let now = stablerail::adapter0_1_0::clock::now();
        Ok(VerifiedPayment {
            payer: checked.payer.to_string(),
            pay_to: requirements.pay_to.clone(),
            amount: checked.amount.to_string(),
            // A Solana transaction lives as long as its blockhash (150
            // blocks, about a minute), not by the clock: an estimate.
            valid_after: now,
            valid_before: now + payer_tx::BLOCKHASH_LIFETIME_SECS,
            replay_key: checked.replay_key,
        })
    }

    fn preflight(ctx: AssetContext, payment: VerifiedPayment) -> Result<(), ProofError> {
        // `verify` pinned the source to the payer's associated account.
        let mint = mint(&ctx).map_err(|e| ProofError::Unsupported(format!("{e:?}")))?;
        let payer = Key::parse(&payment.payer).ok_or_else(|| ProofError::Malformed("payer is not a Solana address".into()))?;
        let program = chain::token_program(&mint)?;
        let source = accounts::ata(&payer, &mint, &program);
        let amount = units::parse(&payment.amount).map_err(ProofError::Malformed)?;
        match chain::token_balance(&source)? {
            Some(held) if held >= amount => Ok(()),
            Some(held) => Err(ProofError::InsufficientFunds(format!("the payer's token account holds {held}, the payment is {amount}"))),
            None => Err(ProofError::InsufficientFunds("the payer has no token account for this asset".into())),
        }
    }

    fn settle(ctx: AssetContext, requirements: PaymentRequirements, proof: String) -> Result<Vec<SettleStep>, ProofError> {
        let tx = payer_tx::decode_proof(&proof, &requirements)?;
        let checked = payer_tx::check(&tx, &expectations(&ctx, &requirements)?, ed25519_verify)?;
        // Signed against a blockhash that is gone, it can never land.
        if !chain::blockhash_valid(&checked.blockhash)? {
            return Err(ProofError::Expired);
        }
        Ok(vec![SettleStep {
            label: "settle".into(),
            submission: Submission::SolanaCosign(SolanaCosign { transaction: tx.raw, fee_payer_index: 0 }),
        }])
    }

    fn read_receipt(ctx: AssetContext, payment: VerifiedPayment, receipt: String) -> Result<ReceiptStatus, AdapterError> {
        let mint = mint(&ctx)?;
        let pay_to = Key::parse(&payment.pay_to).ok_or_else(|| AdapterError::InvalidAddress(payment.pay_to.clone()))?;
        let amount = units::parse(&payment.amount).map_err(AdapterError::InvalidAmount)?;
        receipt::read(&receipt, &pay_to, &mint, amount)
    }

    fn authorize(ctx: AssetContext, transfer: Transfer) -> Result<SigningRequest, AdapterError> {
        let plan = build::Plan::new(&ctx, &transfer, relayer(&ctx)?, mint(&ctx)?)?;
        Ok(SigningRequest::SolanaMessage(plan.message()?))
    }

    fn prepare_sender(_ctx: AssetContext, _sender: String, _amount: String) -> Result<Vec<SettleStep>, AdapterError> {
        // No approvals on Solana: the sender's signature is the authority.
        Ok(vec![])
    }

    fn assemble(
        ctx: AssetContext,
        requirements: PaymentRequirements,
        transfer: Transfer,
        request: SigningRequest,
        signature: Vec<u8>,
    ) -> Result<String, AdapterError> {
        let SigningRequest::SolanaMessage(message) = request else {
            return Err(AdapterError::Malformed("solana-spl signs Solana messages only".into()));
        };
        let sender = Key::parse(&transfer.sender).ok_or_else(|| AdapterError::InvalidAddress(transfer.sender.clone()))?;
        let raw = build::signed(&message, &sender, &signature)?;
        let _ = ctx;
        let payload = serde_json::json!({ "transaction": base64::engine::general_purpose::STANDARD.encode(raw) });
        Ok(x402_wire::envelope(&issued(&requirements), requirements.max_timeout_seconds, &requirements.extra, payload))
    }
}

/// The issued requirements a payload's `accepted` must repeat.
fn issued(r: &PaymentRequirements) -> x402_wire::Issued<'_> {
    x402_wire::Issued { scheme: &r.scheme, network: &r.network, amount: &r.amount, asset: &r.asset, pay_to: &r.pay_to }
}

fn refused(r: x402_wire::Refusal) -> ProofError {
    match r {
        x402_wire::Refusal::Malformed(m) => ProofError::Malformed(m),
        x402_wire::Refusal::Unsupported(m) => ProofError::Unsupported(m),
        x402_wire::Refusal::Mismatch(m) => ProofError::RequirementsMismatch(m),
    }
}

/// The host's ed25519 verification.
fn ed25519_verify(key: &[u8], message: &[u8], signature: &[u8]) -> bool {
    stablerail::adapter0_1_0::crypto::ed25519_verify(key, message, signature)
}

/// The configured mint.
fn mint(ctx: &AssetContext) -> Result<Key, AdapterError> {
    Key::parse(&ctx.token).ok_or_else(|| AdapterError::Config(format!("token `{}` is not a Solana mint address", ctx.token)))
}

/// The host's relayer: the fee payer of every transaction this adapter
/// settles.
fn relayer(ctx: &AssetContext) -> Result<Key, AdapterError> {
    let text = ctx.relayer.as_deref().ok_or_else(|| AdapterError::Config("the host named no relayer for this chain".into()))?;
    Key::parse(text).ok_or_else(|| AdapterError::Config(format!("relayer `{text}` is not a Solana address")))
}

/// What a payer's transaction must say, from the requirements the host
/// issued (and, when the host names one, its relayer).
fn expectations(ctx: &AssetContext, req: &PaymentRequirements) -> Result<payer_tx::Expected, ProofError> {
    let bad = |what: &str| ProofError::RequirementsMismatch(format!("requirements carry no valid {what}"));
    let extra: serde_json::Value = serde_json::from_str(&req.extra).map_err(|_| bad("extra"))?;
    let fee_payer = extra.get("feePayer").and_then(|v| v.as_str()).and_then(Key::parse).ok_or_else(|| bad("extra.feePayer"))?;
    if let Some(relayer) = ctx.relayer.as_deref().and_then(Key::parse) {
        if relayer != fee_payer {
            return Err(ProofError::RequirementsMismatch("extra.feePayer is not this service's fee payer".into()));
        }
    }
    Ok(payer_tx::Expected {
        fee_payer,
        mint: Key::parse(&req.asset).ok_or_else(|| bad("asset"))?,
        pay_to: Key::parse(&req.pay_to).ok_or_else(|| bad("payTo"))?,
        amount: units::parse(&req.amount).map_err(|_| bad("amount"))?,
        decimals: ctx.decimals,
        max_priority_fee: priority_cap(ctx)?,
        memo: extra.get("memo").and_then(|v| v.as_str()).filter(|m| !m.is_empty()).map(str::to_string),
    })
}

/// The chain's cap on the priority fee a payer's transaction may set (the
/// host passes the chain's `max_priority_fee_microlamports` as this param).
fn priority_cap(ctx: &AssetContext) -> Result<u128, ProofError> {
    match ctx.params.iter().find(|(k, _)| k == MAX_PRIORITY_FEE_KEY) {
        None => Ok(payer_tx::DEFAULT_MAX_PRIORITY_FEE),
        Some((_, v)) => v.parse().map_err(|_| ProofError::Unsupported(format!("{MAX_PRIORITY_FEE_KEY} `{v}` is not a number"))),
    }
}

export!(SolanaSpl);
