//! stablerail: moves stablecoin value from a payer on one chain to a merchant
//! on another. Chains and schemes are WebAssembly adapters. This crate is the
//! binary's command line; every layer below is its own crate, and is named
//! here under the path the suite and the CLI use (`stablerail::settle`, ...).

pub use stablerail_adapter_host::adapter;
pub use stablerail_engine::{family, float, ratelimit, settle, swap, sweeper, wallets, watch, webhooks, x402};
pub use stablerail_ops::{auth, client_ip, live, mail, ops, state};
pub use stablerail_store::{db, store};
pub use stablerail_types::{
    cached, clock, config, crypto, decimal, facts, failure, intent, payment, pepper, sanctions, secret_file, telemetry, traces,
};
pub use stablerail_web::{api, dashboard, heap, http_server, server};

pub mod cli;
pub mod logs;
pub mod output;
