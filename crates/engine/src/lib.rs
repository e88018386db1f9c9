//! stablerail's engine: settlement of intents (both legs, batched, exactly
//! once), the x402 facilitator's worker, swaps, webhooks' delivery, the
//! chain drivers this build has, and the watchers of wallets and prices.

// The layers below, under the paths the engine's modules use.
use stablerail_adapter_host::adapter;
use stablerail_store::{db, store};
use stablerail_types::{cached, clock, config, decimal, failure, intent, payment, pepper, sanctions, telemetry, traces};

pub mod family;
pub mod float;
pub mod ratelimit;
pub mod settle;
pub mod swap;
pub mod sweeper;
pub mod wallets;
pub mod watch;
pub mod webhooks;
pub mod x402;
