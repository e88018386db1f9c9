//! What `vectors.json` (made by the reference package,
//! devnet/vectors/batch-vectors.mjs) proves about this crate: each channel
//! id is the reference's, each signature the reference client, server or
//! facilitator made recovers to its signer over the digest this crate
//! computes, and the payloads read as the reference writes them. Used by
//! the crate's unit test (the committed file) and by the suite (a fresh run
//! of the reference package).

use alloy_primitives::{Address, B256, U256};
use serde_json::Value;

use crate::payload::{self, DepositAuthorization, Payload};
use crate::{
    channel_id, claim_batch_digest, erc3009_digest, erc3009_nonce, permit2_digest, refund_digest, voucher_digest, DepositWitness, Keccak,
    PermitWitnessTransferFrom, ReceiveWithAuthorization, TokenPermissions, ERC3009_COLLECTOR, PERMIT2_COLLECTOR,
};

/// The signer of a 65-byte signature over a digest, if any.
pub type Recover<'a> = &'a dyn Fn(&B256, &[u8]) -> Option<Address>;

/// Every check of the vectors; how many passed, or the first that did not.
pub fn check(v: &Value, keccak: Keccak, recover: Recover) -> Result<usize, String> {
    // Only signatures the contract takes count as recovered.
    let recover = |digest: &B256, sig: &[u8]| if crate::canonical(sig) { recover(digest, sig) } else { None };
    let mut passed = 0;
    let mut expect = |ok: bool, what: String| {
        if ok {
            passed += 1;
            Ok(())
        } else {
            Err(what)
        }
    };
    let chain_id = v["chain_id"].as_u64().ok_or("chain_id")?;
    let address = |s: &Value| s.as_str().and_then(|s| s.parse::<Address>().ok()).ok_or_else(|| format!("not an address: {s}"));
    let authorizer = address(&v["authorizer"])?;

    for c in v["channels"].as_array().ok_or("channels")? {
        let config = payload::config(&c["config"]).map_err(|f| f.code().to_string())?;
        let id = channel_id(keccak, &config, c["chain_id"].as_u64().ok_or("chain_id")?);
        expect(id.to_string() == c["channel_id"].as_str().unwrap_or_default(), format!("channel id of {}", c["config"]))?;
    }

    let token = address(&v["requirements"]["asset"])?;
    let (name, version) = (
        v["requirements"]["extra"]["name"].as_str().unwrap_or_default(),
        v["requirements"]["extra"]["version"].as_str().unwrap_or_default(),
    );
    for (method, p) in v["deposits"].as_object().ok_or("deposits")? {
        let Payload::Deposit { config, voucher, deposit } = payload::parse(p).map_err(|f| format!("{method}: {}", f.code()))? else {
            return Err(format!("{method}: not a deposit"));
        };
        let id = channel_id(keccak, &config, chain_id);
        expect(voucher.channel_id == id, format!("{method}: the voucher's channel"))?;
        let signer = recover(&voucher_digest(keccak, id, voucher.max_claimable, chain_id), &voucher.signature);
        expect(signer == Some(config.payerAuthorizer), format!("{method}: the voucher's signer"))?;
        match deposit.authorization {
            DepositAuthorization::Erc3009 { valid_after, valid_before, salt, signature } => {
                let auth = ReceiveWithAuthorization {
                    from: config.payer,
                    to: ERC3009_COLLECTOR,
                    value: U256::from(deposit.amount),
                    validAfter: valid_after,
                    validBefore: valid_before,
                    nonce: erc3009_nonce(keccak, id, salt),
                };
                let signer = recover(&erc3009_digest(keccak, (name, version, token), chain_id, &auth), &signature);
                expect(signer == Some(config.payer), format!("{method}: the ERC-3009 authorization's signer"))?;
            }
            DepositAuthorization::Permit2 { from, token: permitted, amount, spender, nonce, deadline, witness, signature } => {
                let terms =
                    spender == PERMIT2_COLLECTOR && witness == id && permitted == config.token && amount == U256::from(deposit.amount);
                expect(terms, format!("{method}: terms"))?;
                let permit = PermitWitnessTransferFrom {
                    permitted: TokenPermissions { token: permitted, amount },
                    spender,
                    nonce,
                    deadline,
                    witness: DepositWitness { channelId: witness },
                };
                let signer = recover(&permit2_digest(keccak, chain_id, &permit), &signature);
                expect(signer == Some(from) && from == config.payer, format!("{method}: the Permit2 signer"))?;
            }
        }
    }

    for voucher in v["vouchers"].as_array().ok_or("vouchers")? {
        let config = payload::config(&voucher["config"]).map_err(|f| f.code().to_string())?;
        let id = channel_id(keccak, &config, chain_id);
        expect(id.to_string() == voucher["channelId"].as_str().unwrap_or_default(), "a voucher's channel".into())?;
        let max: u128 = voucher["maxClaimableAmount"].as_str().and_then(|m| m.parse().ok()).ok_or("maxClaimableAmount")?;
        let sig = voucher["signature"].as_str().and_then(|s| s.parse::<alloy_primitives::Bytes>().ok()).ok_or("signature")?;
        let signer = recover(&voucher_digest(keccak, id, max, chain_id), &sig);
        expect(signer == Some(address(&voucher["signer"])?), format!("voucher {max}"))?;
        // One unit more is another digest: not this signer's.
        let other = recover(&voucher_digest(keccak, id, max.wrapping_add(1), chain_id), &sig);
        expect(other != signer, format!("voucher {max} + 1"))?;
    }

    let Payload::Claim { claims, authorizer_signature: Some(sig) } = payload::parse(&v["claim"]).map_err(|f| f.code().to_string())? else {
        return Err("claim: not a signed claim".into());
    };
    expect(recover(&claim_batch_digest(keccak, &claims, chain_id), &sig) == Some(authorizer), "the claim batch's signer".into())?;

    let r = &v["refund"];
    let id: B256 = r["channel_id"].as_str().and_then(|s| s.parse().ok()).ok_or("refund channel")?;
    let nonce = U256::from_str_radix(r["nonce"].as_str().unwrap_or_default(), 10).map_err(|e| e.to_string())?;
    let amount: u128 = r["amount"].as_str().and_then(|a| a.parse().ok()).ok_or("refund amount")?;
    let sig = r["signature"].as_str().and_then(|s| s.parse::<alloy_primitives::Bytes>().ok()).ok_or("refund signature")?;
    expect(recover(&refund_digest(keccak, id, nonce, amount, chain_id), &sig) == Some(authorizer), "the refund's signer".into())?;
    Ok(passed)
}
