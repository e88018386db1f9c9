//! Guest-side building blocks shared by stablerail's adapters.
//!
//! Each adapter crate implements `bindings::exports::stablerail::adapter::scheme::Guest`
//! and exports it with `adapter_kit::export!(MyAdapter with_types_in adapter_kit::bindings)`.

pub mod bindings {
    wit_bindgen::generate!({
        world: "adapter",
        path: "../../wit",
        pub_export_macro: true,
        default_bindings_module: "adapter_kit::bindings",
    });
}

pub mod amount;
pub mod evm;
pub mod host;
pub mod x402;

pub use bindings::export;
pub use bindings::exports::stablerail::adapter::scheme::Guest;
pub use bindings::stablerail::adapter::types;
