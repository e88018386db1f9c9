//! Host-side bindings of every `stablerail:adapter` version this host
//! links, one module per version. Later versions use 0.1.0's records and
//! host imports (0.3.0 also 0.2.0's EIP-712 domain, 0.4.0 also 0.3.0's
//! asset context), so all versions share
//! those types and one linker; only their `scheme` exports differ (see
//! `exports.rs`).

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

pub mod v0_3 {
    wasmtime::component::bindgen!({
        world: "stablerail:adapter/adapter@0.3.0",
        path: "../wit/0.3.0",
        with: {
            "stablerail:adapter/types@0.1.0": super::v0_1::stablerail::adapter::types,
            "stablerail:adapter/types@0.2.0": super::v0_2::stablerail::adapter0_2_0::types,
            "stablerail:adapter/crypto@0.1.0": super::v0_1::stablerail::adapter::crypto,
            "stablerail:adapter/chain@0.1.0": super::v0_1::stablerail::adapter::chain,
            "stablerail:adapter/clock@0.1.0": super::v0_1::stablerail::adapter::clock,
            "stablerail:adapter/log@0.1.0": super::v0_1::stablerail::adapter::log,
        },
    });
}

pub mod v0_4 {
    wasmtime::component::bindgen!({
        world: "stablerail:adapter/adapter@0.4.0",
        path: "../wit/0.4.0",
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
}

pub use v0_1::stablerail::adapter::types;
