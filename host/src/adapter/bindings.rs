//! Host-side bindings of the `stablerail:adapter` world.

wasmtime::component::bindgen!({
    world: "adapter",
    path: "../wit",
});

pub use exports::stablerail::adapter::scheme;
pub use stablerail::adapter::types;
