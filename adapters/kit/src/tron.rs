//! TRON helpers (`tron-wire`, re-exported): base58check addresses (`T…`,
//! the 21 bytes `0x41 ‖ 20-byte address`), a transaction's `raw_data`
//! protobuf, `TriggerSmartContract` calls, and txIDs (sha256 of `raw_data`).
//!
//! ```
//! use stablerail_adapter_kit::tron::address;
//! let usdt = address::parse("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t").unwrap();
//! assert_eq!(address::show(&usdt), "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t");
//! ```

pub use tron_wire::{address, raw};
