//! stablerail's operations: one per verb (create an intent, submit its
//! proof, make an agent, ...), the state they share, agent credentials,
//! the live event hub, mail and who a request is from. HTTP is above.

// The layers below, under the paths the operations use.
use stablerail_adapter_host::adapter;
use stablerail_engine::{family, float, ratelimit, settle, swap, wallets, watch, webhooks, x402};
use stablerail_store::{db, store};
use stablerail_types::{clock, config, decimal, failure, intent, payment, sanctions, telemetry, traces};

pub mod auth;
pub mod client_ip;
pub mod live;
pub mod mail;
pub mod ops;
pub mod state;
