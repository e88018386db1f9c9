//! `stablerail:adapter@0.7.0`, the newest: 0.6.0's exports and
//! `answer-extra`, the `extra` object of a facilitator answer (a scheme's
//! state its resource servers keep, such as batch-settlement's channel).
//! `proof-error` gains `scheme` (a refusal by the scheme's own code); the
//! other types are 0.6.0's; its exports are found by index (`indexed.rs`).

use wasmtime::component::{Component, ComponentExportIndex, Instance, InstancePre, TypedFunc};
use wasmtime::Store;

use super::indexed::{indexed_scheme, typed_exports};
use super::v0_6::{context, payment_proof, wit6};
use super::{same_calls, types, Call, Context, Linked, Scheme, S};
use crate::adapter::HostState;
use crate::payment as p;

wasmtime::component::bindgen!({
    world: "stablerail:adapter/adapter@0.7.0",
    path: "../../wit/0.7.0",
    with: {
        "stablerail:adapter/types@0.1.0": super::v0_1::stablerail::adapter::types,
        "stablerail:adapter/types@0.2.0": super::v0_2::stablerail::adapter0_2_0::types,
        "stablerail:adapter/types@0.4.0": super::v0_4::stablerail::adapter0_4_0::types,
        "stablerail:adapter/types@0.6.0": super::v0_6::stablerail::adapter0_6_0::types,
        "stablerail:adapter/crypto@0.1.0": super::v0_1::stablerail::adapter::crypto,
        "stablerail:adapter/chain@0.1.0": super::v0_1::stablerail::adapter::chain,
        "stablerail:adapter/clock@0.1.0": super::v0_1::stablerail::adapter::clock,
        "stablerail:adapter/log@0.1.0": super::v0_1::stablerail::adapter::log,
    },
});

pub use self::stablerail::adapter0_7_0::types::ProofError;
use super::v0_4::stablerail::adapter0_4_0::types as wit4;

indexed_scheme!(version = "0.7.0", proof = ProofError, context = wit6::AssetContext, proof_arg = wit6::PaymentProof, answer_extra);
