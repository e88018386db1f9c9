//! stablerail's payment vocabulary: what every layer above (the store, the
//! adapter host, the chain families, the engine, the web) speaks.

pub mod cached;
pub mod clock;
pub mod config;
pub mod crypto;
pub mod decimal;
pub mod facts;
pub mod failure;
pub mod intent;
pub mod payment;
pub mod pepper;
pub mod sanctions;
pub mod secret_file;
pub mod telemetry;
pub mod traces;
