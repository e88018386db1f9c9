//! What the chain proves about a payer's authorization: the transaction
//! that used it when it was not ours (anyone may submit a signed EIP-3009
//! or Permit2 authorization, so a front-runner can land it first), and the
//! one token movement a receipt made under it.
//!
//! Only the authorization's own use counts, never bytes an outsider can
//! copy into calldata:
//! - EIP-3009: the token's `AuthorizationUsed(authorizer, nonce)` log. The
//!   token emits it once per nonce, right before the `Transfer` it makes.
//! - Permit2: the permit's nonce is spent in Permit2's bitmap, and the
//!   transaction's top-level call is the configured x402 proxy settling
//!   exactly this permit (`family::permit2::settles`).

use alloy_primitives::{Address, B256, U256};
use serde_json::{json, Value};

use super::tx;
use crate::family::chain::ChainClient;
use crate::family::{permit2, SendError};
use crate::payment::{Authorization, Movement, VerifiedPayment};

/// keccak256("Transfer(address,address,uint256)")
const TRANSFER: B256 = alloy_primitives::b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");
/// keccak256("AuthorizationUsed(address,bytes32)"), FiatToken's (EIP-3009).
const AUTHORIZATION_USED: B256 = alloy_primitives::b256!("98de503528ee59b575ef0c0a2576a82497bfc029a5685b209e9ec333479b10a5");
/// At most this many blocks are searched back (providers cap log ranges).
const MAX_BLOCKS: u64 = 50_000;
/// Block timestamps are whole seconds, and a node's clock is not ours.
const CLOCK_SKEW_MS: i64 = 30_000;

fn hex_u64(v: &Value) -> Option<u64> {
    u64::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok()
}

fn word(v: &Value) -> Option<B256> {
    v.as_str()?.parse().ok()
}

/// A receipt log's parts: emitter, topics, data as a number and as
/// 32-byte words, index.
struct Log {
    emitter: Option<Address>,
    topics: Vec<B256>,
    value: Option<U256>,
    words: Vec<U256>,
    index: Option<u64>,
}

fn logs(receipt: &Value) -> Vec<Log> {
    let data = |l: &Value| l.get("data").and_then(Value::as_str).and_then(|d| U256::from_str_radix(d.trim_start_matches("0x"), 16).ok());
    receipt
        .get("logs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|l| Log {
            emitter: l.get("address").and_then(Value::as_str).and_then(|a| a.parse().ok()),
            topics: l.get("topics").and_then(Value::as_array).map(|t| t.iter().filter_map(word).collect()).unwrap_or_default(),
            value: data(l),
            words: words(l),
            index: l.get("logIndex").and_then(hex_u64),
        })
        .collect()
}

/// A log's data as 32-byte words; none if it is not whole words of hex.
fn words(l: &Value) -> Vec<U256> {
    let Some(data) = l.get("data").and_then(Value::as_str).and_then(|d| alloy_primitives::hex::decode(d).ok()) else { return vec![] };
    if data.len() % 32 != 0 {
        return vec![];
    }
    data.chunks(32).map(U256::from_be_slice).collect()
}

fn is_transfer(l: &Log, token: Address, from: Address, to: Address) -> bool {
    l.emitter == Some(token)
        && l.topics.len() == 3
        && l.topics[0] == TRANSFER
        && l.topics[1] == from.into_word()
        && l.topics[2] == to.into_word()
}

/// The addresses a search compares, parsed once.
pub struct Parties {
    pub token: Address,
    pub from: Address,
    pub to: Address,
    pub amount: U256,
}

impl Parties {
    pub fn of(token: &str, payment: &VerifiedPayment) -> Result<Parties, SendError> {
        let address = |a: &str| a.parse::<Address>().map_err(|_| SendError::Unsupported(format!("{a} is not an EVM address")));
        let amount = U256::from_str_radix(&payment.amount, 10).map_err(|_| SendError::Unsupported("bad amount".into()))?;
        Ok(Parties { token: address(token)?, from: address(&payment.payer)?, to: address(&payment.pay_to)?, amount })
    }
}

/// Where a Permit2 authorization is settled: the asset's Permit2 and
/// exact proxy (its params, else the canonical addresses).
pub struct Permit2At {
    pub permit2: Address,
    pub proxy: Address,
}

/// Transactions mined since `since_ms` that used `auth` to move `p`,
/// oldest first, whoever sent them. An authorization whose use the chain
/// cannot prove (`Authorization::Own`) finds none.
pub async fn transfers(
    chain: &ChainClient,
    block_time_ms: u64,
    p: &Parties,
    auth: &Authorization,
    at: &Permit2At,
    since_ms: i64,
) -> Result<Vec<String>, SendError> {
    // Fresh, never the memo: a transfer mined a moment ago must be seen.
    let head = chain.head(std::time::Duration::ZERO).await.map_err(|e| SendError::Unavailable(e.to_string()))?;
    let elapsed = (crate::clock::now_ms() - since_ms).max(0) as u64;
    let back = (elapsed / block_time_ms.max(1) + 64).min(MAX_BLOCKS);
    let range = |topics: Value| json!([{ "address": p.token, "fromBlock": format!("{:#x}", head.saturating_sub(back)), "toBlock": format!("{head:#x}"), "topics": topics }]);
    // Mined since the payment was made (less the clock's skew): an older
    // use is another payment's, replayed, not a front-run of this one.
    let hashes = |found: Value| async move {
        let mut out: Vec<String> = vec![];
        let mut blocks: Vec<(Value, bool)> = vec![];
        for log in found.as_array().into_iter().flatten() {
            let (Some(h), Some(number)) = (log.get("transactionHash").and_then(Value::as_str), log.get("blockNumber")) else { continue };
            if out.iter().any(|o| o == h) {
                continue;
            }
            let recent = match blocks.iter().find(|(n, _)| n == number) {
                Some((_, recent)) => *recent,
                None => {
                    let block = tx::rpc(chain, "eth_getBlockByNumber", json!([number, false])).await?;
                    let mined_ms = block.get("timestamp").and_then(hex_u64).map(|t| t as i64 * 1000);
                    let recent = mined_ms.is_some_and(|t| t + CLOCK_SKEW_MS >= since_ms);
                    blocks.push((number.clone(), recent));
                    recent
                }
            };
            if recent {
                out.push(h.to_string());
            }
        }
        Ok::<_, SendError>(out)
    };
    match auth {
        Authorization::Eip3009 { authorizer, nonce } => {
            if authorizer.parse::<Address>().ok() != Some(p.from) {
                return Ok(vec![]);
            }
            let topics = json!([AUTHORIZATION_USED, p.from.into_word(), B256::from(*nonce)]);
            hashes(tx::rpc(chain, "eth_getLogs", range(topics)).await?).await
        }
        Authorization::Permit2(a) => {
            let Ok(nonce) = U256::from_str_radix(&a.nonce, 10) else { return Ok(vec![]) };
            // Unspent in Permit2's bitmap: nobody used it, so nothing to read.
            let (query, bit) = permit2::bitmap_query(p.from, nonce);
            let call = json!([{ "to": at.permit2, "data": alloy_primitives::hex::encode_prefixed(query) }, "latest"]);
            let word = tx::rpc(chain, "eth_call", call).await?;
            let word = word.as_str().and_then(|w| U256::from_str_radix(w.trim_start_matches("0x"), 16).ok()).unwrap_or_default();
            if word & bit == U256::ZERO {
                return Ok(vec![]);
            }
            let topics = json!([TRANSFER, p.from.into_word(), p.to.into_word()]);
            let mut out = vec![];
            for hash in hashes(tx::rpc(chain, "eth_getLogs", range(topics)).await?).await? {
                let sent = tx::rpc(chain, "eth_getTransactionByHash", json!([hash])).await?;
                let to = sent.get("to").and_then(Value::as_str).and_then(|t| t.parse::<Address>().ok());
                let input =
                    sent.get("input").and_then(Value::as_str).and_then(|i| alloy_primitives::hex::decode(i).ok()).unwrap_or_default();
                if to == Some(at.proxy) && permit2::settles(&input, a, |s| s.parse().ok()) {
                    out.push(hash);
                }
            }
            Ok(out)
        }
        // An ERC-3009 deposit's authorization leaves its own event,
        // whoever sent it: the transaction that used it made the deposit
        // (`batch_movements` pairs it with its `Deposited`).
        Authorization::BatchSettlement(crate::payment::BatchStep::Deposit { nonce: Some(nonce), .. }) => {
            let topics = json!([AUTHORIZATION_USED, p.from.into_word(), B256::from(*nonce)]);
            hashes(tx::rpc(chain, "eth_getLogs", range(topics)).await?).await
        }
        // Only the service's own transaction of any other batch-settlement
        // step is credited (decisions.md: a step landed by another sender).
        Authorization::Own | Authorization::BatchSettlement(_) => Ok(vec![]),
    }
}

/// The movements a confirmed receipt may credit to the payment `p` made
/// under `auth`, the one the chain pairs with it first: for EIP-3009 the
/// Transfer right after its `AuthorizationUsed` (exactly one, or none);
/// otherwise each Transfer of the amount from payer to payTo, for the books
/// to give the first one no other payment holds.
pub fn movements(receipt: &Value, p: &Parties, auth: &Authorization) -> Vec<Movement> {
    let Some(tx) = receipt.get("transactionHash").and_then(Value::as_str) else { return vec![] };
    let block = receipt.get("blockNumber").and_then(hex_u64).unwrap_or(0) as i64;
    let fee = match (receipt.get("gasUsed").and_then(hex_u64), receipt.get("effectiveGasPrice").and_then(Value::as_str)) {
        (Some(gas), Some(price)) => {
            U256::from_str_radix(price.trim_start_matches("0x"), 16).ok().map(|p| (p * U256::from(gas)).to_string())
        }
        _ => None,
    };
    let all = logs(receipt);
    let movement = |l: &Log| Movement {
        tx: tx.to_ascii_lowercase(),
        index: l.index.unwrap_or(0) as i64,
        token: p.token.to_checksum(None),
        from: p.from.to_checksum(None),
        to: p.to.to_checksum(None),
        amount: l.value.unwrap_or_default().to_string(),
        block,
        fee: fee.clone(),
    };
    let paid = |l: &Log| is_transfer(l, p.token, p.from, p.to) && l.value == Some(p.amount);
    match auth {
        Authorization::BatchSettlement(step) => batch_movements(&all, step, p, &movement),
        Authorization::Eip3009 { nonce, .. } => {
            authorization_used(&all, p, nonce).and_then(|k| all.get(k + 1)).filter(|l| paid(l)).map(movement).into_iter().collect()
        }
        _ => all.iter().filter(|l| paid(l)).map(movement).collect(),
    }
}

/// Where the token logs `AuthorizationUsed(payer, nonce)`: the use of this
/// EIP-3009 authorization, by whatever call.
fn authorization_used(all: &[Log], p: &Parties, nonce: &[u8; 32]) -> Option<usize> {
    all.iter().position(|l| {
        l.emitter == Some(p.token)
            && l.topics.len() == 3
            && l.topics[0] == AUTHORIZATION_USED
            && l.topics[1] == p.from.into_word()
            && l.topics[2] == B256::from(*nonce)
    })
}

/// A batch-settlement step's movements: the settlement contract's own
/// events in this receipt. A deposit moves the payer's tokens into the
/// escrow (`Deposited` of this channel and exactly this amount); a claim
/// moves value inside the escrow, to the receiver's claimed total
/// (`Claimed` of one of the claim's rows: its channel, to its total); a
/// sweep pays the receiver (`Settled` to it, of this token) and a refund the payer (`Refunded` of
/// this channel), each of the amount the event says.
fn batch_movements(all: &[Log], step: &crate::payment::BatchStep, p: &Parties, movement: &dyn Fn(&Log) -> Movement) -> Vec<Movement> {
    use crate::payment::BatchStep;
    use alloy_sol_types::SolEvent;
    use batch_wire::{Claimed, Deposited, Refunded, Settled, SETTLEMENT};
    let of = |l: &Log, sig: B256, topics: usize| l.emitter == Some(SETTLEMENT) && l.topics.len() == topics && l.topics[0] == sig;
    let at = |l: &Log, from: Address, to: Address| Movement {
        from: from.to_checksum(None),
        to: to.to_checksum(None),
        amount: l.words.first().copied().unwrap_or_default().to_string(),
        ..movement(l)
    };
    let deposited = |l: &Log, channel: &[u8; 32]| {
        of(l, Deposited::SIGNATURE_HASH, 3) && l.topics[1] == B256::from(*channel) && l.words.len() == 2 && l.words[0] == p.amount
    };
    if let BatchStep::Deposit { channel, nonce: Some(nonce) } = step {
        // The first `Deposited` after the token's `AuthorizationUsed` of
        // this deposit's own authorization (the collector's call), and
        // only if it is this channel's of this amount.
        let used = authorization_used(all, p, nonce);
        let next = used.and_then(|k| all[k + 1..].iter().find(|l| of(l, Deposited::SIGNATURE_HASH, 3)));
        return next.filter(|l| deposited(l, channel)).map(|l| at(l, p.from, SETTLEMENT)).into_iter().collect();
    }
    all.iter()
        .filter_map(|l| match step {
            BatchStep::Deposit { channel, .. } => deposited(l, channel).then(|| at(l, p.from, SETTLEMENT)),
            BatchStep::Claim { rows } => (of(l, Claimed::SIGNATURE_HASH, 3)
                && l.words.len() == 2
                && rows.iter().any(|(c, total)| l.topics[1] == B256::from(*c) && l.words[1] == U256::from(*total)))
            .then(|| at(l, SETTLEMENT, p.to)),
            BatchStep::Settle => (of(l, Settled::SIGNATURE_HASH, 4)
                && l.topics[1] == p.to.into_word()
                && l.topics[2] == p.token.into_word()
                && l.words.len() == 1)
                .then(|| at(l, SETTLEMENT, p.to)),
            BatchStep::Refund { channel } => {
                (of(l, Refunded::SIGNATURE_HASH, 3) && l.topics[1] == B256::from(*channel) && l.words.len() == 1)
                    .then(|| at(l, SETTLEMENT, p.to))
            }
        })
        .collect()
}

/// How routers name the native coin: it moves in no Transfer log.
fn is_native(token: &Address) -> bool {
    token.is_zero() || *token == alloy_primitives::address!("EeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE")
}

/// What a receipt's Transfer logs of `token` took from `from`, summed;
/// `None` when `token` is not an ERC-20 address (a native coin).
pub fn debited(receipt: &Value, token: &str, from: &str) -> Option<U256> {
    let (token, from): (Address, Address) = (token.parse().ok()?, from.parse().ok()?);
    if is_native(&token) {
        return None;
    }
    let mut total = U256::ZERO;
    for l in logs(receipt) {
        if l.emitter == Some(token) && l.topics.len() == 3 && l.topics[0] == TRANSFER && l.topics[1] == from.into_word() {
            total += l.value.unwrap_or_default();
        }
    }
    Some(total)
}

/// What a receipt's Transfer logs of `token` paid `to`, summed.
pub fn credited(receipt: &Value, token: &str, to: &str) -> Option<U256> {
    let (token, to): (Address, Address) = (token.parse().ok()?, to.parse().ok()?);
    if is_native(&token) {
        return None;
    }
    let mut total = U256::ZERO;
    for l in logs(receipt) {
        if l.emitter == Some(token) && l.topics.first() == Some(&TRANSFER) && l.topics.get(2) == Some(&to.into_word()) {
            total += l.value.unwrap_or_default();
        }
    }
    Some(total)
}

/// `wallet`'s balance of `token` as of `block` (`balanceOf` at that block).
pub async fn balance_at(chain: &ChainClient, token: &str, wallet: &str, block: u64) -> Result<U256, SendError> {
    let wallet: Address = wallet.parse().map_err(|_| SendError::Unsupported(format!("{wallet} is not an EVM address")))?;
    // balanceOf(address)
    let mut data = alloy_primitives::hex!("70a08231").to_vec();
    data.extend_from_slice(wallet.into_word().as_slice());
    let call = json!([{ "to": token, "data": alloy_primitives::hex::encode_prefixed(data) }, format!("{block:#x}")]);
    let answer = tx::rpc(chain, "eth_call", call).await?;
    answer
        .as_str()
        .and_then(|w| U256::from_str_radix(w.trim_start_matches("0x"), 16).ok())
        .ok_or_else(|| SendError::Unavailable(format!("balanceOf answered {answer}")))
}

/// Every Transfer of `token` into or out of `wallet` in blocks `from..=to`,
/// read in ranges a provider accepts, oldest first.
pub async fn wallet_movements(chain: &ChainClient, token: &str, wallet: &str, from: u64, to: u64) -> Result<Vec<Movement>, SendError> {
    const RANGE: u64 = 5_000;
    let token_at: Address = token.parse().map_err(|_| SendError::Unsupported(format!("{token} is not an EVM address")))?;
    let wallet: Address = wallet.parse().map_err(|_| SendError::Unsupported(format!("{wallet} is not an EVM address")))?;
    let mut out: Vec<Movement> = vec![];
    let (mut start, mut span) = (from, RANGE);
    'ranges: while start <= to {
        let end = (start + span - 1).min(to);
        let mut found = vec![];
        for topics in [json!([TRANSFER, Value::Null, wallet.into_word()]), json!([TRANSFER, wallet.into_word()])] {
            let filter =
                json!([{ "address": token_at, "fromBlock": format!("{start:#x}"), "toBlock": format!("{end:#x}"), "topics": topics }]);
            match tx::rpc(chain, "eth_getLogs", filter).await {
                Ok(logs) => found.extend(logs.as_array().cloned().unwrap_or_default()),
                // A provider that refuses a range (too many logs: a flood
                // of spam transfers) is asked for half of it.
                Err(_) if span > 1 => {
                    span /= 2;
                    continue 'ranges;
                }
                Err(e) => return Err(e),
            }
        }
        for log in &found {
            let topic = |k: usize| log.pointer(&format!("/topics/{k}")).and_then(word).map(Address::from_word);
            let (Some(from), Some(to), Some(tx), Some(index), Some(block)) = (
                topic(1),
                topic(2),
                log.get("transactionHash").and_then(Value::as_str),
                log.get("logIndex").and_then(hex_u64),
                log.get("blockNumber").and_then(hex_u64),
            ) else {
                continue;
            };
            let amount = log.get("data").and_then(Value::as_str).and_then(|d| U256::from_str_radix(d.trim_start_matches("0x"), 16).ok());
            // Nothing moved (anyone may log a zero `transferFrom` of any
            // wallet); a transfer of the wallet to itself is read once.
            let seen = out.iter().any(|m| m.tx.eq_ignore_ascii_case(tx) && m.index == index as i64);
            let Some(amount) = amount.filter(|a| !a.is_zero() && !seen) else { continue };
            out.push(Movement {
                tx: tx.to_ascii_lowercase(),
                index: index as i64,
                token: token_at.to_checksum(None),
                from: from.to_checksum(None),
                to: to.to_checksum(None),
                amount: amount.to_string(),
                block: block as i64,
                fee: None,
            });
        }
        start = end + 1;
        span = RANGE;
    }
    out.sort_by_key(|m| (m.block, m.index));
    Ok(out)
}
