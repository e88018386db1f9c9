//! `stablerail-adapter-kit`: the guest SDK for stablerail chain adapters,
//! on the newest interface this host links (`stablerail:adapter@0.7.0`).
//!
//! An adapter is a crate of `crate-type = ["cdylib"]` built for
//! `wasm32-wasip2`. It implements [`Guest`] and exports it:
//!
//! ```ignore
//! use stablerail_adapter_kit::types::*;
//! use stablerail_adapter_kit::Guest;
//!
//! struct MyScheme;
//! impl Guest for MyScheme {
//!     fn describe() -> Description {
//!         Description {
//!             name: "my-scheme".into(),
//!             version: env!("CARGO_PKG_VERSION").into(),
//!             serves: vec![SchemeRef { family: Family::Evm, scheme: "my-scheme".into() }],
//!             config_keys: vec![],
//!         }
//!     }
//!     // requirements, verify, settle, ... (every function of the
//!     // interface; `stablerail adapter new` writes a working set)
//! }
//! stablerail_adapter_kit::export!(MyScheme with_types_in stablerail_adapter_kit::bindings);
//! ```
//!
//! What the kit holds besides the bindings:
//! - [`types`]: every record of the interface under one name, whichever
//!   version introduced it;
//! - [`amount`]: exact decimal amounts and base units (never floats);
//! - [`x402`]: x402 v1 and v2 wire types and the requirements match;
//! - [`evm`]: addresses, EIP-712 domains (standard and salted), EIP-3009 and
//!   Permit2 typed data, signatures, `eth_call`, receipts;
//! - [`solana`]: base58 keys, associated token accounts, v0 messages;
//! - [`tron`]: base58check addresses and a transaction's `raw_data`;
//! - [`chain`]: the typed read-only query to the adapter's own chain, and
//!   [`host`], the other host imports (crypto, clock, log).
//!
//! `stablerail adapter new NAME --family evm` writes a crate that uses it;
//! `stablerail adapter check FILE.wasm --vectors vectors.json` checks what
//! it builds. The interface's compatibility promise is in `wit/README.md`.

/// The generated bindings of `stablerail:adapter@0.7.0` (exports and host
/// imports). Most adapters need only [`types`], [`Guest`] and [`export!`].
#[cfg(feature = "bindings")]
pub mod bindings {
    wit_bindgen::generate!({
        world: "stablerail:adapter/adapter@0.7.0",
        path: "../../wit/0.7.0",
        generate_all,
        pub_export_macro: true,
        default_bindings_module: "stablerail_adapter_kit::bindings",
    });
}

/// Every type of the interface under one name. 0.7.0 keeps 0.1.0's records
/// and replaces three: the asset context (0.6.0's: the EIP-712 domain as one
/// record, the host's relayer and the domain separator), the signing
/// request (0.4.0's) and the proof error (0.7.0's: 0.5.0's smart-wallet
/// refusals and a scheme's own codes); `verify` and `settle` take 0.6.0's
/// `PaymentProof`.
#[cfg(feature = "bindings")]
pub mod types {
    pub use crate::bindings::stablerail::adapter0_1_0::types::*;
    pub use crate::bindings::stablerail::adapter0_2_0::types::{DomainShape, Eip712Domain};
    pub use crate::bindings::stablerail::adapter0_4_0::types::SigningRequest;
    pub use crate::bindings::stablerail::adapter0_6_0::types::{AssetContext, DecodedProof, Eip3009Payload, PaymentProof, ProofPayload};
    pub use crate::bindings::stablerail::adapter0_7_0::types::{ProofError, SchemeRefusal};
}

pub mod amount;
#[cfg(feature = "bindings")]
pub mod chain;
#[cfg(feature = "bindings")]
pub mod evm;
#[cfg(feature = "bindings")]
pub mod host;
pub mod solana;
pub mod tron;
#[cfg(feature = "bindings")]
pub mod x402;

#[cfg(feature = "bindings")]
pub use bindings::export;
#[cfg(feature = "bindings")]
pub use bindings::exports::stablerail::adapter0_7_0::scheme::Guest;

/// A setting of this (chain, asset) from `chains.toml` `params`.
#[cfg(feature = "bindings")]
pub fn param<'a>(ctx: &'a types::AssetContext, key: &str) -> Option<&'a str> {
    ctx.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}
