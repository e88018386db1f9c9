//! `stablerail:adapter@0.3.0`: 0.2.0's context plus the relayer; `assemble`
//! is handed the signing request back instead of rebuilding it.

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::{bindgen_linked, same_calls, types, Call, Context, Linked, Scheme, S};
use crate::adapter::HostState;
use crate::payment as p;

wasmtime::component::bindgen!({
    world: "stablerail:adapter/adapter@0.3.0",
    path: "../../wit/0.3.0",
    with: {
        "stablerail:adapter/types@0.1.0": super::v0_1::stablerail::adapter::types,
        "stablerail:adapter/types@0.2.0": super::v0_2::stablerail::adapter0_2_0::types,
        "stablerail:adapter/crypto@0.1.0": super::v0_1::stablerail::adapter::crypto,
        "stablerail:adapter/chain@0.1.0": super::v0_1::stablerail::adapter::chain,
        "stablerail:adapter/clock@0.1.0": super::v0_1::stablerail::adapter::clock,
        "stablerail:adapter/log@0.1.0": super::v0_1::stablerail::adapter::log,
    },
});

use self::stablerail::adapter0_3_0::types as wit3;

bindgen_linked!();

impl Scheme for Instance {
    same_calls!(|me| me.0.stablerail_adapter0_3_0_scheme(), |c| context(c));

    fn authorize(&self, s: S, ctx: Context, transfer: &types::Transfer) -> Call<Result<p::SigningRequest, types::AdapterError>> {
        Ok(self.0.stablerail_adapter0_3_0_scheme().call_authorize(s, &context(ctx), transfer)?.map(Into::into))
    }

    fn prepare_sender(&self, s: S, ctx: Context, sender: &str, amount: &str) -> Call<Result<Vec<types::SettleStep>, types::AdapterError>> {
        self.0.stablerail_adapter0_3_0_scheme().call_prepare_sender(s, &context(ctx), sender, amount)
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
            p::SigningRequest::Eip712Digest(d) => types::SigningRequest::Eip712Digest(d.clone()),
            p::SigningRequest::TronTxid(d) => types::SigningRequest::TronTxid(d.clone()),
            p::SigningRequest::SolanaMessage(m) => types::SigningRequest::SolanaMessage(m.clone()),
            p::SigningRequest::TronRawData(_) => wasmtime::bail!("a 0.3.0 adapter cannot be handed tron-raw-data"),
        };
        self.0.stablerail_adapter0_3_0_scheme().call_assemble(s, &context(ctx), req, transfer, &request, signature)
    }
}

/// 0.3.0's context (also 0.4.0's): 0.2.0's and the relayer.
pub(super) fn context(c: Context) -> wit3::AssetContext {
    let a = c.asset;
    wit3::AssetContext {
        chain: a.chain.clone(),
        network: a.network.clone(),
        family: a.family,
        chain_id: a.chain_id,
        asset: a.asset.clone(),
        token: a.token.clone(),
        decimals: a.decimals,
        eip712: super::v0_2::eip712(a),
        relayer: c.relayer.map(str::to_string),
        params: a.params.clone(),
    }
}
