//! The `stablerail:adapter` versions this host links, one file each: its
//! bindings, how a linked component is instantiated, and its `scheme`
//! exports called through the one `Scheme` trait, with the host's records
//! (0.1.0's) converted to that version's here and nowhere else. The next
//! version is one new file, its `mod` line and its row in `LINKS`.

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::HostState;
use crate::payment as p;

mod indexed;
pub mod v0_1;
pub mod v0_2;
pub mod v0_3;
pub mod v0_4;
pub mod v0_5;
pub mod v0_6;
pub mod v0_7;

/// The host's records: 0.1.0's, which every later version uses.
pub use v0_1::stablerail::adapter::types;

type Link = fn(InstancePre<HostState>) -> wasmtime::Result<Box<dyn Linked>>;

/// Every version this host links, oldest first, with how to link it.
const LINKS: [(&str, Link); 7] = [
    ("0.1.0", v0_1::link),
    ("0.2.0", v0_2::link),
    ("0.3.0", v0_3::link),
    ("0.4.0", v0_4::link),
    ("0.5.0", v0_5::link),
    ("0.6.0", v0_6::link),
    ("0.7.0", v0_7::link),
];

/// The interface versions this host links, oldest first.
pub fn versions() -> impl DoubleEndedIterator<Item = &'static str> + ExactSizeIterator {
    LINKS.iter().map(|(v, _)| *v)
}

/// Link a component that exports `version`'s `scheme`.
pub fn link(version: &str, pre: InstancePre<HostState>) -> wasmtime::Result<Box<dyn Linked>> {
    let (_, link) = LINKS.iter().find(|(v, _)| *v == version).ok_or_else(|| wasmtime::format_err!("no interface {version}"))?;
    link(pre)
}

/// A component linked at its version, ready to be instantiated per call.
pub trait Linked: Send + Sync {
    fn instantiate<'a>(&'a self, store: &mut Store<HostState>) -> wasmtime::Result<Box<dyn Scheme + 'a>>;
}

/// What the host knows of one (chain, asset) for a call: the configured
/// context (0.1.0's record), the host's relayer on that chain, which
/// 0.3.0 adapters are told, and the token's EIP-712 domain separator,
/// computed once per asset (`v0_6::domain_separator`), which 0.6.0
/// adapters are told.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub asset: &'a types::AssetContext,
    pub relayer: Option<&'a str>,
    pub domain_separator: Option<&'a [u8; 32]>,
}

pub(crate) type S<'a> = &'a mut Store<HostState>;
pub(crate) type Call<T> = wasmtime::Result<T>;

/// One instance's `scheme` exports, at its version, in the host's records.
pub trait Scheme {
    /// Check the exports' types against the host's where bindgen does not
    /// on every instance (0.4.0): once, on an adapter's first instance.
    fn check_types(&self, _s: S) -> Call<()> {
        Ok(())
    }

    fn describe(&self, s: S) -> Call<types::Description>;

    fn normalize_address(&self, s: S, family: types::Family, address: &str) -> Call<Result<String, types::AdapterError>>;

    fn to_base_units(&self, s: S, amount: &str, decimals: u8) -> Call<Result<String, types::AdapterError>>;

    fn requirements(&self, s: S, ctx: Context, terms: &types::Terms) -> Call<Result<types::PaymentRequirements, types::AdapterError>>;

    fn verify(
        &self,
        s: S,
        ctx: Context,
        req: &types::PaymentRequirements,
        proof: &str,
    ) -> Call<Result<types::VerifiedPayment, p::ProofError>>;

    fn preflight(&self, s: S, ctx: Context, payment: &types::VerifiedPayment) -> Call<Result<(), p::ProofError>>;

    fn settle(
        &self,
        s: S,
        ctx: Context,
        req: &types::PaymentRequirements,
        proof: &str,
    ) -> Call<Result<Vec<types::SettleStep>, p::ProofError>>;

    fn read_receipt(
        &self,
        s: S,
        ctx: Context,
        payment: &types::VerifiedPayment,
        receipt: &str,
    ) -> Call<Result<types::ReceiptStatus, types::AdapterError>>;

    /// What to sign, as the host has it.
    fn authorize(&self, s: S, ctx: Context, transfer: &types::Transfer) -> Call<Result<p::SigningRequest, types::AdapterError>>;

    /// A wallet's one-time setup as settle steps.
    fn prepare_sender(&self, s: S, ctx: Context, sender: &str, amount: &str) -> Call<Result<Vec<types::SettleStep>, types::AdapterError>>;

    /// The `extra` object of a facilitator answer about `proof` (0.7.0):
    /// after a valid verify (`transaction` none) or a settlement that ended
    /// settled. Earlier versions have none.
    fn answer_extra(
        &self,
        _s: S,
        _ctx: Context,
        _req: &types::PaymentRequirements,
        _proof: &str,
        _transaction: Option<&str>,
    ) -> Call<Result<Option<String>, types::AdapterError>> {
        Ok(Ok(None))
    }

    /// The proof from a signature over what `authorize` asked for.
    fn assemble(
        &self,
        s: S,
        ctx: Context,
        req: &types::PaymentRequirements,
        transfer: &types::Transfer,
        request: &p::SigningRequest,
        signature: &[u8],
    ) -> Call<Result<String, types::AdapterError>>;
}

/// The `Scheme` calls every version makes alike: `$guest` is the version's
/// export, `$ctx` turns the host's `Context` into the version's context.
macro_rules! same_calls {
    (|$me:ident| $guest:expr, |$c:ident| $ctx:expr) => {
        same_calls!(|$me| $guest, |$c| $ctx, |text| text);
    };
    // `$proof` turns the proof's text into what the version's `verify`
    // and `settle` take.
    (|$me:ident| $guest:expr, |$c:ident| $ctx:expr, |$text:ident| $proof:expr) => {
        fn describe(&self, s: S) -> Call<types::Description> {
            let $me = self;
            $guest.call_describe(s)
        }

        fn normalize_address(&self, s: S, family: types::Family, address: &str) -> Call<Result<String, types::AdapterError>> {
            let $me = self;
            $guest.call_normalize_address(s, family, address)
        }

        fn to_base_units(&self, s: S, amount: &str, decimals: u8) -> Call<Result<String, types::AdapterError>> {
            let $me = self;
            $guest.call_to_base_units(s, amount, decimals)
        }

        fn requirements(&self, s: S, $c: Context, terms: &types::Terms) -> Call<Result<types::PaymentRequirements, types::AdapterError>> {
            let $me = self;
            $guest.call_requirements(s, &$ctx, terms)
        }

        fn verify(
            &self,
            s: S,
            $c: Context,
            req: &types::PaymentRequirements,
            proof: &str,
        ) -> Call<Result<types::VerifiedPayment, $crate::payment::ProofError>> {
            let $me = self;
            let $text = proof;
            Ok($guest.call_verify(s, &$ctx, req, &$proof)?.map_err(Into::into))
        }

        fn preflight(&self, s: S, $c: Context, payment: &types::VerifiedPayment) -> Call<Result<(), $crate::payment::ProofError>> {
            let $me = self;
            Ok($guest.call_preflight(s, &$ctx, payment)?.map_err(Into::into))
        }

        fn settle(
            &self,
            s: S,
            $c: Context,
            req: &types::PaymentRequirements,
            proof: &str,
        ) -> Call<Result<Vec<types::SettleStep>, $crate::payment::ProofError>> {
            let $me = self;
            let $text = proof;
            Ok($guest.call_settle(s, &$ctx, req, &$proof)?.map_err(Into::into))
        }

        fn read_receipt(
            &self,
            s: S,
            $c: Context,
            payment: &types::VerifiedPayment,
            receipt: &str,
        ) -> Call<Result<types::ReceiptStatus, types::AdapterError>> {
            let $me = self;
            $guest.call_read_receipt(s, &$ctx, payment, receipt)
        }
    };
}
pub(crate) use same_calls;

/// A bindgen'd version's `Linked`: its `AdapterPre`, instantiated per call
/// into an `Instance` that holds the world's exports.
macro_rules! bindgen_linked {
    () => {
        struct Pre(AdapterPre<HostState>);
        struct Instance(Adapter);

        pub(super) fn link(pre: InstancePre<HostState>) -> wasmtime::Result<Box<dyn Linked>> {
            Ok(Box::new(Pre(AdapterPre::new(pre)?)))
        }

        impl Linked for Pre {
            fn instantiate<'a>(&'a self, store: &mut Store<HostState>) -> wasmtime::Result<Box<dyn Scheme + 'a>> {
                Ok(Box::new(Instance(self.0.instantiate(store)?)))
            }
        }
    };
}
pub(crate) use bindgen_linked;
