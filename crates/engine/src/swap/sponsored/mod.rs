//! The sponsored (gasless) same-chain swap of `POST /v2/swap/execute`, on
//! EVM chains, for an agent whose hosted wallet holds the input stablecoin
//! and too little of the native coin for gas:
//!
//! 1. **pull**: the wallet signs, off chain, a payment of the whole input
//!    to the relayer (the asset's own x402 scheme: an EIP-3009
//!    authorization, or Permit2 with an EIP-2612 permit), which the relayer
//!    lands; the authorization is stored first, and its nonce is derived
//!    from the run, so the token moves it once;
//! 2. **swap**: the relayer approves the route's spender for exactly the
//!    input less the fee and sends the provider's swap, paying the output
//!    to the agent's wallet; the fee stays with the relayer, in the input
//!    token, for the gas it paid;
//! 3. **refund**: if the swap cannot be made once the input is pulled (it
//!    reverted, or after a crash no acceptable route is left), the relayer
//!    sends the input back less the fee, which paid its gas (a swap that
//!    is refused for free would let anyone make the relayer pay).
//!
//! Before anything is signed, the route passes the swap guard from the
//! relayer's side (known contracts, at most the input less the fee
//! leaves, at least the minimum reaches the agent) and the pull, the
//! approval and the swap are simulated together; the agent's wallet must
//! lose exactly the input, only to the relayer. A run (`sponsored_swaps`)
//! is driven by whoever holds its lease: the request, or, if that died,
//! the swap tracker; every transaction is stored under the run before it
//! is broadcast.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use alloy_primitives::{keccak256, Address, U256};
use rust_decimal::Decimal;
use serde_json::json;

use super::route::{Route, RouteRequest, RouteTx};
use super::run::{plan_approvals, Executed, Request, LEG, SWAP_STEP};
use super::{guard, Amount, SwapChain, SwapError, Swaps};
use crate::adapter::{Answer, AssetAdapter};
use crate::config::{Config, DomainKind, Family, Sponsored};
use crate::db::Db;
use crate::family::keys::Role;
use crate::family::{Driver, Drivers, Finality, Share, Submit};
use crate::payment::{EvmCall, PaymentRequirements, ProofError, ReceiptStatus, Submission, Terms, Transfer};
use crate::settle::{StepError, Steps};
use crate::store::settlement::{self as repo, TxRow};
use crate::store::sponsored_swaps::{self as runs, Phase, Run};
use crate::store::transition::sponsored_swaps as phase;

/// Legs of a run's other transactions (the swap and its approvals are
/// under `execute::LEG`, as on the unsponsored path).
mod calls;
mod plan;

use calls::*;
pub use plan::*;

const PULL_LEG: &str = "swap-pull";
const REFUND_LEG: &str = "swap-refund";
/// How long the pull's authorization is valid.
const PULL_VALIDITY_SECS: u64 = 600;
/// How long a pulled input waits for the provider to answer again before
/// it is refunded.
const GIVE_UP_AFTER: Duration = Duration::from_secs(600);
/// How long a request waits for a run another driver holds.
const WAIT_FOR_OTHER: Duration = Duration::from_secs(60);

/// This process's name in leases; each drive adds its own suffix.
static PROCESS: LazyLock<String> = LazyLock::new(|| ulid::Ulid::new().to_string());

/// What a sponsored run works with.
pub struct Sponsor<'a> {
    pub swaps: &'a Swaps,
    pub db: &'a Db,
    pub drivers: &'a Drivers,
    pub steps: &'a Steps,
}

alloy_sol_types::sol! {
    function transfer(address to, uint256 amount) external returns (bool);
}

/// A route checked for a run: its estimate, the swap call, and the
/// spender the relayer approves.
pub struct Quoted {
    estimate: String,
    swap: Submission,
    spender: Option<String>,
}

/// What a sponsored swap asks of the provider: `input` of `from_token`
/// from the relayer, the output to the agent's wallet `me`.
struct Ask<'a> {
    chain: &'a SwapChain,
    from_token: &'a str,
    to_token: &'a str,
    input: U256,
    slippage_bps: u16,
    relayer: &'a str,
    me: &'a str,
}

impl Ask<'_> {
    /// As the swap guard reads it, from the relayer's side.
    fn asked(&self, min_output: U256) -> guard::Asked<'_> {
        guard::Asked {
            wallet: self.relayer,
            from_token: self.from_token,
            max_input: self.input,
            to_token: self.to_token,
            output: Some((self.me, min_output)),
        }
    }
}

impl Sponsor<'_> {
    /// How long a driver holds a run before another may take it over
    /// (`swap.sponsored_lease_seconds`); it renews it while it waits on the chain.
    fn lease_ms(&self) -> i64 {
        self.swaps.config.swap.sponsored_lease_seconds.max(1).saturating_mul(1000) as i64
    }

    /// Take over the runs whose driver died (a crash, a request cut off)
    /// once their lease ran out, and drive each to its end.
    pub async fn resume_abandoned(&self) {
        let now = crate::clock::now_ms();
        let found = match runs::abandoned(self.db, now, 8).await {
            Ok(found) => found,
            Err(e) => return tracing::warn!(error = %e, "sponsored swaps: could not read abandoned runs"),
        };
        for id in found {
            let holder = format!("{}:{}", *PROCESS, ulid::Ulid::new());
            let run = match runs::lease(self.db, &id, &holder, now, self.lease_ms()).await {
                Ok(true) => runs::get(self.db, &id).await,
                Ok(false) => continue,
                Err(e) => Err(e),
            };
            let outcome = match run {
                // Refunded and refused are ends too.
                Ok(Some(run)) => match self.drive(run, &holder, None).await {
                    Ok(_) | Err(SwapError::Refunded) | Err(SwapError::Refused(_)) => Ok(()),
                    Err(e) => Err(e),
                },
                Ok(None) => continue,
                Err(e) => Err(e.into()),
            };
            match outcome {
                Ok(()) => tracing::info!(run = %id, "sponsored swap taken over and finished"),
                Err(e) => tracing::warn!(run = %id, error = ?e, "sponsored swap taken over; not finished yet"),
            }
        }
    }

    /// The answer of `run` if it was recorded as a sponsored swap (driven
    /// to its end here if its driver is gone), whatever the wallet holds
    /// now: a retry of a sponsored run never becomes a swap of its own.
    pub async fn recorded(&self, run: &str) -> Result<Option<Executed>, SwapError> {
        match runs::get(self.db, run).await? {
            Some(found) => self.rejoin(found, &format!("{}:{}", *PROCESS, ulid::Ulid::new())).await.map(Some),
            None => Ok(None),
        }
    }

    /// Run the sponsored swap `run` (not recorded yet: see `recorded`) and
    /// answer as the unsponsored path does, with the fee kept.
    pub async fn execute(
        &self,
        r: &Request,
        from: &SwapChain,
        agent: &str,
        me: &str,
        run: &str,
        plan: Plan,
    ) -> Result<Executed, SwapError> {
        let holder = format!("{}:{}", *PROCESS, ulid::Ulid::new());
        let driver = self.driver(&from.name)?;
        let relayer = driver.address(&Role::Relayer).await.map_err(|e| SwapError::Internal(format!("relayer: {e}")))?;
        let amount = U256::from(r.from_amount);
        let input = amount.checked_sub(plan.fee).filter(|i| !i.is_zero()).ok_or(SwapError::BelowSponsoredFee)?;
        let ask = Ask {
            chain: from,
            from_token: &r.from_token,
            to_token: &r.to_token,
            input,
            slippage_bps: r.slippage_bps,
            relayer: &relayer,
            me,
        };
        let route = self.checked_route(&ask).await?;

        // The agent's authorization of the whole input to the relayer.
        let adapter = self.adapter(&from.name, &plan.asset)?;
        let req = requirements(&adapter, &relayer, amount).await?;
        let wallet = Role::Agent(agent.to_string());
        let lock = self.steps.wallet_lock(&from.name, &plan.asset, me).await;
        let _held = lock.lock().await;
        let asset = &self.swaps.config.chains[&from.name].assets[&plan.asset];
        let grant =
            driver.sponsored_allowance(&from.name, asset, &wallet, &req.amount).await.map_err(|e| SwapError::Unavailable(e.to_string()))?;
        if asset.scheme == "permit2" && grant.is_none() {
            // Permit2 may not take the input yet and no permit can be
            // granted: the wallet approves Permit2 itself (it has the gas).
            self.steps.prepare_wallet(run, PULL_LEG, &adapter, &wallet, me, &req.amount).await.map_err(step_error)?;
        }
        let now = (crate::clock::now_ms() / 1000) as u64;
        let transfer = Transfer {
            sender: me.to_string(),
            recipient: relayer.clone(),
            amount: amount.to_string(),
            valid_after: now.saturating_sub(60),
            valid_before: now + PULL_VALIDITY_SECS,
            nonce: keccak256(format!("{run}:pull")).to_vec(),
        };
        let mut proof = self.steps.authorize(&adapter, driver.as_ref(), &wallet, &req, transfer).await.map_err(internal)?;
        if let Some((name, value)) = grant {
            proof = crate::settle::with_extension(&proof, name, value).map_err(internal)?;
        }
        let paid = match adapter.verify(&req, &proof).await.map_err(internal)? {
            Ok(p) => p,
            Err(e) => return Err(SwapError::Internal(format!("own authorization refused: {e:?}"))),
        };
        match adapter.preflight(&paid).await.map_err(internal)? {
            Ok(()) => {}
            Err(ProofError::InsufficientFunds(_)) => return Err(SwapError::InsufficientBalance),
            Err(ProofError::ChainUnavailable(m)) => return Err(SwapError::Unavailable(m)),
            Err(e) => return Err(SwapError::Refused(format!("the pull would fail: {e:?}"))),
        }

        // Pull, approval and swap, simulated together from the relayer.
        let pull = adapter.settle(&req, &proof).await.map_err(internal)?.map_err(|e| SwapError::Refused(format!("pull: {e:?}")))?;
        let before: Vec<guard::EvmCall> = pull.iter().filter_map(|s| simulated(&s.submission)).collect();
        if before.len() != pull.len() {
            return Err(SwapError::Refused("the pull is not an EVM call".into()));
        }
        let (mut quoted, mut simulated) = self.simulate(&ask, route, before.clone()).await?;
        // The fee covers the gas the relayer is about to pay (never less
        // than the chain's network fee): when the simulated gas costs more,
        // the swap is quoted and simulated again for the smaller input.
        let mut fee = plan.fee;
        let gas_fee = gas_cost(self.swaps, from, simulated.gas, asset.decimals).await?;
        if gas_fee > fee {
            fee = gas_fee;
            let input = amount.checked_sub(fee).filter(|i| !i.is_zero()).ok_or(SwapError::BelowSponsoredFee)?;
            let ask = Ask { input, ..ask };
            let route = self.checked_route(&ask).await?;
            (quoted, simulated) = self.simulate(&ask, route, before).await?;
            if gas_cost(self.swaps, from, simulated.gas, asset.decimals).await? > fee {
                return Err(SwapError::Unavailable("the sponsored swap's gas rose while it was quoted".into()));
            }
        }
        check_payer(from, &simulated.events, me, &relayer, &r.from_token, amount, asset)?;

        let created_at = crate::clock::now_ms();
        let new = Run {
            run: run.to_string(),
            agent_id: agent.to_string(),
            chain: from.name.clone(),
            asset: plan.asset.clone(),
            from_token: r.from_token.clone(),
            to_token: r.to_token.clone(),
            from_amount: amount.to_string(),
            fee: fee.to_string(),
            slippage_bps: i32::from(r.slippage_bps),
            proof,
            phase: Phase::Pulling,
            tx_hash: None,
            estimated_output: None,
            error_code: None,
            created_at,
        };
        let started = phase::start(self.db, &new, &holder, created_at + self.lease_ms()).await?;
        if started.proof != new.proof {
            // Another request of the same run got there first.
            return self.rejoin(started, &holder).await;
        }
        self.drive(started, &holder, Some(quoted)).await
    }

    /// A run recorded before (a retry, or a request racing another): its
    /// answer once final, driven here if its driver is gone.
    async fn rejoin(&self, found: Run, holder: &str) -> Result<Executed, SwapError> {
        let started = Instant::now();
        let mut run = found;
        loop {
            if run.phase.is_final() {
                return answer(&run);
            }
            if runs::lease(self.db, &run.run, holder, crate::clock::now_ms(), self.lease_ms()).await? {
                return self.drive(run, holder, None).await;
            }
            if started.elapsed() > WAIT_FOR_OTHER {
                return Err(SwapError::Unavailable(format!("sponsored swap {} is still being driven", run.run)));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            run = runs::get(self.db, &run.run).await?.ok_or_else(|| SwapError::Internal("sponsored swap vanished".into()))?;
        }
    }

    /// Move a leased run to its end: pull, then swap (or refund). `quoted`
    /// is the route checked just now (estimate, swap call); without it
    /// (after a crash) the swap is quoted and checked again.
    pub async fn drive(&self, mut run: Run, holder: &str, quoted: Option<Quoted>) -> Result<Executed, SwapError> {
        if run.phase == Phase::Pulling {
            run = self.pull(run, holder).await?;
        }
        if run.phase == Phase::Swapping {
            run = self.swap(run, holder, quoted).await?;
        }
        answer(&run)
    }

    async fn pull(&self, run: Run, holder: &str) -> Result<Run, SwapError> {
        let driver = self.driver(&run.chain)?;
        let relayer = driver.address(&Role::Relayer).await.map_err(|e| SwapError::Internal(format!("relayer: {e}")))?;
        let adapter = self.adapter(&run.chain, &run.asset)?;
        let amount = parse_units(&run.from_amount)?;
        let req = requirements(&adapter, &relayer, amount).await?;
        let stored = repo::list_txs(self.db, &run.run, PULL_LEG).await?;
        let payer = self.agent_address(&run).await?;
        let steps = match adapter.settle(&req, &run.proof).await.map_err(internal)? {
            Ok(steps) => steps,
            Err(ProofError::ChainUnavailable(m)) => return Err(SwapError::Unavailable(m)),
            // Used or expired and nothing of ours out: someone else may
            // have landed it (the money is with the relayer then).
            Err(e) if stored.is_empty() => return self.pull_not_landed(run, holder, &adapter, &req, format!("{e:?}")).await,
            Err(_) => vec![],
        };
        match self.steps.run_steps(&run.run, PULL_LEG, &run.chain, &Role::Relayer, &steps, stored, &Share::Alone, false).await {
            Ok((hash, receipt)) => {
                match self.steps.read_receipt(&adapter, crate::settle::expected(&payer, &req), receipt).await.map_err(internal)? {
                    ReceiptStatus::Settled(_) => {
                        tracing::info!(run = %run.run, tx = %hash, "sponsored swap: input pulled");
                        self.advance(run, holder, Phase::Pulling, Phase::Swapping, None, None, None).await
                    }
                    ReceiptStatus::Failed(m) => self.pull_not_landed(run, holder, &adapter, &req, m).await,
                    ReceiptStatus::Pending => Err(SwapError::Unavailable("pull not final yet".into())),
                }
            }
            Err(StepError::WouldRevert(m)) | Err(StepError::Reverted(m)) | Err(StepError::OverGasCap(m)) => {
                self.pull_not_landed(run, holder, &adapter, &req, m).await
            }
            Err(e) => Err(step_error(e)),
        }
    }

    /// The pull did not land from here: unless the authorization moved the
    /// input anyway (another sender landed it), nothing moved.
    async fn pull_not_landed(
        &self,
        run: Run,
        holder: &str,
        adapter: &Arc<AssetAdapter>,
        req: &PaymentRequirements,
        why: String,
    ) -> Result<Run, SwapError> {
        let payer = self.agent_address(&run).await?;
        let payment = crate::settle::expected(&payer, req);
        let moved = self.steps.moved_anyway(&run.chain, adapter, payment, &run.proof, run.created_at - 60_000).await;
        match moved {
            Ok(Some((tx, _))) => {
                tracing::warn!(run = %run.run, %tx, "sponsored swap: the pull was landed by another sender");
                self.advance(run, holder, Phase::Pulling, Phase::Swapping, None, None, None).await
            }
            Ok(None) => {
                tracing::info!(run = %run.run, detail = %why, "sponsored swap: the pull cannot land; nothing moved");
                self.advance(run, holder, Phase::Pulling, Phase::Refused, None, None, Some("pull_failed")).await
            }
            Err(e) => Err(SwapError::Unavailable(format!("{e:#}"))),
        }
    }

    async fn swap(&self, run: Run, holder: &str, quoted: Option<Quoted>) -> Result<Run, SwapError> {
        let driver = self.driver(&run.chain)?;
        // One run at a time per token moves the relayer's allowance (an
        // exact approve per run) in this replica.
        let lock = sponsor_lock(&run.chain, &run.from_token);
        let _held = lock.lock().await;
        let (estimate, hash) = match repo::get_tx(self.db, &run.run, LEG, SWAP_STEP).await? {
            Some(stored) => (run.estimated_output.clone(), stored.tx_hash),
            None => {
                let Quoted { estimate, swap, spender } = match quoted {
                    Some(q) => q,
                    None => match self.quote_again(&run).await {
                        Ok(q) => q,
                        // The provider may come back; the input is not kept past a while.
                        Err(e @ (SwapError::Unavailable(_) | SwapError::Internal(_)))
                            if crate::clock::now_ms() - run.created_at < GIVE_UP_AFTER.as_millis() as i64 =>
                        {
                            return Err(e)
                        }
                        Err(e) => {
                            tracing::warn!(run = %run.run, error = %e, "sponsored swap: no acceptable route after the pull; refunding");
                            return self.refund(run, holder, "no_route").await;
                        }
                    },
                };
                let chain = self.swaps.chain(&run.chain)?;
                let relayer = driver.address(&Role::Relayer).await.map_err(|e| SwapError::Internal(format!("relayer: {e}")))?;
                let input = parse_units(&run.from_amount)? - parse_units(&run.fee)?;
                if let Some(a) = plan_approvals(self.swaps, &chain, &run.from_token, input, &relayer, spender.as_deref()).await? {
                    if let Err(e) = a.send(self.swaps, self.db, &driver, &Role::Relayer, &run.run).await {
                        tracing::warn!(run = %run.run, error = %e, "sponsored swap: the relayer's approval failed; refunding");
                        return self.refund(run, holder, "approval_failed").await;
                    }
                }
                // Recorded with the estimate before the swap goes out.
                let run = self.advance(run, holder, Phase::Swapping, Phase::Swapping, None, Some(&estimate), None).await?;
                let row = TxRow { intent_id: run.run.clone(), leg: LEG.into(), step: SWAP_STEP, label: "swap".into() };
                let hash = match driver.submit(&run.chain, &Role::Relayer, &swap, row, Submit::default()).await {
                    Ok(h) => h,
                    Err(crate::family::SendError::WouldRevert(m)) => {
                        tracing::warn!(run = %run.run, detail = %m, "sponsored swap: the swap would revert now; refunding");
                        return self.refund(run, holder, "swap_reverted").await;
                    }
                    Err(e) => return Err(SwapError::Unavailable(e.to_string())),
                };
                return self.finish(run, holder, driver, hash).await;
            }
        };
        let run = Run { estimated_output: estimate, ..run };
        self.finish(run, holder, driver, hash).await
    }

    /// Follow the swap to its end: done, or refunded if it failed.
    async fn finish(&self, run: Run, holder: &str, driver: Arc<dyn Driver>, hash: String) -> Result<Run, SwapError> {
        match self.final_of(&run, holder, &driver, &hash).await? {
            true => {
                tracing::info!(run = %run.run, tx = %hash, "sponsored swap landed");
                self.advance(run, holder, Phase::Swapping, Phase::Done, Some(&hash), None, None).await
            }
            // Mined and reverted (a swap refused before it was sent is
            // `swap_reverted`).
            false => {
                tracing::warn!(run = %run.run, tx = %hash, "sponsored swap reverted on chain; refunding less the fee");
                self.refund(run, holder, "swap_reverted_on_chain").await
            }
        }
    }

    /// Send the input back to the agent's wallet, less the fee: the relayer
    /// paid the gas of the pull, of anything sent after it, and of the refund.
    async fn refund(&self, run: Run, holder: &str, code: &str) -> Result<Run, SwapError> {
        let driver = self.driver(&run.chain)?;
        let hash = match repo::get_tx(self.db, &run.run, REFUND_LEG, 0).await? {
            Some(stored) => stored.tx_hash,
            None => {
                let to: Address = self.agent_address(&run).await?.parse().map_err(|_| SwapError::WalletNotReady)?;
                let token = run.from_token.clone();
                // The relayer paid for the pull and pays for the refund:
                // the fee stays, whatever made the swap impossible.
                let back = parse_units(&run.from_amount)?
                    .checked_sub(parse_units(&run.fee)?)
                    .ok_or_else(|| SwapError::Internal(format!("{}: fee above input", run.run)))?;
                let data = alloy_sol_types::SolCall::abi_encode(&transferCall { to, amount: back });
                let refund = Submission::EvmCall(EvmCall { to: token, data, value: "0".into(), gas_limit: None });
                let row = TxRow { intent_id: run.run.clone(), leg: REFUND_LEG.into(), step: 0, label: "refund".into() };
                driver
                    .submit(&run.chain, &Role::Relayer, &refund, row, Submit::default())
                    .await
                    .map_err(|e| SwapError::Unavailable(e.to_string()))?
            }
        };
        if !self.final_of(&run, holder, &driver, &hash).await? {
            return Err(SwapError::Internal(format!("refund {hash} of {} reverted", run.run)));
        }
        tracing::info!(run = %run.run, tx = %hash, "sponsored swap refunded");
        self.advance(run, holder, Phase::Swapping, Phase::Refunded, Some(&hash), None, Some(code)).await
    }

    /// `true` once `hash` is confirmed, `false` if it failed; waits while
    /// pending, holding `run`'s lease.
    async fn final_of(&self, run: &Run, holder: &str, driver: &Arc<dyn Driver>, hash: &str) -> Result<bool, SwapError> {
        let chain = run.chain.as_str();
        let confirmations = self.swaps.config.chains.get(chain).map_or(1, |c| c.confirmations.max(1));
        let deadline = Instant::now() + Duration::from_secs(self.swaps.config.service.receipt_timeout_seconds);
        let mut renewed = Instant::now();
        loop {
            if renewed.elapsed() > Duration::from_millis(self.lease_ms() as u64 / 3) {
                if !runs::lease(self.db, &run.run, holder, crate::clock::now_ms(), self.lease_ms()).await? {
                    return Err(SwapError::Unavailable(format!("sponsored swap {} was taken over", run.run)));
                }
                renewed = Instant::now();
            }
            match driver.finality(chain, hash, confirmations).await {
                Ok(Finality::Confirmed(_)) => return Ok(true),
                Ok(Finality::Failed) => return Ok(false),
                Ok(Finality::Pending) | Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
                _ => return Err(SwapError::Unavailable(format!("{hash} is not final yet"))),
            }
        }
    }

    /// After a crash: the route again, checked and simulated from the
    /// relayer (which holds the input now).
    async fn quote_again(&self, run: &Run) -> Result<Quoted, SwapError> {
        let chain = self.swaps.chain(&run.chain)?;
        let driver = self.driver(&run.chain)?;
        let relayer = driver.address(&Role::Relayer).await.map_err(|e| SwapError::Internal(format!("relayer: {e}")))?;
        let me = self.agent_address(run).await?;
        let input = parse_units(&run.from_amount)? - parse_units(&run.fee)?;
        let slippage_bps = u16::try_from(run.slippage_bps).unwrap_or(super::DEFAULT_SLIPPAGE_BPS);
        let ask =
            Ask { chain: &chain, from_token: &run.from_token, to_token: &run.to_token, input, slippage_bps, relayer: &relayer, me: &me };
        let route = self.checked_route(&ask).await?;
        Ok(self.simulate(&ask, route, vec![]).await?.0)
    }

    /// The provider's route for `ask`, its contracts known.
    async fn checked_route(&self, ask: &Ask<'_>) -> Result<Route, SwapError> {
        let route = self
            .swaps
            .best_route(&RouteRequest {
                from: ask.chain,
                to: ask.chain,
                from_token: ask.from_token,
                to_token: ask.to_token,
                from_address: Some(ask.relayer),
                to_address: Some(ask.me),
                amount: Amount::From(u64::try_from(ask.input).map_err(|_| SwapError::InvalidAmount)?),
                slippage_bps: ask.slippage_bps,
            })
            .await?;
        guard::check_route(self.swaps, ask.chain, &route, &ask.asked(parse_units(&route.min_output_amount)?))?;
        Ok(route)
    }

    /// `before` (the pull, while it has not landed), the relayer's approval
    /// and the swap, simulated together from the relayer and checked by the
    /// swap guard: the quote to send, and the token events seen.
    async fn simulate(&self, ask: &Ask<'_>, route: Route, before: Vec<guard::EvmCall>) -> Result<(Quoted, guard::Simulated), SwapError> {
        let Some(RouteTx::Evm { to: router, data, value, gas_limit }) = route.transaction else {
            return Err(SwapError::Refused("quote without an EVM transaction".into()));
        };
        let swap = evm_call(&router, &data, value.as_deref(), gas_limit.as_deref())?;
        let approvals =
            plan_approvals(self.swaps, ask.chain, ask.from_token, ask.input, ask.relayer, route.approval_address.as_deref()).await?;
        let mut bundle = before;
        bundle.extend(approvals.iter().flat_map(|a| a.simulated()));
        bundle.extend(simulated(&swap));
        let asked = ask.asked(parse_units(&route.min_output_amount)?);
        let simulated = guard::simulate_evm(self.swaps, ask.chain, &bundle, &asked, guard::OnRevert::Refuse).await?;
        Ok((Quoted { estimate: route.output_amount, swap, spender: route.approval_address }, simulated))
    }

    /// Move the run `from` → `to` under the lease, with what is known now.
    #[allow(clippy::too_many_arguments)]
    async fn advance(
        &self,
        run: Run,
        holder: &str,
        from: Phase,
        to: Phase,
        tx_hash: Option<&str>,
        estimate: Option<&str>,
        code: Option<&str>,
    ) -> Result<Run, SwapError> {
        let now = crate::clock::now_ms();
        if !phase::advance(self.db, &run.run, holder, from, to, tx_hash, estimate, code, now).await? {
            return Err(SwapError::Unavailable(format!("sponsored swap {} was taken over", run.run)));
        }
        runs::get(self.db, &run.run).await?.ok_or_else(|| SwapError::Internal("sponsored swap vanished".into()))
    }

    async fn agent_address(&self, run: &Run) -> Result<String, SwapError> {
        self.driver(&run.chain)?.address(&Role::Agent(run.agent_id.clone())).await.map_err(|_| SwapError::WalletNotReady)
    }

    fn driver(&self, chain: &str) -> Result<Arc<dyn Driver>, SwapError> {
        self.drivers.for_chain(chain).ok_or_else(|| SwapError::NoCaip2(chain.to_string()))
    }

    fn adapter(&self, chain: &str, asset: &str) -> Result<Arc<AssetAdapter>, SwapError> {
        self.steps.adapter(chain, asset).map_err(internal)
    }
}

/// What the run answers: the swap's hash once done; a refusal or refund as errors.
fn answer(run: &Run) -> Result<Executed, SwapError> {
    match run.phase {
        Phase::Done => Ok(Executed {
            tx_hash: run.tx_hash.clone().unwrap_or_default(),
            chain: run.chain.clone(),
            from_token: run.from_token.clone(),
            to_token: run.to_token.clone(),
            from_amount: run.from_amount.clone(),
            estimated_output: run.estimated_output.clone().unwrap_or_default(),
            sponsored_fee: Some(run.fee.clone()),
        }),
        Phase::Refunded => Err(SwapError::Refunded),
        Phase::Refused => Err(SwapError::Refused(format!("sponsored swap {}: the pull could not land", run.run))),
        Phase::Pulling | Phase::Swapping => Err(SwapError::Unavailable(format!("sponsored swap {} unfinished", run.run))),
    }
}

fn internal(e: impl std::fmt::Display) -> SwapError {
    SwapError::Internal(e.to_string())
}

fn step_error(e: StepError) -> SwapError {
    match e {
        StepError::NotSent(code, m) => SwapError::Unavailable(format!("{code:?}: {m}")),
        StepError::Pending(m) | StepError::Parked(m) => SwapError::Unavailable(m),
        StepError::WouldRevert(m) | StepError::Reverted(m) | StepError::OverGasCap(m) => SwapError::Refused(m),
    }
}

fn sponsor_lock(chain: &str, token: &str) -> Arc<tokio::sync::Mutex<()>> {
    static LOCKS: LazyLock<std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> = LazyLock::new(Default::default);
    LOCKS.lock().unwrap().entry(format!("{chain}/{}", token.to_lowercase())).or_default().clone()
}
