//! `stablerail:adapter@0.1.0`: the records and host imports every later
//! version uses. `prepare-sender` answers with EVM calls, which become
//! setup steps labelled by their calldata.

use alloy_primitives::{hex, keccak256};
use wasmtime::component::{HasSelf, InstancePre, Linker};
use wasmtime::Store;

use super::{bindgen_linked, same_calls, types, Call, Context, Linked, Scheme, S};
use crate::adapter::HostState;
use crate::payment as p;

wasmtime::component::bindgen!({
    world: "adapter",
    path: "../../wit",
});

/// Every version imports 0.1.0's interfaces: one linker serves them all.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    Adapter::add_to_linker::<HostState, HasSelf<HostState>>(linker, |s| s)
}

bindgen_linked!();

impl Scheme for Instance {
    same_calls!(|me| me.0.stablerail_adapter_scheme(), |c| *c.asset);

    fn authorize(&self, s: S, ctx: Context, transfer: &types::Transfer) -> Call<Result<p::SigningRequest, types::AdapterError>> {
        Ok(self.0.stablerail_adapter_scheme().call_authorize(s, ctx.asset, transfer)?.map(Into::into))
    }

    fn prepare_sender(&self, s: S, ctx: Context, sender: &str, amount: &str) -> Call<Result<Vec<types::SettleStep>, types::AdapterError>> {
        let calls = self.0.stablerail_adapter_scheme().call_prepare_sender(s, ctx.asset, sender, amount)?;
        Ok(calls.map(|calls| calls.into_iter().map(setup_step).collect()))
    }

    fn assemble(
        &self,
        s: S,
        ctx: Context,
        req: &types::PaymentRequirements,
        transfer: &types::Transfer,
        _request: &p::SigningRequest,
        signature: &[u8],
    ) -> Call<Result<String, types::AdapterError>> {
        self.0.stablerail_adapter_scheme().call_assemble(s, ctx.asset, req, transfer, signature)
    }
}

fn setup_step(call: types::EvmCall) -> types::SettleStep {
    let label = format!("setup:{}", &hex::encode(keccak256(&call.data))[..16]);
    types::SettleStep { label, submission: types::Submission::EvmCall(call) }
}
