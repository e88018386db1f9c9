//! TRON's wire forms, shared by the `tron-permit2` adapter and the host:
//! base58check addresses and the protobuf of a transaction that calls one
//! contract (TriggerSmartContract), with its txID (sha256 of `raw_data`).

pub mod address;
pub mod raw;
