//! The newest interface's `scheme` exports (0.4.0), type-checked once per
//! adapter instead of on every instance.
//!
//! bindgen's `AdapterPre::instantiate` looks every export up and checks its
//! type against the host's on each new instance: a fifth of a cold call,
//! for an answer that cannot change, since a component's types are the same
//! in all its instances. Here the exports are found by index when the
//! adapter is linked, their types checked once on the adapter's first
//! instance (`check`, before `describe` at load), and each call only looks
//! its function up by that index.

use wasmtime::component::{Component, ComponentExportIndex, Instance, TypedFunc};
use wasmtime::Store;

use super::bindings::types as wit;
use super::bindings::v0_3::stablerail::adapter0_3_0::types as wit3;
use super::bindings::v0_4::stablerail::adapter0_4_0::types as wit4;
use super::HostState;

/// The `scheme` interface this module speaks.
const INTERFACE: &str = "stablerail:adapter/scheme@0.4.0";

macro_rules! scheme {
    (<$lt:lifetime> $( $field:ident = $name:literal ( $($arg:ident : $ty:ty),* ) -> $ret:ty ; )*) => {
        /// Where each export is in the component.
        pub struct Indices {
            $( $field: ComponentExportIndex, )*
        }

        impl Indices {
            /// Find every export of the interface; an adapter missing one
            /// does not fit.
            pub fn new(component: &Component) -> wasmtime::Result<Indices> {
                let interface = component
                    .get_export_index(None, INTERFACE)
                    .ok_or_else(|| wasmtime::format_err!("no exported instance named `{INTERFACE}`"))?;
                let find = |name: &str| {
                    component
                        .get_export_index(Some(&interface), name)
                        .ok_or_else(|| wasmtime::format_err!("instance export `{INTERFACE}` does not have export `{name}`"))
                };
                Ok(Indices { $( $field: find($name)?, )* })
            }

            /// Check every export's type against the host's on one instance
            /// of the component; `Scheme`'s calls rely on it.
            // One lifetime for every export's borrowed arguments; `describe` has none.
            #[allow(clippy::extra_unused_lifetimes)]
            pub fn check<$lt>(&self, store: &mut Store<HostState>, instance: &Instance) -> wasmtime::Result<()> {
                $(
                    instance
                        .get_typed_func::<($($ty,)*), ($ret,)>(&mut *store, &self.$field)
                        .map_err(|e| e.context(concat!("export `", $name, "`")))?;
                )*
                Ok(())
            }
        }

        /// One instance's exports.
        pub struct Scheme<'a> {
            pub(super) instance: Instance,
            pub(super) indices: &'a Indices,
        }

        impl Scheme<'_> {
            $(
                #[allow(clippy::extra_unused_lifetimes)]
                pub fn $field<$lt>(&self, store: &mut Store<HostState>, $($arg: $ty),*) -> wasmtime::Result<$ret> {
                    let func = self
                        .instance
                        .get_func(&mut *store, &self.indices.$field)
                        .ok_or_else(|| wasmtime::format_err!(concat!("export `", $name, "` is gone")))?;
                    // SAFETY: `Indices::check` typed this export with these
                    // very parameter and result types on an instance of the
                    // same component (the adapter is not served before it
                    // passed), and a component's types are those of all its
                    // instances.
                    let typed = unsafe { TypedFunc::<($($ty,)*), ($ret,)>::new_unchecked(func) };
                    let (answer,) = typed.call(&mut *store, ($($arg,)*))?;
                    Ok(answer)
                }
            )*
        }
    };
}

scheme! {
    <'x>
    call_describe = "describe"() -> wit::Description;
    call_normalize_address = "normalize-address"(family: wit::Family, address: &'x str) -> Result<String, wit::AdapterError>;
    call_to_base_units = "to-base-units"(amount: &'x str, decimals: u8) -> Result<String, wit::AdapterError>;
    call_requirements = "requirements"(ctx: &'x wit3::AssetContext, terms: &'x wit::Terms) -> Result<wit::PaymentRequirements, wit::AdapterError>;
    call_verify = "verify"(ctx: &'x wit3::AssetContext, req: &'x wit::PaymentRequirements, proof: &'x str) -> Result<wit::VerifiedPayment, wit::ProofError>;
    call_preflight = "preflight"(ctx: &'x wit3::AssetContext, payment: &'x wit::VerifiedPayment) -> Result<(), wit::ProofError>;
    call_settle = "settle"(ctx: &'x wit3::AssetContext, req: &'x wit::PaymentRequirements, proof: &'x str) -> Result<Vec<wit::SettleStep>, wit::ProofError>;
    call_read_receipt = "read-receipt"(ctx: &'x wit3::AssetContext, payment: &'x wit::VerifiedPayment, receipt: &'x str) -> Result<wit::ReceiptStatus, wit::AdapterError>;
    call_authorize = "authorize"(ctx: &'x wit3::AssetContext, transfer: &'x wit::Transfer) -> Result<wit4::SigningRequest, wit::AdapterError>;
    call_prepare_sender = "prepare-sender"(ctx: &'x wit3::AssetContext, sender: &'x str, amount: &'x str) -> Result<Vec<wit::SettleStep>, wit::AdapterError>;
    call_assemble = "assemble"(ctx: &'x wit3::AssetContext, req: &'x wit::PaymentRequirements, transfer: &'x wit::Transfer, request: &'x wit4::SigningRequest, signature: &'x [u8]) -> Result<String, wit::AdapterError>;
}
