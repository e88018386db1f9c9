//! Operations below HTTP, one per verb: typed input, typed output, typed
//! failure. `api/` turns requests into their input and their results into
//! answers; the rules live here.

pub mod create_intent;
