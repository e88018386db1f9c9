//! `stablerail:adapter@0.2.0`: 0.1.0's records and imports; the asset
//! context carries the EIP-712 domain as one optional record.

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::{bindgen_linked, same_calls, types, Call, Context, Linked, Scheme, S};
use crate::adapter::HostState;
use crate::payment as p;

wasmtime::component::bindgen!({
    world: "stablerail:adapter/adapter@0.2.0",
    path: "../../wit/0.2.0",
    with: {
        "stablerail:adapter/types@0.1.0": super::v0_1::stablerail::adapter::types,
        "stablerail:adapter/crypto@0.1.0": super::v0_1::stablerail::adapter::crypto,
        "stablerail:adapter/chain@0.1.0": super::v0_1::stablerail::adapter::chain,
        "stablerail:adapter/clock@0.1.0": super::v0_1::stablerail::adapter::clock,
        "stablerail:adapter/log@0.1.0": super::v0_1::stablerail::adapter::log,
    },
});

use self::stablerail::adapter0_2_0::types as wit2;

bindgen_linked!();

impl Scheme for Instance {
    same_calls!(|me| me.0.stablerail_adapter0_2_0_scheme(), |c| context(c.asset));

    fn authorize(&self, s: S, ctx: Context, transfer: &types::Transfer) -> Call<Result<p::SigningRequest, types::AdapterError>> {
        Ok(self.0.stablerail_adapter0_2_0_scheme().call_authorize(s, &context(ctx.asset), transfer)?.map(Into::into))
    }

    fn prepare_sender(&self, s: S, ctx: Context, sender: &str, amount: &str) -> Call<Result<Vec<types::SettleStep>, types::AdapterError>> {
        self.0.stablerail_adapter0_2_0_scheme().call_prepare_sender(s, &context(ctx.asset), sender, amount)
    }

    /// Before 0.3.0 an adapter rebuilt what it asked to be signed from the
    /// transfer.
    fn assemble(
        &self,
        s: S,
        ctx: Context,
        req: &types::PaymentRequirements,
        transfer: &types::Transfer,
        _request: &p::SigningRequest,
        signature: &[u8],
    ) -> Call<Result<String, types::AdapterError>> {
        self.0.stablerail_adapter0_2_0_scheme().call_assemble(s, &context(ctx.asset), req, transfer, signature)
    }
}

/// The host's asset context as 0.2.0 has it: the EIP-712 domain as one
/// optional record.
fn context(c: &types::AssetContext) -> wit2::AssetContext {
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

/// The configured EIP-712 domain, as 0.2.0 and later name it.
pub(super) fn eip712(c: &types::AssetContext) -> Option<wit2::Eip712Domain> {
    let shape = match c.domain {
        types::DomainKind::Standard => wit2::DomainShape::Standard,
        types::DomainKind::Salted => wit2::DomainShape::Salted,
        types::DomainKind::None => return None,
    };
    match (&c.eip712_name, &c.eip712_version) {
        (Some(name), Some(version)) => Some(wit2::Eip712Domain { name: name.clone(), version: version.clone(), shape }),
        _ => None,
    }
}
