//! Solana addresses and the programs this adapter knows: the kit's.

pub use stablerail_adapter_kit::solana::{ata, is_token_program, Key, Parse, COMPUTE_BUDGET, LIGHTHOUSE, MEMO};
