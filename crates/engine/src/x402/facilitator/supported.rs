//! `GET /x402/supported`: what a resource server may send here.

use std::collections::BTreeMap;

use serde_json::json;

use super::Facilitator;
use crate::family::keys::Role;
use crate::x402::wire::{SupportedKind, SupportedResponse};
use crate::x402::{scheme, v1};

const PAYMENT_IDENTIFIER: &str = "payment-identifier";

/// Every exposed network with a served exact asset, in v2 and, where x402
/// v1 names the network, in v1; every one with an `upto` asset, in v2 (the
/// relayer that must send its settlements as `facilitatorAddress`); every
/// one with a `batch-settlement` asset (with this facilitator's
/// `receiverAuthorizer` when it has one); the
/// extensions that apply; the relayer that signs on each family (Solana's
/// is also each kind's `feePayer`).
pub async fn supported(s: &Facilitator) -> SupportedResponse {
    let cfg = &s.config;
    // Keyed by CAIP-2 namespace; `signers` names each as `<namespace>:*`.
    let mut relayers: BTreeMap<&'static str, String> = BTreeMap::new();
    let mut v2: Vec<SupportedKind> = vec![];
    let mut permit2 = false;
    for (chain, c, key, asset) in cfg.served_assets() {
        if !s.watch.exposed(chain) || s.watch.asset_withheld(chain, key) {
            continue;
        }
        let Some(network) = c.network() else { continue };
        let scheme = asset.x402_scheme.as_str();
        if v2.iter().any(|k| k.network == network && k.scheme == scheme) {
            continue;
        }
        let facts = c.family.facts();
        let family = facts.caip2_namespace;
        if !relayers.contains_key(family) {
            let Some(driver) = s.drivers.of(c.family) else { continue };
            let Ok(address) = driver.address(&Role::Relayer).await else { continue };
            relayers.insert(family, address);
        }
        permit2 |= facts.x402_gas_sponsoring && asset.scheme == "permit2";
        let extra = if facts.x402_fee_payer {
            Some(json!({ "feePayer": relayers[family] }))
        } else if scheme::rules(asset.x402_scheme).names_facilitator {
            Some(json!({ "facilitatorAddress": relayers[family] }))
        } else if asset.x402_scheme == crate::config::X402Scheme::BatchSettlement {
            // The key servers may delegate claims and refunds to; none
            // configured: servers sign their own.
            s.authorizer.as_ref().map(|a| json!({ "receiverAuthorizer": a.address }))
        } else {
            None
        };
        v2.push(SupportedKind { x402_version: 2, scheme: scheme.into(), network, extra });
    }
    let v1_kinds: Vec<SupportedKind> = v2
        .iter()
        .filter(|k| scheme::named(&k.scheme).is_some_and(|r| r.in_v1))
        .filter_map(|k| v1::name(&k.network).map(|n| SupportedKind { x402_version: 1, network: n.into(), ..k.clone() }))
        .collect();
    let mut extensions = vec![];
    if permit2 {
        extensions.extend(["eip2612GasSponsoring".to_string(), "erc20ApprovalGasSponsoring".to_string()]);
    }
    extensions.push(PAYMENT_IDENTIFIER.into());
    let signers = relayers.into_iter().map(|(k, a)| (format!("{k}:*"), vec![a])).collect();
    SupportedResponse { kinds: v2.into_iter().chain(v1_kinds).collect(), extensions, signers }
}
