//! What the host checks in a swap provider's route before a hosted wallet
//! signs it, and before `/api/swap/quote` hands it to a user: every
//! contract it names is on the chain's `swap_contracts`, native value goes
//! along only when the native coin is what is swapped (exactly that
//! amount), and on EVM chains its effect, simulated on the chain from the
//! wallet, is what was asked. A provider gone bad (compromised, spoofed,
//! a mistyped URL) gets `Refused`, and nothing is signed.

use alloy_primitives::{b256, Address, B256, U256};
use serde_json::{json, Value};

use super::route::{Route, RouteTx};
use super::{SwapChain, SwapError, Swaps};

/// `Transfer(address,address,uint256)`; `eth_simulateV1` reports native
/// transfers with it too, from the 0xEeee… pseudo-address.
const TRANSFER: B256 = b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");
/// `Approval(address,address,uint256)`.
const APPROVAL: B256 = b256!("8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925");

/// Programs every Solana swap transaction may call besides the
/// provider's: compute budget, system, both token programs, and
/// associated token accounts.
const SOLANA_BASE_PROGRAMS: [&str; 5] = [
    "ComputeBudget111111111111111111111111111111",
    "11111111111111111111111111111111",
    "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
    "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
    crate::family::solana::ata::PROGRAM,
];

/// What the user asked of a swap.
pub struct Asked<'a> {
    /// The wallet that signs and pays.
    pub wallet: &'a str,
    pub from_token: &'a str,
    /// The most of the input that may leave the wallet.
    pub max_input: U256,
    pub to_token: &'a str,
    /// Same-chain: who receives the output, and the least that must arrive.
    /// `None` across chains (the output arrives elsewhere, later).
    pub output: Option<(&'a str, U256)>,
}

fn refused(why: impl Into<String>) -> SwapError {
    SwapError::Refused(why.into())
}

/// The contracts a hosted wallet may touch for swaps on `chain`.
fn known<'a>(swaps: &'a Swaps, chain: &str) -> &'a [String] {
    swaps.config.chains.get(chain).map_or(&[], |c| c.swap_contracts.as_slice())
}

/// Whether `address` is on `chain`'s list (EVM and TRON compare the
/// 20-byte address, whatever its spelling; Solana the base58 key).
pub fn is_known(swaps: &Swaps, chain: &SwapChain, address: &str) -> bool {
    let list = known(swaps, &chain.name);
    let facts = chain.family.facts();
    list.iter().any(|k| facts.same_account(k, address))
}

/// The spender a route asks the wallet to approve must be a known contract.
pub fn check_spender(swaps: &Swaps, chain: &SwapChain, spender: &str) -> Result<(), SwapError> {
    if is_known(swaps, chain, spender) {
        return Ok(());
    }
    Err(refused(format!("{}: approval to {spender}, not a known swap contract", chain.name)))
}

/// The route's static shape: known contracts, and value only with a native input.
pub fn check_route(swaps: &Swaps, from: &SwapChain, route: &Route, asked: &Asked<'_>) -> Result<(), SwapError> {
    let native_input = from.family.facts().address20(asked.from_token).is_some_and(|t| from.family.facts().is_native(&t));
    if let (Some(spender), false) = (&route.approval_address, native_input) {
        check_spender(swaps, from, spender)?;
    }
    match &route.transaction {
        None => Ok(()),
        Some(RouteTx::Evm { to, value, .. }) => {
            if !is_known(swaps, from, to) {
                return Err(refused(format!("{}: the swap calls {to}, not a known swap contract", from.name)));
            }
            let value = value.as_deref().map_or(Some(U256::ZERO), |v| U256::from_str_radix(v.trim_start_matches("0x"), 16).ok());
            let wanted = if native_input { asked.max_input } else { U256::ZERO };
            if value != Some(wanted) {
                return Err(refused(format!("{}: the swap sends {value:?} wei along, not {wanted}", from.name)));
            }
            Ok(())
        }
        Some(RouteTx::Tron { to, .. }) if is_known(swaps, from, to) => Ok(()),
        Some(RouteTx::Tron { to, .. }) => Err(refused(format!("{}: the swap calls {to}, not a known swap contract", from.name))),
        Some(RouteTx::Solana { transaction, .. }) => {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(transaction)
                .map_err(|_| SwapError::Unavailable("swap transaction is not base64".into()))?;
            let programs = crate::family::solana::wire::Wire::parse(&bytes)
                .and_then(|w| w.program_ids())
                .ok_or_else(|| refused(format!("{}: the swap transaction cannot be read", from.name)))?;
            for program in programs {
                let program = bs58::encode(program).into_string();
                if !SOLANA_BASE_PROGRAMS.contains(&program.as_str()) && !is_known(swaps, from, &program) {
                    return Err(refused(format!("{}: the swap calls program {program}, not a known swap program", from.name)));
                }
            }
            Ok(())
        }
    }
}

/// One call of a simulated EVM bundle.
#[derive(Clone)]
pub struct EvmCall {
    pub to: Address,
    pub data: Vec<u8>,
    pub value: U256,
}

/// How a simulated bundle that reverts is judged.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OnRevert {
    /// A hosted wallet is about to sign: a revert is refused.
    Refuse,
    /// A user's quote: a bundle that reverts (the user does not hold the
    /// input yet) moves nothing, so it says nothing against the route.
    Pass,
}

/// Simulate `calls` from the wallet, in order, in one block on top of the
/// chain's head (`eth_simulateV1` with transfers traced), and check what
/// they do to the wallet: only the input token leaves, at most
/// `max_input`; it goes only to known contracts across chains; no
/// allowance is granted to an unknown spender or beyond `max_input`; the
/// output arrives (same chain); the gas stays under the cap. Answers the
/// token events it read and the gas the calls used, for a caller with more
/// to check (nothing when a revert passed).
pub async fn simulate_evm(
    swaps: &Swaps,
    from: &SwapChain,
    calls: &[EvmCall],
    asked: &Asked<'_>,
    on_revert: OnRevert,
) -> Result<Simulated, SwapError> {
    let wallet: Address = asked.wallet.parse().map_err(|_| SwapError::WalletNotReady)?;
    let client = swaps.client(&from.name)?;
    let bundle: Vec<Value> = calls
        .iter()
        .map(|c| {
            json!({
                "from": wallet,
                "to": c.to,
                "input": alloy_primitives::hex::encode_prefixed(&c.data),
                "value": format!("{:#x}", c.value),
            })
        })
        .collect();
    let params = json!([{ "blockStateCalls": [{ "calls": bundle }], "traceTransfers": true, "validation": false }, "latest"]);
    let answer = match client.rpc("eth_simulateV1", params).await {
        Ok(v) => v,
        // A node that cannot simulate cannot vouch for the route: fail closed.
        Err(e @ crate::family::chain::ChainError::Node { .. }) => {
            return Err(refused(format!("{}: the node cannot simulate the swap: {e}", from.name)))
        }
        Err(e) => return Err(SwapError::Unavailable(format!("{}: {e}", from.name))),
    };
    let results = answer.pointer("/0/calls").and_then(Value::as_array).ok_or_else(|| refused("simulation answered without calls"))?;
    if results.len() != calls.len() {
        return Err(refused("simulation answered for another number of calls"));
    }
    if results.iter().any(|r| r.get("status").and_then(Value::as_str) != Some("0x1")) {
        return match on_revert {
            OnRevert::Refuse => Err(refused(format!("{}: the swap reverts in simulation", from.name))),
            OnRevert::Pass => Ok(Simulated::default()),
        };
    }
    let gas: u64 = results
        .iter()
        .filter_map(|r| r.get("gasUsed").and_then(Value::as_str))
        .filter_map(|g| u64::from_str_radix(g.trim_start_matches("0x"), 16).ok())
        .sum();
    if gas > swaps.config.swap.max_gas {
        return Err(refused(format!("{}: the swap uses {gas} gas, above swap.max_gas", from.name)));
    }
    let logs = results.iter().flat_map(|r| r.get("logs").and_then(Value::as_array).into_iter().flatten());
    let events: Vec<Event> = logs.filter_map(Event::of).collect();
    check_events(swaps, from, wallet, events.iter().cloned(), asked)?;
    Ok(Simulated { events, gas })
}

/// What a simulated bundle did.
#[derive(Debug, Default)]
pub struct Simulated {
    pub events: Vec<Event>,
    /// Gas used by all its calls.
    pub gas: u64,
}

/// What a simulated swap's token events may show of the wallet (EVM and
/// TRON, whose TRC-20 events are ERC-20's): only the input token leaves it,
/// at most `max_input`; across chains only to a known contract; allowances
/// only to a known spender and at most `max_input`; on the same chain the
/// output reaches the recipient, at least the minimum.
fn check_events(
    swaps: &Swaps,
    from: &SwapChain,
    wallet: Address,
    events: impl Iterator<Item = Event>,
    asked: &Asked<'_>,
) -> Result<(), SwapError> {
    let family = from.family;
    // The native coin as `eth_simulateV1` reports its transfers.
    let native_or = |a: Address| if family.facts().is_native(&a) { Address::repeat_byte(0xee) } else { a };
    let show = |a: &Address| family.facts().show_address(a.as_slice());
    let input = native_or(family.facts().address20(asked.from_token).ok_or(SwapError::Invalid("from_token"))?);
    let output = match asked.output {
        Some((recipient, least)) => {
            let token = native_or(family.facts().address20(asked.to_token).ok_or(SwapError::Invalid("to_token"))?);
            let recipient = family.facts().address20(recipient).ok_or(SwapError::Invalid("to_user_address"))?;
            Some((token, recipient, least))
        }
        None => None,
    };
    let cross_chain = asked.output.is_none();
    let (mut spent, mut received) = (U256::ZERO, U256::ZERO);
    for event in events {
        match event {
            Event::Transfer { token, from: sender, to, amount } => {
                if sender == wallet {
                    if token != input {
                        return Err(refused(format!("{}: the swap moves {} out of the wallet", from.name, show(&token))));
                    }
                    if cross_chain && !is_known(swaps, from, &show(&to)) {
                        return Err(refused(format!("{}: the swap pays the input to {}, not a known bridge", from.name, show(&to))));
                    }
                    spent += amount;
                }
                if let Some((out_token, recipient, _)) = output {
                    if token == out_token && to == recipient {
                        received += amount;
                    }
                }
            }
            Event::Approval { owner, spender, amount } if owner == wallet => {
                if !is_known(swaps, from, &show(&spender)) || amount > asked.max_input {
                    return Err(refused(format!("{}: the swap lets {} spend {amount} of the wallet's tokens", from.name, show(&spender))));
                }
            }
            Event::Approval { .. } => {}
        }
    }
    if spent > asked.max_input {
        return Err(refused(format!("{}: the swap takes {spent}, more than {}", from.name, asked.max_input)));
    }
    if let Some((_, _, least)) = output {
        if received < least {
            return Err(refused(format!("{}: the swap delivers {received}, less than {least}", from.name)));
        }
    }
    Ok(())
}

/// Run a TRON swap call as a constant call (`triggerconstantcontract`, with
/// its TRX value) from the wallet on the chain's head, and check its token
/// events as on EVM. The wallet's approvals are on chain by then.
pub async fn simulate_tron(
    swaps: &Swaps,
    from: &SwapChain,
    raw_data: &[u8],
    asked: &Asked<'_>,
    on_revert: OnRevert,
) -> Result<(), SwapError> {
    use alloy_primitives::hex;
    let (_, call) = tron_wire::raw::single_call(raw_data).map_err(|e| refused(format!("{}: {e}", from.name)))?;
    let wallet = tron_wire::address::parse(asked.wallet).ok_or(SwapError::WalletNotReady)?;
    let client = swaps.client(&from.name)?;
    let body = json!({
        "owner_address": hex::encode(&call.owner_address),
        "contract_address": hex::encode(&call.contract_address),
        "data": hex::encode(&call.data),
        "call_value": call.call_value,
    });
    let answer =
        client.rpc("/wallet/triggerconstantcontract", body).await.map_err(|e| SwapError::Unavailable(format!("{}: {e}", from.name)))?;
    if answer.pointer("/result/result").and_then(Value::as_bool) != Some(true) {
        return match on_revert {
            OnRevert::Refuse => Err(refused(format!("{}: the swap reverts in simulation", from.name))),
            OnRevert::Pass => Ok(()),
        };
    }
    // A node that runs the call but reports no logs cannot vouch for it.
    let logs = answer.get("logs").and_then(Value::as_array).ok_or_else(|| refused(format!("{}: the node reports no logs", from.name)))?;
    let as_evm = |l: &Value| -> Option<Value> {
        let prefixed = |v: &Value| v.as_str().map(|t| format!("0x{}", t.trim_start_matches("0x")));
        let topics: Vec<String> = l.get("topics")?.as_array()?.iter().filter_map(prefixed).collect();
        Some(json!({ "address": prefixed(l.get("address")?)?, "topics": topics, "data": prefixed(l.get("data")?)? }))
    };
    let events = logs.iter().filter_map(as_evm).filter_map(|l| Event::of(&l));
    check_events(swaps, from, wallet, events, asked)
}

/// The token events the checks read from a simulated log.
#[derive(Debug, Clone)]
pub enum Event {
    Transfer { token: Address, from: Address, to: Address, amount: U256 },
    Approval { owner: Address, spender: Address, amount: U256 },
}

impl Event {
    fn of(log: &Value) -> Option<Event> {
        let topics: Vec<B256> = log.get("topics")?.as_array()?.iter().filter_map(|t| t.as_str()?.parse().ok()).collect();
        // ERC-20 events have three topics (ERC-721's Transfer has four).
        let [event, a, b] = topics.as_slice() else { return None };
        let token: Address = log.get("address")?.as_str()?.parse().ok()?;
        let data = alloy_primitives::hex::decode(log.get("data")?.as_str()?.trim_start_matches("0x")).ok()?;
        let amount = U256::try_from_be_slice(data.get(..32)?)?;
        let (a, b) = (Address::from_word(*a), Address::from_word(*b));
        match *event {
            TRANSFER => Some(Event::Transfer { token, from: a, to: b, amount }),
            APPROVAL => Some(Event::Approval { owner: a, spender: b, amount }),
            _ => None,
        }
    }
}

/// SPL token account layout: mint, owner, amount, delegate (an option
/// tag and key), state, is_native, delegated amount.
const SPL_MINT: std::ops::Range<usize> = 0..32;
const SPL_OWNER: std::ops::Range<usize> = 32..64;
const SPL_AMOUNT: std::ops::Range<usize> = 64..72;
const SPL_DELEGATE_TAG: std::ops::Range<usize> = 72..76;
const SPL_DELEGATED: std::ops::Range<usize> = 121..129;

/// One account as `getTokenAccountsByOwner` or a simulation shows it.
struct SolAccount {
    lamports: u64,
    data: Vec<u8>,
}

impl SolAccount {
    fn of(v: &Value) -> Option<SolAccount> {
        use base64::Engine as _;
        let lamports = v.get("lamports")?.as_u64()?;
        let data = base64::engine::general_purpose::STANDARD.decode(v.pointer("/data/0")?.as_str()?).ok()?;
        Some(SolAccount { lamports, data })
    }

    fn field(&self, range: std::ops::Range<usize>) -> Option<&[u8]> {
        self.data.get(range)
    }

    fn amount(&self) -> Option<u64> {
        Some(u64::from_le_bytes(self.field(SPL_AMOUNT)?.try_into().ok()?))
    }

    /// A delegate with something left to spend.
    fn delegated(&self) -> bool {
        let tag = self.field(SPL_DELEGATE_TAG).is_some_and(|t| t != [0, 0, 0, 0]);
        let left = self.field(SPL_DELEGATED).is_some_and(|d| d.iter().any(|b| *b != 0));
        tag && left
    }
}

/// Simulate a Solana swap transaction, unsigned, on the chain's head and
/// check what it does to the wallet: its SOL falls by at most the fee cap
/// (plus the input, when SOL is what is swapped); of its token accounts
/// only the input mint's fall, together by at most `max_input`; none is
/// handed to another owner or left with a delegate; and on the same chain
/// the output arrives at the recipient's account, at least the minimum.
pub async fn simulate_solana(
    swaps: &Swaps,
    from: &SwapChain,
    transaction: &str,
    asked: &Asked<'_>,
    on_revert: OnRevert,
) -> Result<(), SwapError> {
    const TOKEN_PROGRAMS: [&str; 2] = [SOLANA_BASE_PROGRAMS[2], SOLANA_BASE_PROGRAMS[3]];
    const WRAPPED_SOL: &str = "So11111111111111111111111111111111111111112";
    let client = swaps.client(&from.name)?;
    let unavailable = |e: crate::family::chain::ChainError| SwapError::Unavailable(format!("{}: {e}", from.name));
    let wallet = asked.wallet;
    let mut addresses = vec![wallet.to_string()];
    let mut before: Vec<SolAccount> = Vec::new();
    let pre_lamports = client.rpc("getBalance", json!([wallet])).await.map_err(unavailable)?;
    let pre_lamports = pre_lamports.pointer("/value").and_then(Value::as_u64).ok_or_else(|| refused("unreadable wallet balance"))?;
    for program in TOKEN_PROGRAMS {
        let rows = client
            .rpc("getTokenAccountsByOwner", json!([wallet, { "programId": program }, { "encoding": "base64" }]))
            .await
            .map_err(unavailable)?;
        for row in rows.pointer("/value").and_then(Value::as_array).into_iter().flatten() {
            let (Some(key), Some(account)) = (row.get("pubkey").and_then(Value::as_str), row.get("account").and_then(SolAccount::of))
            else {
                return Err(refused("unreadable token account"));
            };
            addresses.push(key.to_string());
            before.push(account);
        }
    }
    let output = match asked.output {
        Some((recipient, least)) => {
            let account = swaps.token_account(&from.name, recipient, asked.to_token).await?;
            let pre = match addresses.iter().position(|a| *a == account) {
                Some(i) => before[i - 1].amount().unwrap_or(0),
                None => {
                    let v = client.rpc("getAccountInfo", json!([account, { "encoding": "base64" }])).await.map_err(unavailable)?;
                    v.pointer("/value").and_then(SolAccount::of).and_then(|a| a.amount()).unwrap_or(0)
                }
            };
            if !addresses.contains(&account) {
                addresses.push(account.clone());
            }
            Some((account, pre, least))
        }
        None => None,
    };
    let config = json!({ "encoding": "base64", "sigVerify": false, "accounts": { "encoding": "base64", "addresses": addresses } });
    let sim = client.rpc("simulateTransaction", json!([transaction, config])).await.map_err(|e| match e {
        e @ crate::family::chain::ChainError::Node { .. } => refused(format!("{}: the node cannot simulate the swap: {e}", from.name)),
        e => unavailable(e),
    })?;
    let value = sim.get("value").ok_or_else(|| refused("simulation answered without a value"))?;
    if !value.get("err").is_none_or(Value::is_null) {
        return match on_revert {
            OnRevert::Refuse => Err(refused(format!("{}: the swap fails in simulation: {}", from.name, value["err"]))),
            OnRevert::Pass => Ok(()),
        };
    }
    let after = value.get("accounts").and_then(Value::as_array).ok_or_else(|| refused("simulation answered without accounts"))?;
    if after.len() != addresses.len() {
        return Err(refused("simulation answered for other accounts"));
    }
    let after: Vec<Option<SolAccount>> = after.iter().map(SolAccount::of).collect();

    let native_input = asked.from_token == WRAPPED_SOL || asked.from_token == SOLANA_BASE_PROGRAMS[1];
    let post_lamports = after[0].as_ref().map_or(0, |a| a.lamports);
    let allowed = swaps.config.swap.max_fee_lamports + if native_input { asked.max_input.saturating_to::<u64>() } else { 0 };
    if pre_lamports.saturating_sub(post_lamports) > allowed {
        return Err(refused(format!("{}: the swap takes {} lamports from the wallet", from.name, pre_lamports - post_lamports)));
    }
    let input_mint = bs58::decode(asked.from_token).into_vec().ok();
    let mut spent = U256::ZERO;
    for (pre, post) in before.iter().zip(&after[1..]) {
        let mint = pre.field(SPL_MINT).map(<[u8]>::to_vec);
        let pre_amount = pre.amount().unwrap_or(0);
        let (post_amount, moved_away) = match post {
            None => (0, false),
            Some(p) => (p.amount().unwrap_or(0), p.field(SPL_OWNER) != pre.field(SPL_OWNER) || p.delegated()),
        };
        if moved_away {
            return Err(refused(format!("{}: the swap hands a token account of the wallet to someone else", from.name)));
        }
        if post_amount < pre_amount {
            if mint != input_mint {
                return Err(refused(format!("{}: the swap moves another token out of the wallet", from.name)));
            }
            spent += U256::from(pre_amount - post_amount);
        }
    }
    if spent > asked.max_input {
        return Err(refused(format!("{}: the swap takes {spent}, more than {}", from.name, asked.max_input)));
    }
    if let Some((account, pre, least)) = output {
        let i = addresses.iter().position(|a| *a == account).expect("listed");
        let post = after[i].as_ref().and_then(SolAccount::amount).unwrap_or(0);
        let received = U256::from(post.saturating_sub(pre));
        if received < least {
            return Err(refused(format!("{}: the swap delivers {received}, less than {least}", from.name)));
        }
    }
    Ok(())
}
