//! x402's vocabulary as the facilitator speaks it: the wire bodies of
//! verify, settle and supported, and the reason codes. Below both the
//! facilitator's operations and the engine, which records reasons.

pub mod reason;
pub mod wire;
