//! stablerail's adapter host: loads WebAssembly chain adapters and calls
//! them, each call on a fresh instance, through the WIT version each was
//! built against.

use stablerail_chain::chain;
use stablerail_types::{config, crypto, payment, telemetry};

pub mod adapter;
