//! Where adapter interface versions meet the host: every export is called
//! against the version the component was built for, and the later versions'
//! own types are converted from and to the host's (0.1.0's records) here and
//! nowhere else.

use alloy_primitives::{hex, keccak256};
use wasmtime::Store;

use super::bindings::types as wit;
use super::bindings::v0_1::exports::stablerail::adapter::scheme::Guest as V0_1;
use super::bindings::v0_2::exports::stablerail::adapter0_2_0::scheme::Guest as V0_2;
use super::bindings::v0_2::stablerail::adapter0_2_0::types as wit2;
use super::bindings::v0_3::exports::stablerail::adapter0_3_0::scheme::Guest as V0_3;
use super::bindings::v0_3::stablerail::adapter0_3_0::types as wit3;
use super::bindings::v0_4::stablerail::adapter0_4_0::types as wit4;
use super::HostState;
use crate::payment as p;

/// The interface versions this host links, newest last.
pub const VERSIONS: [&str; 4] = ["0.1.0", "0.2.0", "0.3.0", "0.4.0"];

/// One instance's `scheme` export, at its version.
pub enum Exports<'a> {
    V0_1(&'a V0_1),
    V0_2(&'a V0_2),
    V0_3(&'a V0_3),
    V0_4(super::typed::Scheme<'a>),
}

type S<'a> = &'a mut Store<HostState>;

/// What the host knows of one (chain, asset) for a call: the configured
/// context (0.1.0's record) and the host's relayer on that chain, which
/// 0.3.0 adapters are told.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub asset: &'a wit::AssetContext,
    pub relayer: Option<&'a str>,
}

type Call<T> = wasmtime::Result<T>;

/// Same call, every version; `$ctx` converted for 0.2.0 and later.
macro_rules! all {
    ($self:ident, $s:ident, $f:ident ( $($arg:expr),* )) => {
        match $self {
            Exports::V0_1(g) => g.$f($s, $($arg),*),
            Exports::V0_2(g) => g.$f($s, $($arg),*),
            Exports::V0_3(g) => g.$f($s, $($arg),*),
            Exports::V0_4(g) => g.$f($s, $($arg),*),
        }
    };
    ($self:ident, $s:ident, $ctx:ident, $f:ident ( $($arg:expr),* )) => {
        match $self {
            Exports::V0_1(g) => g.$f($s, $ctx.asset, $($arg),*),
            Exports::V0_2(g) => g.$f($s, &context_0_2($ctx.asset), $($arg),*),
            Exports::V0_3(g) => g.$f($s, &context_0_3($ctx), $($arg),*),
            Exports::V0_4(g) => g.$f($s, &context_0_3($ctx), $($arg),*),
        }
    };
}

impl Exports<'_> {
    /// Check the exports' types against the host's where bindgen does not
    /// on every instance (0.4.0, `typed`): once, on an adapter's first.
    pub fn check_types(&self, s: S) -> Call<()> {
        match self {
            Exports::V0_4(g) => g.indices.check(s, &g.instance),
            _ => Ok(()),
        }
    }

    pub fn describe(&self, s: S) -> Call<wit::Description> {
        all!(self, s, call_describe())
    }

    pub fn normalize_address(&self, s: S, family: wit::Family, address: &str) -> Call<Result<String, wit::AdapterError>> {
        all!(self, s, call_normalize_address(family, address))
    }

    pub fn to_base_units(&self, s: S, amount: &str, decimals: u8) -> Call<Result<String, wit::AdapterError>> {
        all!(self, s, call_to_base_units(amount, decimals))
    }

    pub fn requirements(&self, s: S, ctx: Context, terms: &wit::Terms) -> Call<Result<wit::PaymentRequirements, wit::AdapterError>> {
        all!(self, s, ctx, call_requirements(terms))
    }

    pub fn verify(
        &self,
        s: S,
        ctx: Context,
        req: &wit::PaymentRequirements,
        proof: &str,
    ) -> Call<Result<wit::VerifiedPayment, wit::ProofError>> {
        all!(self, s, ctx, call_verify(req, proof))
    }

    pub fn preflight(&self, s: S, ctx: Context, payment: &wit::VerifiedPayment) -> Call<Result<(), wit::ProofError>> {
        all!(self, s, ctx, call_preflight(payment))
    }

    pub fn settle(
        &self,
        s: S,
        ctx: Context,
        req: &wit::PaymentRequirements,
        proof: &str,
    ) -> Call<Result<Vec<wit::SettleStep>, wit::ProofError>> {
        all!(self, s, ctx, call_settle(req, proof))
    }

    pub fn read_receipt(
        &self,
        s: S,
        ctx: Context,
        payment: &wit::VerifiedPayment,
        receipt: &str,
    ) -> Call<Result<wit::ReceiptStatus, wit::AdapterError>> {
        all!(self, s, ctx, call_read_receipt(payment, receipt))
    }

    /// What to sign, as the host has it (0.4.0 has its own variant).
    pub fn authorize(&self, s: S, ctx: Context, transfer: &wit::Transfer) -> Call<Result<p::SigningRequest, wit::AdapterError>> {
        Ok(match self {
            Exports::V0_1(g) => g.call_authorize(s, ctx.asset, transfer)?.map(Into::into),
            Exports::V0_2(g) => g.call_authorize(s, &context_0_2(ctx.asset), transfer)?.map(Into::into),
            Exports::V0_3(g) => g.call_authorize(s, &context_0_3(ctx), transfer)?.map(Into::into),
            Exports::V0_4(g) => g.call_authorize(s, &context_0_3(ctx), transfer)?.map(|r| match r {
                wit4::SigningRequest::Eip712Digest(d) => p::SigningRequest::Eip712Digest(d),
                wit4::SigningRequest::TronRawData(raw) => p::SigningRequest::TronRawData(raw),
                wit4::SigningRequest::SolanaMessage(m) => p::SigningRequest::SolanaMessage(m),
            }),
        })
    }

    /// A wallet's one-time setup as settle steps. 0.1.0 adapters answer
    /// with EVM calls, which become steps labelled by their calldata.
    pub fn prepare_sender(&self, s: S, ctx: Context, sender: &str, amount: &str) -> Call<Result<Vec<wit::SettleStep>, wit::AdapterError>> {
        match self {
            Exports::V0_1(g) => {
                Ok(g.call_prepare_sender(s, ctx.asset, sender, amount)?.map(|calls| calls.into_iter().map(setup_step).collect()))
            }
            Exports::V0_2(g) => g.call_prepare_sender(s, &context_0_2(ctx.asset), sender, amount),
            Exports::V0_3(g) => g.call_prepare_sender(s, &context_0_3(ctx), sender, amount),
            Exports::V0_4(g) => g.call_prepare_sender(s, &context_0_3(ctx), sender, amount),
        }
    }

    /// Before 0.3.0 an adapter rebuilt what it asked to be signed from the
    /// transfer; from 0.3.0 it is handed the request back.
    pub fn assemble(
        &self,
        s: S,
        ctx: Context,
        req: &wit::PaymentRequirements,
        transfer: &wit::Transfer,
        request: &p::SigningRequest,
        signature: &[u8],
    ) -> Call<Result<String, wit::AdapterError>> {
        match self {
            Exports::V0_1(g) => g.call_assemble(s, ctx.asset, req, transfer, signature),
            Exports::V0_2(g) => g.call_assemble(s, &context_0_2(ctx.asset), req, transfer, signature),
            Exports::V0_3(g) => {
                let request = match request {
                    p::SigningRequest::Eip712Digest(d) => wit::SigningRequest::Eip712Digest(d.clone()),
                    p::SigningRequest::TronTxid(d) => wit::SigningRequest::TronTxid(d.clone()),
                    p::SigningRequest::SolanaMessage(m) => wit::SigningRequest::SolanaMessage(m.clone()),
                    p::SigningRequest::TronRawData(_) => wasmtime::bail!("a 0.3.0 adapter cannot be handed tron-raw-data"),
                };
                g.call_assemble(s, &context_0_3(ctx), req, transfer, &request, signature)
            }
            Exports::V0_4(g) => {
                let request = match request {
                    p::SigningRequest::Eip712Digest(d) => wit4::SigningRequest::Eip712Digest(d.clone()),
                    p::SigningRequest::TronRawData(raw) => wit4::SigningRequest::TronRawData(raw.clone()),
                    p::SigningRequest::SolanaMessage(m) => wit4::SigningRequest::SolanaMessage(m.clone()),
                    p::SigningRequest::TronTxid(_) => wasmtime::bail!("0.4.0 asks for TRON signatures as tron-raw-data"),
                };
                g.call_assemble(s, &context_0_3(ctx), req, transfer, &request, signature)
            }
        }
    }
}

fn setup_step(call: wit::EvmCall) -> wit::SettleStep {
    let label = format!("setup:{}", &hex::encode(keccak256(&call.data))[..16]);
    wit::SettleStep { label, submission: wit::Submission::EvmCall(call) }
}

/// The host's asset context as 0.2.0 has it: the EIP-712 domain as one
/// optional record.
fn context_0_2(c: &wit::AssetContext) -> wit2::AssetContext {
    wit2::AssetContext {
        chain: c.chain.clone(),
        network: c.network.clone(),
        family: c.family,
        chain_id: c.chain_id,
        asset: c.asset.clone(),
        token: c.token.clone(),
        decimals: c.decimals,
        eip712: eip712(c),
        params: c.params.clone(),
    }
}

/// 0.3.0's: 0.2.0's and the relayer.
fn context_0_3(c: Context) -> wit3::AssetContext {
    let a = c.asset;
    wit3::AssetContext {
        chain: a.chain.clone(),
        network: a.network.clone(),
        family: a.family,
        chain_id: a.chain_id,
        asset: a.asset.clone(),
        token: a.token.clone(),
        decimals: a.decimals,
        eip712: eip712(a),
        relayer: c.relayer.map(str::to_string),
        params: a.params.clone(),
    }
}

fn eip712(c: &wit::AssetContext) -> Option<wit2::Eip712Domain> {
    let shape = match c.domain {
        wit::DomainKind::Standard => wit2::DomainShape::Standard,
        wit::DomainKind::Salted => wit2::DomainShape::Salted,
        wit::DomainKind::None => return None,
    };
    match (&c.eip712_name, &c.eip712_version) {
        (Some(name), Some(version)) => Some(wit2::Eip712Domain { name: name.clone(), version: version.clone(), shape }),
        _ => None,
    }
}
