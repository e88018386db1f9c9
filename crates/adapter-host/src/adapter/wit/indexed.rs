//! The versions whose exports are found by index when linked (0.4.0 on):
//! each version's file is its bindings and one `indexed_scheme!` line.
//!
//! bindgen's `AdapterPre::instantiate` looks every export up and checks its
//! type against the host's on each new instance: a fifth of a cold call,
//! for an answer that cannot change, since a component's types are the same
//! in all its instances. Here the exports are found by index when the
//! adapter is linked, their types checked once on the adapter's first
//! instance (`check_types`, before `describe` at load), and each call only
//! looks its function up by that index.
//!
//! The invoking module names `wit3` (0.3.0's types: the asset context) or
//! its own context type, `wit4` (0.4.0's: the signing request), `context`,
//! the host's `types`,
//! `p` and the wasmtime items it uses; `$proof` is the version's
//! `proof-error`, converted into the host's by `From`.

/// A version's `Linked` and `Scheme` over its exports, found by index.
macro_rules! indexed_scheme {
    // 0.4.0 and 0.5.0: 0.3.0's context, the proof as its JSON text.
    (version = $version:literal, proof = $proof:ty) => {
        indexed_scheme!(version = $version, proof = $proof, context = wit3::AssetContext, proof_arg = str);

        /// The proof as these versions take it: its text.
        fn payment_proof(json: &str) -> &str {
            json
        }
    };
    // `context` is the version's asset context, built by the module's
    // `context`; `proof_arg` what `verify` and `settle` take, built from the
    // text by the module's `payment_proof`.
    (version = $version:literal, proof = $proof:ty, context = $ctx:ty, proof_arg = $proof_arg:ty) => {
        indexed_scheme!(@scheme version = $version, proof = $proof, context = $ctx, proof_arg = $proof_arg, [] []);
    };
    // 0.7.0 on: `answer-extra` too.
    (version = $version:literal, proof = $proof:ty, context = $ctx:ty, proof_arg = $proof_arg:ty, answer_extra) => {
        indexed_scheme!(@scheme version = $version, proof = $proof, context = $ctx, proof_arg = $proof_arg, [
            fn answer_extra(
                &self,
                s: S,
                ctx: Context,
                req: &types::PaymentRequirements,
                proof: &str,
                transaction: Option<&str>,
            ) -> Call<Result<Option<String>, types::AdapterError>> {
                self.call_answer_extra(s, &context(ctx), req, &payment_proof(proof), transaction)
            }
        ] [
            call_answer_extra = "answer-extra"(ctx: &'x $ctx, req: &'x types::PaymentRequirements, proof: &'x $proof_arg, transaction: Option<&'x str>) -> Result<Option<String>, types::AdapterError>;
        ]);
    };
    (@scheme version = $version:literal, proof = $proof:ty, context = $ctx:ty, proof_arg = $proof_arg:ty, [$($calls:tt)*] [$($exports:tt)*]) => {
        /// The `scheme` interface this module speaks.
        const INTERFACE: &str = concat!("stablerail:adapter/scheme@", $version);

        struct Pre(InstancePre<HostState>, Indices);

        pub(super) fn link(pre: InstancePre<HostState>) -> wasmtime::Result<Box<dyn Linked>> {
            let indices = Indices::new(pre.component())?;
            Ok(Box::new(Pre(pre, indices)))
        }

        impl Linked for Pre {
            fn instantiate<'a>(&'a self, store: &mut Store<HostState>) -> wasmtime::Result<Box<dyn Scheme + 'a>> {
                let instance = self.0.instantiate(store)?;
                Ok(Box::new(Exports { instance, indices: &self.1 }))
            }
        }

        impl Scheme for Exports<'_> {
            fn check_types(&self, s: S) -> Call<()> {
                self.indices.check(s, &self.instance)
            }

            same_calls!(|me| me, |c| context(c), |text| payment_proof(text));

            fn authorize(&self, s: S, ctx: Context, transfer: &types::Transfer) -> Call<Result<p::SigningRequest, types::AdapterError>> {
                Ok(self.call_authorize(s, &context(ctx), transfer)?.map(|r| match r {
                    wit4::SigningRequest::Eip712Digest(d) => p::SigningRequest::Eip712Digest(d),
                    wit4::SigningRequest::TronRawData(raw) => p::SigningRequest::TronRawData(raw),
                    wit4::SigningRequest::SolanaMessage(m) => p::SigningRequest::SolanaMessage(m),
                }))
            }

            fn prepare_sender(&self, s: S, ctx: Context, sender: &str, amount: &str) -> Call<Result<Vec<types::SettleStep>, types::AdapterError>> {
                self.call_prepare_sender(s, &context(ctx), sender, amount)
            }

            fn assemble(
                &self,
                s: S,
                ctx: Context,
                req: &types::PaymentRequirements,
                transfer: &types::Transfer,
                request: &p::SigningRequest,
                signature: &[u8],
            ) -> Call<Result<String, types::AdapterError>> {
                let request = match request {
                    p::SigningRequest::Eip712Digest(d) => wit4::SigningRequest::Eip712Digest(d.clone()),
                    p::SigningRequest::TronRawData(raw) => wit4::SigningRequest::TronRawData(raw.clone()),
                    p::SigningRequest::SolanaMessage(m) => wit4::SigningRequest::SolanaMessage(m.clone()),
                    p::SigningRequest::TronTxid(_) => wasmtime::bail!(concat!($version, " asks for TRON signatures as tron-raw-data")),
                };
                self.call_assemble(s, &context(ctx), req, transfer, &request, signature)
            }

            $($calls)*
        }


        typed_exports! {
        <'x>
        call_describe = "describe"() -> types::Description;
        call_normalize_address = "normalize-address"(family: types::Family, address: &'x str) -> Result<String, types::AdapterError>;
        call_to_base_units = "to-base-units"(amount: &'x str, decimals: u8) -> Result<String, types::AdapterError>;
        call_requirements = "requirements"(ctx: &'x $ctx, terms: &'x types::Terms) -> Result<types::PaymentRequirements, types::AdapterError>;
        call_verify = "verify"(ctx: &'x $ctx, req: &'x types::PaymentRequirements, proof: &'x $proof_arg) -> Result<types::VerifiedPayment, $proof>;
        call_preflight = "preflight"(ctx: &'x $ctx, payment: &'x types::VerifiedPayment) -> Result<(), $proof>;
        call_settle = "settle"(ctx: &'x $ctx, req: &'x types::PaymentRequirements, proof: &'x $proof_arg) -> Result<Vec<types::SettleStep>, $proof>;
        call_read_receipt = "read-receipt"(ctx: &'x $ctx, payment: &'x types::VerifiedPayment, receipt: &'x str) -> Result<types::ReceiptStatus, types::AdapterError>;
        call_authorize = "authorize"(ctx: &'x $ctx, transfer: &'x types::Transfer) -> Result<wit4::SigningRequest, types::AdapterError>;
        call_prepare_sender = "prepare-sender"(ctx: &'x $ctx, sender: &'x str, amount: &'x str) -> Result<Vec<types::SettleStep>, types::AdapterError>;
        call_assemble = "assemble"(ctx: &'x $ctx, req: &'x types::PaymentRequirements, transfer: &'x types::Transfer, request: &'x wit4::SigningRequest, signature: &'x [u8]) -> Result<String, types::AdapterError>;
        $($exports)*
        }
    };
}
pub(crate) use indexed_scheme;

macro_rules! typed_exports {
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
        pub struct Exports<'a> {
            instance: Instance,
            indices: &'a Indices,
        }

        impl Exports<'_> {
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
pub(crate) use typed_exports;
