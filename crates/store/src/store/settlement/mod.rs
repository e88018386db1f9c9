//! The settlement engine's queries, by what they keep: the queue of work
//! and the signed transactions with their nonces. (The intents'
//! transitions are in `store::transition`.)

mod queue;
mod txs;

pub use queue::*;
pub use txs::*;
