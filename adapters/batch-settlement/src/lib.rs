//! The x402 `batch-settlement` scheme on EVM
//! (`scheme_batch_settlement_evm.md`): a payer deposits into a channel of
//! the settlement contract once, then signs a cumulative voucher per
//! request; the resource server's channel manager claims many channels in
//! one `claimWithSignature`, sweeps what is claimed to the receiver with
//! `settle`, and returns the rest with `refundWithSignature`.
//!
//! Written with `stablerail-adapter-kit` on `batch-wire` (the scheme's typed
//! data, payloads and the spec's verification rules), as a third party
//! would: enabled by an `[adapters]` entry and an asset with
//! `x402_scheme = "batch-settlement"` in chains.toml. Every refusal the
//! spec names is answered with its code (0.7.0's `proof-error::scheme`);
//! answers carry the channel's state in `extra` (0.7.0's `answer-extra`).
//!
//! The facilitator signs no receiver-authorizer signature here: a claim or
//! a refund must carry the resource server's own, and one without it is
//! refused (`authorizer_not_configured`), as the spec says of a
//! facilitator that advertises no `receiverAuthorizer`.
//!
//! What each payload is to the host (`verify`'s payment):
//! - `deposit`: the payer's tokens into the escrow; replay key the
//!   authorization's nonce; settled by one `deposit` call;
//! - `voucher` (and a refund's voucher at `/verify`): checked only, never
//!   settled (the channel manager claims it);
//! - `claim`: what the batch claims beyond what is claimed, keyed by the
//!   batch's digest; `settle`: the receiver's claimed and unsettled total,
//!   keyed by that total; `refund`: to the payer, keyed by the channel's
//!   refund nonce.

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use batch_wire::payload::{self, DepositAuthorization, Fault, Payload, SignedVoucher};
use batch_wire::rules::{self, Kind, Signer, Terms};
use batch_wire::{
    ChannelConfig, ChannelState, DepositWitness, PermitWitnessTransferFrom, ReceiveWithAuthorization, TokenPermissions, VoucherClaim,
    ERC3009_COLLECTOR, MAX_CLAIM_ROWS, PERMIT2, PERMIT2_COLLECTOR, SETTLEMENT,
};
use serde_json::{json, Value};
use stablerail_adapter_kit::amount::base_units;
use stablerail_adapter_kit::evm::{self, payer, permit2};
use stablerail_adapter_kit::types::{
    AdapterError, AssetContext, Description, EvmCall, Family, PaymentProof, PaymentRequirements, ProofError, ReceiptStatus, SchemeRef,
    SchemeRefusal, SettleStep, SettledTransfer, SigningRequest, Submission, Terms as HostTerms, Transfer, VerifiedPayment,
};
use stablerail_adapter_kit::x402::{decode_payload, AmountRule, PaymentPayload, VALIDITY_MARGIN_SECS};
use stablerail_adapter_kit::{host, Guest};

const SCHEME: &str = "batch-settlement";

fn keccak(data: &[u8]) -> [u8; 32] {
    host::keccak256(data)
}

/// Only signatures the contract takes (v 27/28, low s) recover.
fn recover(digest: &B256, signature: &[u8]) -> Option<Address> {
    batch_wire::canonical(signature).then(|| evm::recover(digest, signature).ok()).flatten()
}

/// A refusal by the spec's code; `detail` goes to the host's log only.
fn refused(f: Fault, detail: impl Into<String>) -> ProofError {
    ProofError::Scheme(SchemeRefusal { code: f.code().into(), detail: detail.into() })
}

/// A check's refusal as the spec's `f`, except an outage, which stays one
/// (the host answers it as unavailable and retries; never "bad signature").
fn or_refused(f: Fault) -> impl Fn(ProofError) -> ProofError {
    move |e| match e {
        ProofError::ChainUnavailable(_) => e,
        other => refused(f, format!("{other:?}")),
    }
}

fn checksum(a: &Address) -> String {
    evm::checksum(a)
}

/// The proof, decoded and answering the requirements.
struct Proof {
    payload: Payload,
    chain_id: u64,
    token: Address,
    pay_to: Address,
    extra: Value,
}

fn decode(ctx: &AssetContext, req: &PaymentRequirements, proof: &PaymentProof) -> Result<Proof, ProofError> {
    // A route's price is a ceiling: the server settles a deposit under the
    // requirements of what the request used (at most what was accepted).
    let p: PaymentPayload<Value> = decode_payload(&proof.json, req, evm::same_address, AmountRule::AtMost)?;
    let chain_id = ctx.chain_id.ok_or_else(|| ProofError::Unsupported(format!("{}: chain id is not set", ctx.chain)))?;
    let token = evm::parse_address(&ctx.token).map_err(ProofError::Unsupported)?;
    let pay_to = evm::parse_address(&req.pay_to).map_err(ProofError::Malformed)?;
    let payload = payload::parse(&p.payload).map_err(|f| refused(f, "payload"))?;
    let extra = serde_json::from_str(&req.extra).unwrap_or(Value::Null);
    Ok(Proof { payload, chain_id, token, pay_to, extra })
}

impl Proof {
    /// The terms a channel must match: `extra.receiverAuthorizer` and
    /// `extra.withdrawDelay` (where named). A route's requirements always
    /// name the authorizer; the channel manager's (a refund it completed)
    /// name none, and then `signed_by` stands for it: the authorizer whose
    /// signature the caller checks itself.
    fn terms(&self, signed_by: Option<Address>) -> Result<Terms, ProofError> {
        let named = match self.extra.get("receiverAuthorizer") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(|a| evm::parse_address(a).ok())
                    .ok_or_else(|| refused(Fault::ReceiverAuthorizerMismatch, "extra.receiverAuthorizer is not an address"))?,
            ),
        };
        let receiver_authorizer =
            named.or(signed_by).ok_or_else(|| refused(Fault::ReceiverAuthorizerMismatch, "the requirements name no receiverAuthorizer"))?;
        let withdraw_delay = match self.extra.get("withdrawDelay") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                    .ok_or_else(|| refused(Fault::WithdrawDelayMismatch, "extra.withdrawDelay is not a number"))?,
            ),
        };
        Ok(Terms { chain_id: self.chain_id, asset: self.token, pay_to: self.pay_to, receiver_authorizer, withdraw_delay })
    }
}

/// The channel's state on chain.
fn channel_state(id: B256) -> Result<ChannelState, ProofError> {
    let [a, b, c] = batch_wire::state_calls(id);
    let answers = [evm::eth_call(&SETTLEMENT, a)?, evm::eth_call(&SETTLEMENT, b)?, evm::eth_call(&SETTLEMENT, c)?];
    ChannelState::decode([&answers[0], &answers[1], &answers[2]]).map_err(|e| ProofError::ChainUnavailable(format!("channel state: {e}")))
}

/// A voucher the rules left to the payer's own signature: ECDSA for an
/// account, EIP-1271 for a contract, as the contract checks it.
fn payer_signed(signer: Signer, id: B256, voucher: &SignedVoucher, chain_id: u64) -> Result<(), ProofError> {
    let Signer::Payer(payer) = signer else { return Ok(()) };
    let digest = batch_wire::voucher_digest(&keccak, id, voucher.max_claimable, chain_id);
    if payer::has_code(&payer)? {
        return payer::erc1271(&payer, &digest, &voucher.signature).map_err(or_refused(Fault::VoucherSignature));
    }
    if recover(&digest, &voucher.signature) != Some(payer) {
        return Err(refused(Fault::VoucherSignature, "not the payer's signature"));
    }
    Ok(())
}

/// A voucher against its channel: the spec's rules 1–10 and the signer.
fn check_voucher(p: &Proof, config: &ChannelConfig, voucher: &SignedVoucher, kind: Kind) -> Result<(B256, ChannelState), ProofError> {
    check_voucher_under(p, p.terms(None)?, config, voucher, kind)
}

fn check_voucher_under(
    p: &Proof,
    terms: Terms,
    config: &ChannelConfig,
    voucher: &SignedVoucher,
    kind: Kind,
) -> Result<(B256, ChannelState), ProofError> {
    let state = channel_state(voucher.channel_id)?;
    let (id, signer) = rules::check(&keccak, &recover, &terms, config, voucher, &state, kind).map_err(|f| refused(f, "voucher"))?;
    payer_signed(signer, id, voucher, p.chain_id)?;
    Ok((id, state))
}

/// What one proof comes to, with what its settlement calls.
struct Checked {
    payment: VerifiedPayment,
    /// The settlement contract's call, where the payload settles.
    call: Option<(&'static str, Vec<u8>)>,
}

fn payment(payer: &Address, pay_to: &Address, amount: u128, replay_key: String, valid: (u64, u64)) -> VerifiedPayment {
    VerifiedPayment {
        payer: checksum(payer),
        pay_to: checksum(pay_to),
        amount: amount.to_string(),
        valid_after: valid.0,
        valid_before: valid.1,
        replay_key,
    }
}

fn seconds(v: U256) -> u64 {
    v.try_into().unwrap_or(u64::MAX)
}

fn check(ctx: &AssetContext, req: &PaymentRequirements, proof: &PaymentProof) -> Result<Checked, ProofError> {
    let p = decode(ctx, req, proof)?;
    match &p.payload {
        Payload::Deposit { config, voucher, deposit } => check_deposit(ctx, &p, config, voucher, deposit),
        Payload::Voucher { config, voucher } => {
            let (id, _) = check_voucher(&p, config, voucher, Kind::Voucher)?;
            let key = format!("{SCHEME}:voucher:{id}:{}", voucher.max_claimable);
            Ok(Checked { payment: payment(&config.payer, &config.receiver, 0, key, (0, 0)), call: None })
        }
        Payload::Refund { config, voucher, amount, completion } => {
            // A completed refund is checked against the channel's own
            // authorizer, whose signature it must carry (below).
            let signed_by = completion.refund_nonce.map(|_| config.receiverAuthorizer);
            let (id, state) = check_voucher_under(&p, p.terms(signed_by)?, config, voucher, Kind::Refund)?;
            // At `/verify` the payer's request; at `/settle` the server's
            // completion of it, which the contract checks as it is sent.
            let Some(nonce) = completion.refund_nonce else {
                let key = format!("{SCHEME}:refund-request:{id}:{}", voucher.max_claimable);
                return Ok(Checked { payment: payment(&config.payer, &config.receiver, 0, key, (0, 0)), call: None });
            };
            let amount = amount.ok_or_else(|| refused(Fault::RefundAmountInvalid, "a refund to settle names its amount"))?;
            let signature = completion
                .refund_authorizer_signature
                .clone()
                .ok_or_else(|| refused(Fault::AuthorizerNotConfigured, "no refundAuthorizerSignature"))?;
            if nonce != state.refund_nonce {
                return Err(refused(Fault::RefundNonce, format!("nonce {nonce}, the channel's is {}", state.refund_nonce)));
            }
            let digest = batch_wire::refund_digest(&keccak, id, nonce, amount, p.chain_id);
            if recover(&digest, &signature) != Some(config.receiverAuthorizer) {
                return Err(refused(Fault::AuthorizerAddressMismatch, "refund not signed by the receiver authorizer"));
            }
            // Claims first (the vouchers charged and not yet claimed), then
            // the refund of what is left, up to the amount signed.
            let claimed = completion
                .claims
                .iter()
                .filter(|c| batch_wire::channel_id(&keccak, &c.voucher.channel, p.chain_id) == id)
                .map(|c| c.totalClaimed)
                .fold(state.total_claimed, u128::max);
            let left = state.balance.saturating_sub(claimed);
            if left == 0 {
                return Err(refused(Fault::RefundNoBalance, "nothing left to refund"));
            }
            // Never more than is left once this payload's claims are made:
            // the refund's signature alone (seen in the mempool, or kept
            // from a batch that reverted) then cannot take back what the
            // claims are for. The contract would only cap it at what is
            // unclaimed at the moment it runs.
            if amount > left {
                return Err(refused(Fault::RefundAmountInvalid, format!("{amount} asked, {left} left to refund")));
            }
            let paid = amount;
            let refund = batch_wire::refund_call(config.clone(), amount, nonce, signature.to_vec());
            let call = if completion.claims.is_empty() {
                refund
            } else if completion.claims.len() > MAX_CLAIM_ROWS {
                return Err(refused(Fault::RefundPayload, format!("{} claim rows; at most {MAX_CLAIM_ROWS}", completion.claims.len())));
            } else {
                let claim = claim_call(&p, &completion.claims, completion.claim_authorizer_signature.as_ref().map(|s| &s[..]))?;
                batch_wire::multicall(vec![claim, refund])
            };
            let key = format!("{SCHEME}:refund:{id}:{nonce}");
            Ok(Checked { payment: payment(&SETTLEMENT, &config.payer, paid, key, (0, 0)), call: Some(("refund", call)) })
        }
        Payload::Claim { claims, authorizer_signature } => {
            if claims.len() > MAX_CLAIM_ROWS {
                return Err(refused(Fault::ClaimPayload, format!("{} rows; at most {MAX_CLAIM_ROWS}", claims.len())));
            }
            let call = claim_call(&p, claims, authorizer_signature.as_ref().map(|s| &s[..]))?;
            // What this batch claims beyond what each channel has claimed
            // (a channel's highest row counts; the contract refuses a row
            // above the channel's balance, and so does this).
            let mut highest: Vec<(B256, u128)> = vec![];
            for c in claims {
                let id = batch_wire::channel_id(&keccak, &c.voucher.channel, p.chain_id);
                match highest.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, t)) => *t = (*t).max(c.totalClaimed),
                    None => highest.push((id, c.totalClaimed)),
                }
            }
            let mut amount = 0u128;
            for (id, total) in highest {
                let state = channel_state(id)?;
                if total > state.balance {
                    return Err(refused(Fault::CumulativeExceedsBalance, "a row claims above its channel's balance"));
                }
                amount = amount.saturating_add(total.saturating_sub(state.total_claimed));
            }
            if amount == 0 {
                return Err(refused(Fault::NothingToClaim, "every row is claimed already"));
            }
            let digest = batch_wire::claim_batch_digest(&keccak, claims, p.chain_id);
            let key = format!("{SCHEME}:claim:{digest}");
            Ok(Checked { payment: payment(&p.pay_to, &p.pay_to, amount, key, (0, 0)), call: Some(("claim", call)) })
        }
        Payload::Settle { receiver, token } => {
            if *receiver != p.pay_to {
                return Err(refused(Fault::ReceiverMismatch, "settle names another receiver than payTo"));
            }
            if *token != p.token {
                return Err(refused(Fault::TokenMismatch, "settle names another token"));
            }
            let out = evm::eth_call(&SETTLEMENT, batch_wire::receiversCall { receiver: *receiver, token: *token }.abi_encode())?;
            let totals = batch_wire::receiversCall::abi_decode_returns_validate(&out)
                .map_err(|e| ProofError::ChainUnavailable(format!("receivers answer: {e}")))?;
            if totals.totalClaimed <= totals.totalSettled {
                return Err(refused(Fault::NothingToSettle, "nothing claimed and unsettled"));
            }
            let amount = totals.totalClaimed - totals.totalSettled;
            // One sweep per claimed total: a repeat of the same sweep is the same settlement.
            let key = format!("{SCHEME}:settle:{receiver:#x}:{token:#x}:{}", totals.totalClaimed);
            let call = batch_wire::settle_call(*receiver, *token);
            Ok(Checked { payment: payment(&SETTLEMENT, receiver, amount, key, (0, 0)), call: Some(("settle", call)) })
        }
    }
}

/// A claim batch the receiver authorizer signed, every row of this route's
/// token and receiver, each voucher signed by its payer's side.
fn claim_call(p: &Proof, claims: &[VoucherClaim], signature: Option<&[u8]>) -> Result<Vec<u8>, ProofError> {
    let signature = signature.ok_or_else(|| refused(Fault::AuthorizerNotConfigured, "no claimAuthorizerSignature"))?;
    let digest = batch_wire::claim_batch_digest(&keccak, claims, p.chain_id);
    let signer = recover(&digest, signature);
    for c in claims {
        let config = &c.voucher.channel;
        if config.token != p.token {
            return Err(refused(Fault::TokenMismatch, "a claimed channel is of another token"));
        }
        if config.receiver != p.pay_to {
            return Err(refused(Fault::ReceiverMismatch, "a claimed channel pays another receiver"));
        }
        if signer != Some(config.receiverAuthorizer) {
            return Err(refused(Fault::AuthorizerAddressMismatch, "claim batch not signed by the receiver authorizer"));
        }
        if c.totalClaimed > c.voucher.maxClaimableAmount {
            return Err(refused(Fault::ClaimPayload, "a row claims above its voucher"));
        }
        let id = batch_wire::channel_id(&keccak, config, p.chain_id);
        let voucher = SignedVoucher { channel_id: id, max_claimable: c.voucher.maxClaimableAmount, signature: c.signature.clone() };
        let signer = if config.payerAuthorizer != Address::ZERO {
            let digest = batch_wire::voucher_digest(&keccak, id, voucher.max_claimable, p.chain_id);
            if recover(&digest, &voucher.signature) != Some(config.payerAuthorizer) {
                return Err(refused(Fault::VoucherSignature, "a claimed voucher is not its payer authorizer's"));
            }
            Signer::Checked
        } else {
            Signer::Payer(config.payer)
        };
        payer_signed(signer, id, &voucher, p.chain_id)?;
    }
    Ok(batch_wire::claim_call(claims.to_vec(), signature.to_vec()))
}

fn check_deposit(
    ctx: &AssetContext,
    p: &Proof,
    config: &ChannelConfig,
    voucher: &SignedVoucher,
    deposit: &payload::Deposit,
) -> Result<Checked, ProofError> {
    let (id, _) = check_voucher(p, config, voucher, Kind::Deposit(deposit.amount))?;
    let amount = U256::from(deposit.amount);
    let now = host::now();
    let (collector, data, key, valid) = match &deposit.authorization {
        DepositAuthorization::Erc3009 { valid_after, valid_before, salt, signature } => {
            let nonce = batch_wire::erc3009_nonce(&keccak, id, *salt);
            let auth = ReceiveWithAuthorization {
                from: config.payer,
                to: ERC3009_COLLECTOR,
                value: amount,
                validAfter: *valid_after,
                validBefore: *valid_before,
                nonce,
            };
            let separator = evm::token_separator(ctx).map_err(|e| ProofError::Unsupported(format!("{e:?}")))?;
            let digest = evm::digest(&auth, &separator);
            payer::check_deployed(&digest, signature, &config.payer).map_err(or_refused(Fault::ReceiveAuthorizationSignature))?;
            if *valid_after > U256::from(now) {
                return Err(refused(Fault::ValidAfter, "not valid yet"));
            }
            if *valid_before < U256::from(now + VALIDITY_MARGIN_SECS) {
                return Err(refused(Fault::ValidBefore, "expired"));
            }
            let used = evm::eth_call(&p.token, evm::eip3009::authorizationStateCall { authorizer: config.payer, nonce }.abi_encode())?;
            if evm::eip3009::authorizationStateCall::abi_decode_returns(&used).unwrap_or(true) {
                return Err(ProofError::AlreadyUsed);
            }
            let data = batch_wire::erc3009_collector_data(*valid_after, *valid_before, *salt, signature);
            (ERC3009_COLLECTOR, data, format!("eip3009:{:#x}:{nonce}", config.payer), (seconds(*valid_after), seconds(*valid_before)))
        }
        DepositAuthorization::Permit2 { from, token, amount: permitted, spender, nonce, deadline, witness, signature } => {
            if *from != config.payer {
                return Err(refused(Fault::Permit2InvalidSignature, "the permit is not the payer's"));
            }
            if *token != p.token {
                return Err(refused(Fault::TokenMismatch, "the permit is for another token"));
            }
            if *permitted != amount {
                return Err(refused(Fault::Permit2AmountMismatch, "the permit is for another amount"));
            }
            if *spender != PERMIT2_COLLECTOR {
                return Err(refused(Fault::Permit2InvalidSpender, "the permit's spender is not the Permit2 collector"));
            }
            if *witness != id {
                return Err(refused(Fault::ChannelIdMismatch, "the permit funds another channel"));
            }
            if *deadline < U256::from(now + VALIDITY_MARGIN_SECS) {
                return Err(refused(Fault::Permit2DeadlineExpired, "deadline passed"));
            }
            let permit = PermitWitnessTransferFrom {
                permitted: TokenPermissions { token: *token, amount },
                spender: *spender,
                nonce: *nonce,
                deadline: *deadline,
                witness: DepositWitness { channelId: id },
            };
            let digest = batch_wire::permit2_digest(&keccak, p.chain_id, &permit);
            payer::check_deployed(&digest, signature, &config.payer).map_err(or_refused(Fault::Permit2InvalidSignature))?;
            let key = permit2::replay_key(&ctx.network, &PERMIT2, &config.payer, *nonce);
            permit2::check_unused(&PERMIT2, config.payer, &key)?;
            if evm::allowance_of(&p.token, config.payer, PERMIT2)? < amount {
                return Err(refused(Fault::Permit2AllowanceRequired, "Permit2 is not allowed the deposit"));
            }
            let data = batch_wire::permit2_collector_data(*nonce, *deadline, signature, &[]);
            (PERMIT2_COLLECTOR, data, key, (0, seconds(*deadline)))
        }
    };
    if evm::balance_of(&p.token, config.payer)? < amount {
        return Err(refused(Fault::InsufficientBalance, "the payer's balance is below the deposit"));
    }
    let call = batch_wire::deposit_call(config.clone(), deposit.amount, collector, data);
    Ok(Checked { payment: payment(&config.payer, &config.receiver, deposit.amount, key, valid), call: Some(("deposit", call)) })
}

/// The channel state an answer carries about the proof's channel: at
/// `/verify` the snapshot itself; after a deposit or a refund settled,
/// under `channelState`. Claims and sweeps answer none.
fn extra(ctx: &AssetContext, req: &PaymentRequirements, proof: &PaymentProof, settled: bool) -> Result<Option<Value>, ProofError> {
    let p = decode(ctx, req, proof)?;
    let (config, kind) = match &p.payload {
        Payload::Deposit { config, .. } => (config, "deposit"),
        Payload::Voucher { config, .. } => (config, "voucher"),
        Payload::Refund { config, .. } => (config, "refund"),
        Payload::Claim { .. } | Payload::Settle { .. } => return Ok(None),
    };
    let id = batch_wire::channel_id(&keccak, config, p.chain_id);
    let state = channel_state(id)?.to_json(id);
    Ok(Some(match (settled, kind) {
        (false, _) => state,
        (true, "voucher") => return Ok(None),
        (true, _) => json!({ "channelState": state }),
    }))
}

fn unsupported<T>(what: &str) -> Result<T, AdapterError> {
    Err(AdapterError::Unsupported(format!("batch-settlement: {what}")))
}

struct BatchSettlement;

impl Guest for BatchSettlement {
    fn describe() -> Description {
        Description {
            name: SCHEME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            serves: vec![SchemeRef { family: Family::Evm, scheme: SCHEME.into() }],
            config_keys: vec![],
        }
    }

    fn answer_extra(
        ctx: AssetContext,
        requirements: PaymentRequirements,
        proof: PaymentProof,
        transaction: Option<String>,
    ) -> Result<Option<String>, AdapterError> {
        extra(&ctx, &requirements, &proof, transaction.is_some()).map(|e| e.map(|v| v.to_string())).map_err(evm::as_adapter_error)
    }

    fn normalize_address(family: Family, address: String) -> Result<String, AdapterError> {
        evm::normalize(family, &address)
    }

    fn to_base_units(amount: String, decimals: u8) -> Result<String, AdapterError> {
        base_units(&amount, decimals)
    }

    /// A channel's requirements are the resource server's (its receiver
    /// authorizer, withdrawal delay, deposit hint); intents pay `exact`.
    fn requirements(_: AssetContext, _: HostTerms) -> Result<PaymentRequirements, AdapterError> {
        unsupported("requirements are written by the resource server's scheme")
    }

    fn verify(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<VerifiedPayment, ProofError> {
        check(&ctx, &requirements, &proof).map(|c| c.payment)
    }

    /// `verify` read the chain already (the channel, the balance, the nonce).
    fn preflight(_: AssetContext, _: VerifiedPayment) -> Result<(), ProofError> {
        Ok(())
    }

    /// One call of the settlement contract; a voucher settles nothing (it is
    /// claimed in a batch later).
    fn settle(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<Vec<SettleStep>, ProofError> {
        let c = check(&ctx, &requirements, &proof)?;
        let (label, data) = c.call.ok_or_else(|| refused(Fault::PayloadType, "a voucher is claimed, not settled"))?;
        let call = EvmCall { to: checksum(&SETTLEMENT), data, value: "0".into(), gas_limit: None };
        Ok(vec![SettleStep { label: label.into(), submission: Submission::EvmCall(call) }])
    }

    /// Mined and not reverted, with the settlement contract's event: the
    /// host's books then take the event itself as the step's movement.
    fn read_receipt(_: AssetContext, payment: VerifiedPayment, receipt: String) -> Result<ReceiptStatus, AdapterError> {
        let bad = |m: &str| AdapterError::Malformed(format!("receipt: {m}"));
        let r: Value = serde_json::from_str(&receipt).map_err(|e| bad(&e.to_string()))?;
        if r.is_null() {
            return Ok(ReceiptStatus::Pending);
        }
        let number = |k: &str| r.get(k).and_then(Value::as_str).and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
        let tx_hash = r.get("transactionHash").and_then(Value::as_str).ok_or_else(|| bad("no transactionHash"))?.to_string();
        if number("status") != Some(1) {
            return Ok(ReceiptStatus::Failed(format!("transaction {tx_hash} reverted")));
        }
        let block = number("blockNumber").ok_or_else(|| bad("no blockNumber"))?;
        let from_settlement = r.get("logs").and_then(Value::as_array).is_some_and(|logs| {
            logs.iter().any(|l| l.get("address").and_then(Value::as_str).is_some_and(|a| evm::same_address(a, &checksum(&SETTLEMENT))))
        });
        if !from_settlement {
            return Ok(ReceiptStatus::Failed(format!("transaction {tx_hash} has no event of the settlement contract")));
        }
        Ok(ReceiptStatus::Settled(SettledTransfer { tx_hash, to: payment.pay_to, amount: payment.amount, block }))
    }

    fn authorize(_: AssetContext, _: Transfer) -> Result<SigningRequest, AdapterError> {
        unsupported("host-held wallets pay with exact")
    }

    fn prepare_sender(_: AssetContext, _: String, _: String) -> Result<Vec<SettleStep>, AdapterError> {
        Ok(vec![])
    }

    fn assemble(_: AssetContext, _: PaymentRequirements, _: Transfer, _: SigningRequest, _: Vec<u8>) -> Result<String, AdapterError> {
        unsupported("host-held wallets pay with exact")
    }
}

stablerail_adapter_kit::export!(BatchSettlement with_types_in stablerail_adapter_kit::bindings);
