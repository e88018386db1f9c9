//! Host-side bindings of every `stablerail:adapter` version this host
//! links, one module per version. 0.2.0 uses 0.1.0's records and host
//! imports, so both versions share those types and one linker; only their
//! `scheme` exports differ (see `exports.rs`).

pub mod v0_1 {
    wasmtime::component::bindgen!({
        world: "adapter",
        path: "../wit",
    });
}

pub mod v0_2 {
    wasmtime::component::bindgen!({
        world: "stablerail:adapter/adapter@0.2.0",
        path: "../wit/0.2.0",
        with: {
            "stablerail:adapter/types@0.1.0": super::v0_1::stablerail::adapter::types,
            "stablerail:adapter/crypto@0.1.0": super::v0_1::stablerail::adapter::crypto,
            "stablerail:adapter/chain@0.1.0": super::v0_1::stablerail::adapter::chain,
            "stablerail:adapter/clock@0.1.0": super::v0_1::stablerail::adapter::clock,
            "stablerail:adapter/log@0.1.0": super::v0_1::stablerail::adapter::log,
        },
    });
}

pub use v0_1::stablerail::adapter::types;
