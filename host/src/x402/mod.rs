//! x402's vocabulary as the facilitator speaks it: the wire bodies of
//! verify, settle and supported, the reason codes, and v1 rewritten into v2
//! at the edge. Below both the facilitator's operations and the engine,
//! which records reasons.

pub mod finished;
pub mod reason;
pub mod scheme;
pub mod v1;
pub mod wire;
