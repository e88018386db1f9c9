//! The command line's bodies: what each `stablerail` subcommand does, by
//! area. `main.rs` parses and dispatches; nothing in the runtime depends
//! on this module.

pub mod adapter_check;
pub mod adapter_new;
pub mod adapters;
pub mod books;
pub mod devnet;
pub mod directory;
pub mod keys;
pub mod operations;
pub mod store;
