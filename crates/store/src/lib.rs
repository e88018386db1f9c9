//! stablerail's store: the database and every query on it.

// The vocabulary, under the paths the store's modules use.
use stablerail_types::{clock, config, failure, intent, payment, traces};

pub mod db;
pub mod store;
