//! Chain families: the driver interface and what every family shares
//! (`stablerail-family`), each family's crate, and the drivers this build
//! has.

pub use stablerail_evm as evm;
pub use stablerail_family::family::*;
pub use stablerail_solana as solana;
pub use stablerail_tron as tron;

mod drivers;
pub use drivers::Drivers;
