//! The service's unit tests: its rules and helpers, checked without a chain
//! or a server. They live here, not beside the code, so the library is
//! compiled once for the service and every test (a `#[cfg(test)]` module
//! would build it a second time, as its own test binary). Each module is
//! named for the source file it checks.

mod adapter;
mod chains;
mod config;
mod crypto;
mod heap;
mod limits;
mod rules;
mod store;
mod swap;
mod x402;
