//! Every write of a status: an intent's, a facilitator settlement's, a
//! registered swap's (a row's first status included). Each is a
//! compare-and-set on the status it expects. Nothing outside this module
//! writes one (`tests/layers.rs` reads the source), so whatever must follow
//! every change has one place to live.

pub mod intents;
pub mod settlements;
pub mod swaps;
