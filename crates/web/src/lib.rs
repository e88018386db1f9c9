//! stablerail's web layer: the HTTP API (`/v2`, `/api`, `/x402`), its
//! OpenAPI document, the dashboard's pages, event streams, and the server
//! that listens.

// The layers below, under the paths the web layer uses.
use stablerail_adapter_host::adapter;
use stablerail_engine::{family, ratelimit, settle, swap, sweeper, wallets, watch, webhooks, x402};
use stablerail_ops::{auth, client_ip, live, mail, ops, state};
use stablerail_store::{db, store};
use stablerail_types::{clock, config, decimal, failure, intent, payment, sanctions, telemetry, traces};

pub mod api;
pub mod dashboard;
pub mod heap;
pub mod http_server;
pub mod server;
