//! `POST /v2/swap/execute` (EVM, Solana, TRON): quote for the agent's
//! hosted wallet; on EVM and TRON approve the route's spender when the
//! allowance is short (reset to 0 first where the token needs it); then
//! send the swap. Every transaction
//! goes through the family driver, so it is signed, stored, then
//! broadcast, and its nonce is the database's; each is stored under the
//! run (`swx_…`), which for an `Idempotency-Key` is derived from the agent
//! and the key: a retry finds the stored swap and sends nothing new. A
//! same-chain EVM swap of a served stablecoin by a wallet without gas goes
//! the sponsored way instead (`sponsored`: the relayer pays the gas).

use alloy_primitives::U256;
use base64::Engine as _;
use serde_json::Value;

use super::route::{RouteRequest, RouteTx};
use super::run::{parse, plan_approvals, sent, LEG, SWAP_STEP};
use super::Amount;
use super::{guard, sponsored, SwapError, Swaps};
use crate::config::Family;
use crate::db::Db;
use crate::family::keys::Role;
use crate::family::{Drivers, Finality, Submit};
use crate::payment::{EvmCall, SolanaCosign, Submission, TronTransaction};
use crate::settle::Steps;
use crate::store::settlement::{self as repo, TxRow};

pub use super::run::{run_id, Executed};

pub async fn execute(
    swaps: &Swaps,
    db: &Db,
    drivers: &Drivers,
    steps: &Steps,
    agent: &str,
    body: &Value,
    run: &str,
) -> Result<Executed, SwapError> {
    let r = parse(body)?;
    let cfg = &swaps.config;
    let configured = |name: &str| cfg.chains.get(name).filter(|c| cfg.chain_exposed(c));
    let source = configured(&r.chain).ok_or_else(|| SwapError::NoCaip2(r.chain.clone()))?;
    let wallet = Role::Agent(agent.to_string());
    let destination_family = configured(&r.to_chain).map(|c| c.family);
    if source.family == Family::Tron || destination_family == Some(Family::Tron) {
        let tron = drivers.of(Family::Tron).ok_or(SwapError::TronNotConfigured)?;
        tron.address(&wallet).await.map_err(|_| SwapError::NoTronWallet)?;
        // TRON execution: the TRON chain must be one swaps are offered on
        // (LI.FI serves TRON's mainnet id only).
        let tron_chain = if source.family == Family::Tron { &r.chain } else { &r.to_chain };
        swaps.chain(tron_chain).map_err(|_| SwapError::TronNotConfigured)?;
    }
    let (from, to) = swaps.pair(&r.chain, Some(&r.to_chain))?;
    if !from.family.facts().is_address(&r.from_token) {
        return Err(SwapError::Invalid("from_token"));
    }
    if !to.family.facts().is_address(&r.to_token) {
        return Err(SwapError::Invalid("to_token"));
    }
    let driver = drivers.of(from.family).ok_or_else(|| SwapError::NoCaip2(r.chain.clone()))?;
    let me = driver.address(&wallet).await.map_err(|_| SwapError::WalletNotReady)?;
    // The output goes to the agent's own wallet of the destination's family.
    let recipient = match drivers.of(to.family) {
        Some(d) if to.family != from.family => d.address(&wallet).await.map_err(|_| SwapError::WalletNotReady)?,
        Some(_) => me.clone(),
        None => return Err(SwapError::NoCaip2(r.to_chain.clone())),
    };
    // An agent without gas for a same-chain stablecoin swap: the relayer
    // pays. A run recorded that way stays that way on a retry.
    let sponsor = sponsored::Sponsor { swaps, db, drivers, steps };
    if let Some(answer) = sponsor.recorded(run).await? {
        return Ok(answer);
    }
    if let Some(plan) = sponsored::plan(swaps, &r, &from, &me).await? {
        return sponsor.execute(&r, &from, agent, &me, run, plan).await;
    }
    let route = swaps
        .best_route(&RouteRequest {
            from: &from,
            to: &to,
            from_token: &r.from_token,
            to_token: &r.to_token,
            from_address: Some(&me),
            to_address: Some(&recipient),
            amount: Amount::From(r.from_amount),
            slippage_bps: r.slippage_bps,
        })
        .await?;
    let answer = |tx_hash: String| Executed {
        tx_hash,
        chain: r.chain.clone(),
        from_token: r.from_token.clone(),
        to_token: r.to_token.clone(),
        from_amount: r.from_amount.to_string(),
        estimated_output: route.output_amount.clone(),
        sponsored_fee: None,
    };
    // A retry of a run that already stored its swap sends nothing new.
    if let Some(stored) = repo::get_tx(db, run, LEG, SWAP_STEP).await? {
        return match driver.finality(&from.name, &stored.tx_hash, 1).await {
            Ok(Finality::Pending) if !driver.can_land(&from.name, &stored).await => {
                Err(SwapError::SendFailed(format!("stored swap {} can never land", stored.tx_hash)))
            }
            _ => Ok(answer(stored.tx_hash)),
        };
    }
    // What the agent asked; the route must name only known contracts, and
    // on EVM chains its simulated effect must be this.
    let min_output = U256::from_str_radix(&route.min_output_amount, 10)
        .map_err(|_| SwapError::Unavailable("quote with an unreadable minimum output".into()))?;
    let asked = guard::Asked {
        wallet: &me,
        from_token: &r.from_token,
        max_input: U256::from(r.from_amount),
        to_token: &r.to_token,
        output: (from.name == to.name).then_some((recipient.as_str(), min_output)),
    };
    guard::check_route(swaps, &from, &route, &asked)?;
    let submission = match route.transaction {
        Some(RouteTx::Evm { to: router, data, value, gas_limit }) => {
            let number = |h: Option<String>| h.and_then(|h| u128::from_str_radix(h.trim_start_matches("0x"), 16).ok());
            let data = hex::decode(data.trim_start_matches("0x")).map_err(|_| SwapError::Unavailable("calldata is not hex".into()))?;
            let value = number(value).unwrap_or(0);
            // The approvals and the swap, simulated together from the
            // wallet before any of them is signed.
            let approvals =
                plan_approvals(swaps, &from, &r.from_token, U256::from(r.from_amount), &me, route.approval_address.as_deref()).await?;
            let mut bundle: Vec<guard::EvmCall> = approvals.iter().flat_map(|a| a.simulated()).collect();
            let to = router.parse().map_err(|_| SwapError::Refused(format!("router {router} is not an address")))?;
            bundle.push(guard::EvmCall { to, data: data.clone(), value: U256::from(value) });
            guard::simulate_evm(swaps, &from, &bundle, &asked, guard::OnRevert::Refuse).await?;
            if let Some(a) = approvals {
                a.send(swaps, db, &driver, &wallet, run).await?;
            }
            Submission::EvmCall(EvmCall {
                to: router,
                data,
                value: value.to_string(),
                gas_limit: number(gas_limit).and_then(|g| u64::try_from(g).ok()),
            })
        }
        // The provider's transaction names the agent's wallet as fee payer
        // (slot 0); the driver signs that slot only if it is the wallet's.
        Some(RouteTx::Solana { transaction, .. }) => {
            guard::simulate_solana(swaps, &from, &transaction, &asked, guard::OnRevert::Refuse).await?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&transaction)
                .map_err(|_| SwapError::Unavailable("swap transaction is not base64".into()))?;
            Submission::SolanaCosign(SolanaCosign { transaction: bytes, fee_payer_index: 0 })
        }
        // A TRON call the provider built: the wallet must own it, it must
        // call the contract the route names, and it must still be valid.
        Some(RouteTx::Tron { to: contract, raw_data, .. }) => {
            let refused = |e: &str| SwapError::Unavailable(format!("TRON swap transaction: {e}"));
            // TRX goes along only when TRX is what is swapped.
            let trx = from.family.facts().address20(&r.from_token).is_some_and(|t| from.family.facts().is_native(&t));
            let call_value = if trx { r.from_amount } else { 0 };
            tron_call(&raw_data, &me, &contract, call_value, crate::clock::now_ms()).map_err(refused)?;
            if let Some(a) =
                plan_approvals(swaps, &from, &r.from_token, U256::from(r.from_amount), &me, route.approval_address.as_deref()).await?
            {
                a.send(swaps, db, &driver, &wallet, run).await?;
            }
            // The approve took time: the transaction must still be valid.
            tron_call(&raw_data, &me, &contract, call_value, crate::clock::now_ms()).map_err(refused)?;
            // Its effect, with the (exact, known-spender) approval now on chain.
            guard::simulate_tron(swaps, &from, &raw_data, &asked, guard::OnRevert::Refuse).await?;
            Submission::TronSigned(TronTransaction { raw_data, signatures: vec![] })
        }
        None => return Err(SwapError::Unavailable("quote without a transaction".into())),
    };
    let row = TxRow { intent_id: run.to_string(), leg: LEG.into(), step: SWAP_STEP, label: "swap".into() };
    let hash = driver.submit(&from.name, &wallet, &submission, row, Submit::default()).await.map_err(sent)?;
    Ok(answer(hash))
}

/// Whether a TRON transaction a provider built may be signed by `owner`:
/// one canonical call, owned by `owner`, of `contract`, sending exactly
/// `call_value` SUN along, not expired at `now_ms`.
pub fn tron_call(raw_data: &[u8], owner: &str, contract: &str, call_value: u64, now_ms: i64) -> Result<(), &'static str> {
    let (raw, call) = tron_wire::raw::single_call(raw_data)?;
    let raw_of = |text: &str| tron_wire::address::parse(text).map(|a| tron_wire::address::raw(&a));
    if raw_of(owner) != Some(call.owner_address) {
        return Err("its owner is not the wallet");
    }
    if raw_of(contract) != Some(call.contract_address) {
        return Err("it calls another contract than the route's");
    }
    if u64::try_from(call.call_value).ok() != Some(call_value) {
        return Err("it sends another amount of TRX along");
    }
    if raw.expiration <= now_ms {
        return Err("it has expired");
    }
    Ok(())
}
