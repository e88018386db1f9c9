//! Operations below HTTP, one per verb: typed input, typed output, typed
//! failure. `api/` turns requests into their input and their results into
//! answers; the rules live here.

pub mod agents;
pub mod balances;
pub mod create_intent;
pub mod execute_intent;
pub mod intent_error;
pub mod payout;
pub mod read_intent;
pub mod signin;
pub mod submit_proof;
pub mod tron_approve;
pub mod webhooks;
