//! stablerail's chain transport.

use stablerail_types::{config, telemetry};

pub mod chain;
mod error;
mod pool;
