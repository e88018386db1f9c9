//! Where adapter interface versions meet the host: every export is called
//! against the version the component was built for, and 0.2.0's own types
//! are converted from and to the host's (0.1.0's records) here and nowhere
//! else.

use alloy_primitives::{hex, keccak256};
use wasmtime::Store;

use super::bindings::types as wit;
use super::bindings::v0_1::exports::stablerail::adapter::scheme::Guest as V0_1;
use super::bindings::v0_2::exports::stablerail::adapter0_2_0::scheme::Guest as V0_2;
use super::bindings::v0_2::stablerail::adapter0_2_0::types as wit2;
use super::HostState;

/// The interface versions this host links, newest last.
pub const VERSIONS: [&str; 2] = ["0.1.0", "0.2.0"];

/// One instance's `scheme` export, at its version.
pub enum Exports<'a> {
    V0_1(&'a V0_1),
    V0_2(&'a V0_2),
}

type S<'a> = &'a mut Store<HostState>;
type Call<T> = wasmtime::Result<T>;

/// Same call, both versions; `$ctx` converted for 0.2.0.
macro_rules! both {
    ($self:ident, $s:ident, $f:ident ( $($arg:expr),* )) => {
        match $self {
            Exports::V0_1(g) => g.$f($s, $($arg),*),
            Exports::V0_2(g) => g.$f($s, $($arg),*),
        }
    };
    ($self:ident, $s:ident, $ctx:ident, $f:ident ( $($arg:expr),* )) => {
        match $self {
            Exports::V0_1(g) => g.$f($s, $ctx, $($arg),*),
            Exports::V0_2(g) => g.$f($s, &context(&$ctx), $($arg),*),
        }
    };
}

impl Exports<'_> {
    pub fn describe(&self, s: S) -> Call<wit::Description> {
        both!(self, s, call_describe())
    }

    pub fn normalize_address(&self, s: S, family: wit::Family, address: &str) -> Call<Result<String, wit::AdapterError>> {
        both!(self, s, call_normalize_address(family, address))
    }

    pub fn to_base_units(&self, s: S, amount: &str, decimals: u8) -> Call<Result<String, wit::AdapterError>> {
        both!(self, s, call_to_base_units(amount, decimals))
    }

    pub fn requirements(&self, s: S, ctx: &wit::AssetContext, terms: &wit::Terms) -> Call<Result<wit::PaymentRequirements, wit::AdapterError>> {
        both!(self, s, ctx, call_requirements(terms))
    }

    pub fn verify(&self, s: S, ctx: &wit::AssetContext, req: &wit::PaymentRequirements, proof: &str) -> Call<Result<wit::VerifiedPayment, wit::ProofError>> {
        both!(self, s, ctx, call_verify(req, proof))
    }

    pub fn preflight(&self, s: S, ctx: &wit::AssetContext, payment: &wit::VerifiedPayment) -> Call<Result<(), wit::ProofError>> {
        both!(self, s, ctx, call_preflight(payment))
    }

    pub fn settle(&self, s: S, ctx: &wit::AssetContext, req: &wit::PaymentRequirements, proof: &str) -> Call<Result<Vec<wit::SettleStep>, wit::ProofError>> {
        both!(self, s, ctx, call_settle(req, proof))
    }

    pub fn read_receipt(&self, s: S, ctx: &wit::AssetContext, payment: &wit::VerifiedPayment, receipt: &str) -> Call<Result<wit::ReceiptStatus, wit::AdapterError>> {
        both!(self, s, ctx, call_read_receipt(payment, receipt))
    }

    pub fn authorize(&self, s: S, ctx: &wit::AssetContext, transfer: &wit::Transfer) -> Call<Result<wit::SigningRequest, wit::AdapterError>> {
        both!(self, s, ctx, call_authorize(transfer))
    }

    /// A wallet's one-time setup as settle steps. 0.1.0 adapters answer
    /// with EVM calls, which become steps labelled by their calldata.
    pub fn prepare_sender(&self, s: S, ctx: &wit::AssetContext, sender: &str, amount: &str) -> Call<Result<Vec<wit::SettleStep>, wit::AdapterError>> {
        match self {
            Exports::V0_1(g) => Ok(g.call_prepare_sender(s, ctx, sender, amount)?.map(|calls| calls.into_iter().map(setup_step).collect())),
            Exports::V0_2(g) => g.call_prepare_sender(s, &context(ctx), sender, amount),
        }
    }

    pub fn assemble(&self, s: S, ctx: &wit::AssetContext, req: &wit::PaymentRequirements, transfer: &wit::Transfer, signature: &[u8]) -> Call<Result<String, wit::AdapterError>> {
        both!(self, s, ctx, call_assemble(req, transfer, signature))
    }
}

fn setup_step(call: wit::EvmCall) -> wit::SettleStep {
    let label = format!("setup:{}", &hex::encode(keccak256(&call.data))[..16]);
    wit::SettleStep { label, submission: wit::Submission::EvmCall(call) }
}

/// The host's asset context as 0.2.0 has it: the EIP-712 domain as one
/// optional record.
fn context(c: &wit::AssetContext) -> wit2::AssetContext {
    let shape = match c.domain {
        wit::DomainKind::Standard => Some(wit2::DomainShape::Standard),
        wit::DomainKind::Salted => Some(wit2::DomainShape::Salted),
        wit::DomainKind::None => None,
    };
    let eip712 = match (&c.eip712_name, &c.eip712_version, shape) {
        (Some(name), Some(version), Some(shape)) => Some(wit2::Eip712Domain { name: name.clone(), version: version.clone(), shape }),
        _ => None,
    };
    wit2::AssetContext {
        chain: c.chain.clone(),
        network: c.network.clone(),
        family: c.family,
        chain_id: c.chain_id,
        asset: c.asset.clone(),
        token: c.token.clone(),
        decimals: c.decimals,
        eip712,
        params: c.params.clone(),
    }
}
