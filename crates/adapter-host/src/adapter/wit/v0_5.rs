//! `stablerail:adapter@0.5.0`, the newest: payers that are contracts.
//! `proof-error` gains `undeployed-smart-wallet` and `factory-not-allowed`
//! (ERC-6492 wallets); the rest is 0.4.0's, and so are its exports' shapes
//! (`indexed.rs`).

use wasmtime::component::{Component, ComponentExportIndex, Instance, InstancePre, TypedFunc};
use wasmtime::Store;

use super::indexed::{indexed_scheme, typed_exports};
use super::v0_3::context;
use super::{same_calls, types, Call, Context, Linked, Scheme, S};
use crate::adapter::HostState;
use crate::payment as p;

wasmtime::component::bindgen!({
    world: "stablerail:adapter/adapter@0.5.0",
    path: "../../wit/0.5.0",
    with: {
        "stablerail:adapter/types@0.1.0": super::v0_1::stablerail::adapter::types,
        "stablerail:adapter/types@0.2.0": super::v0_2::stablerail::adapter0_2_0::types,
        "stablerail:adapter/types@0.3.0": super::v0_3::stablerail::adapter0_3_0::types,
        "stablerail:adapter/types@0.4.0": super::v0_4::stablerail::adapter0_4_0::types,
        "stablerail:adapter/crypto@0.1.0": super::v0_1::stablerail::adapter::crypto,
        "stablerail:adapter/chain@0.1.0": super::v0_1::stablerail::adapter::chain,
        "stablerail:adapter/clock@0.1.0": super::v0_1::stablerail::adapter::clock,
        "stablerail:adapter/log@0.1.0": super::v0_1::stablerail::adapter::log,
    },
});

pub use self::stablerail::adapter0_5_0::types::ProofError;
use super::v0_3::stablerail::adapter0_3_0::types as wit3;
use super::v0_4::stablerail::adapter0_4_0::types as wit4;

// Its proof-error becomes the host's in `convert.rs`, with 0.1.0's.
indexed_scheme!(version = "0.5.0", proof = ProofError);
