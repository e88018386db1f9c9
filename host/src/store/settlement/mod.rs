//! The settlement engine's queries, by what they keep: the queue of work,
//! the intents' transitions, and the signed transactions with their nonces.

mod queue;
mod transitions;
mod txs;

pub use queue::*;
pub use transitions::*;
pub use txs::*;
