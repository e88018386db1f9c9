//! What every chain family shares: the driver interface the engine calls,
//! the keystore and its roles, and Permit2's shared reading.

use stablerail_store::{db, store};
use stablerail_types::{clock, config, crypto, payment, secret_file};

pub mod family;
