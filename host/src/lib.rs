//! stablerail: moves stablecoin value from a payer on one chain to a merchant
//! on another. Chains and schemes are WebAssembly adapters; this crate is the
//! host that owns HTTP, storage, keys and transport.

pub mod adapter;
pub mod api;
pub mod auth;
pub mod cached;
pub mod cli;
pub mod client_ip;
pub mod clock;
pub mod config;
pub mod crypto;
pub mod dashboard;
pub mod db;
pub mod decimal;
pub mod failure;
pub mod family;
pub mod float;
pub mod heap;
pub mod http_server;
pub mod intent;
pub mod live;
pub mod mail;
pub mod ops;
pub mod output;
pub mod payment;
pub mod ratelimit;
pub mod sanctions;
pub mod secret_file;
pub mod server;
pub mod settle;
pub mod state;
pub mod store;
pub mod swap;
pub mod sweeper;
pub mod telemetry;
pub mod wallets;
pub mod watch;
pub mod webhooks;
pub mod x402;
