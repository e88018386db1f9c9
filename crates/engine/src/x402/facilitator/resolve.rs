//! Which served (chain, asset) a request is for: its x402 version, network,
//! scheme and asset matched against what this deployment exposes.

use std::sync::Arc;

use serde_json::Value;

use super::Facilitator;
use crate::adapter::AssetAdapter;
use crate::config::{Availability, Family, X402Scheme};
use crate::payment::PaymentRequirements;
use crate::x402::reason::{Fault, Reason};
use crate::x402::wire::FacilitatorRequest;
use crate::x402::{scheme, v1};

/// A request in v2 terms, remembering how the caller spoke.
pub struct Request {
    /// The network as the caller named it (a v1 name or CAIP-2): answers
    /// name it the same way.
    pub network: String,
    pub payload: Value,
    pub requirements: Value,
}

impl Request {
    /// v2 bodies as they are; v1 bodies rewritten (`x402::v1`).
    pub fn of(body: &FacilitatorRequest) -> Result<Request, (Reason, String)> {
        let network = body.payment_requirements.get("network").and_then(Value::as_str).unwrap_or_default().to_string();
        match body.x402_version {
            2 => Ok(Request { network, payload: body.payment_payload.clone(), requirements: body.payment_requirements.clone() }),
            1 => match v1::upgrade(&body.payment_payload, &body.payment_requirements) {
                Ok((payload, requirements)) => Ok(Request { network, payload, requirements }),
                Err(r) => Err((r, network)),
            },
            _ => Err((Reason::InvalidX402Version, network)),
        }
    }
}

/// The served (chain, asset) a request's requirements name.
pub struct Target {
    pub adapter: Arc<AssetAdapter>,
    pub family: Family,
    pub scheme: X402Scheme,
    pub decimals: u8,
    pub req: PaymentRequirements,
    pub payload: String,
}

impl Target {
    /// Whether a settled payment's success is answered once only: where the
    /// chain cannot refuse a spent payload at verify (a Solana transaction
    /// checks out offline until its blockhash expires), the ledger must.
    pub fn answers_once(&self) -> bool {
        self.family.facts().payload_answers_once
    }

    /// An `upto` charge of nothing: verified, and answered without a transaction.
    pub fn charges_nothing(&self) -> bool {
        scheme::rules(self.scheme).zero_moves_nothing && self.req.amount.trim_start_matches('0').is_empty()
    }

    /// Two addresses of this family are the same (EVM hex ignores case).
    pub fn same_address(&self, a: &str, b: &str) -> bool {
        self.family.facts().same_address(a, b)
    }
}

/// Match the caller's requirements to a served asset: a network this
/// deployment exposes, a token it serves (not withheld) in the x402 scheme
/// asked for. An `upto` amount may be 0 (the resource server charged
/// nothing); an `exact` one may not.
pub fn resolve(s: &Facilitator, r: &Request) -> Result<Target, Reason> {
    let req: PaymentRequirements = serde_json::from_value(r.requirements.clone()).map_err(|_| Reason::InvalidPaymentRequirements)?;
    let cfg = &s.config;
    let (chain_id, chain) = cfg
        .chains
        .iter()
        .find(|(id, c)| c.network().as_deref() == Some(&req.network) && cfg.chain_exposed(c) && s.watch.exposed(id))
        .ok_or(Reason::InvalidNetwork)?;
    let scheme = X402Scheme::parse(&req.scheme).ok_or(Reason::UnsupportedScheme)?;
    let same = |token: &str| chain.family.facts().same_address(token, &req.asset);
    let (key, asset) = chain
        .assets
        .iter()
        .filter(|(k, a)| cfg.availability(a) == Availability::Available && !s.watch.asset_withheld(chain_id, k))
        .filter(|(_, a)| same(&a.token))
        .find(|(_, a)| a.x402_scheme == scheme)
        .ok_or(scheme::rules(scheme).unmatched)?;
    let zero = req.amount.trim_start_matches('0').is_empty();
    if req.amount.is_empty() || !req.amount.bytes().all(|b| b.is_ascii_digit()) || (zero && !scheme::rules(scheme).zero_amount) {
        return Err(Reason::InvalidPaymentRequirements);
    }
    let adapter = s.registry.asset(chain_id, key).ok_or(Reason::InvalidPaymentRequirements)?;
    if chain.family.facts().x402_fee_payer {
        // The fee payer signs last, and only this facilitator's relayer can.
        let extra: Value = serde_json::from_str(&req.extra).unwrap_or(Value::Null);
        let fee_payer = extra.get("feePayer").and_then(Value::as_str);
        if fee_payer.is_none() || fee_payer != adapter.relayer() {
            return Err(Reason::Payload(chain.family, Fault::FeePayerNotManaged));
        }
    }
    Ok(Target { adapter, family: chain.family, scheme, decimals: asset.decimals, req, payload: r.payload.to_string() })
}
