//! `stablerail:adapter@0.4.0`: TRON transfers are signed as their
//! `raw_data` (the host computes the txID itself). Its `scheme` exports are
//! found by index and type-checked once per adapter (`indexed.rs`).

use wasmtime::component::{Component, ComponentExportIndex, Instance, InstancePre, TypedFunc};
use wasmtime::Store;

use super::indexed::{indexed_scheme, typed_exports};
use super::v0_3::context;
use super::{same_calls, types, Call, Context, Linked, Scheme, S};
use crate::adapter::HostState;
use crate::payment as p;

wasmtime::component::bindgen!({
    world: "stablerail:adapter/adapter@0.4.0",
    path: "../../wit/0.4.0",
    with: {
        "stablerail:adapter/types@0.1.0": super::v0_1::stablerail::adapter::types,
        "stablerail:adapter/types@0.2.0": super::v0_2::stablerail::adapter0_2_0::types,
        "stablerail:adapter/types@0.3.0": super::v0_3::stablerail::adapter0_3_0::types,
        "stablerail:adapter/crypto@0.1.0": super::v0_1::stablerail::adapter::crypto,
        "stablerail:adapter/chain@0.1.0": super::v0_1::stablerail::adapter::chain,
        "stablerail:adapter/clock@0.1.0": super::v0_1::stablerail::adapter::clock,
        "stablerail:adapter/log@0.1.0": super::v0_1::stablerail::adapter::log,
    },
});

use self::stablerail::adapter0_4_0::types as wit4;
use super::v0_3::stablerail::adapter0_3_0::types as wit3;

indexed_scheme!(version = "0.4.0", proof = types::ProofError);
