//! stablerail's chain transport.

use stablerail_types::{config, telemetry, traces};

pub mod chain;
mod error;
mod pool;
