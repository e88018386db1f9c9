//! x402 `batch-settlement` on the devnet: the channels contract and its
//! deposit collectors (ours, written to the published scheme, placed at the
//! canonical addresses; devnet/setup/up.mjs refuses to start if a selector
//! differs from the ABI @x402/evm ships) run a channel's whole life for the
//! reference stack, unmodified: `@x402/fetch` with the batch-settlement
//! client, an `@x402/express` route with its server scheme (file storage),
//! and `@x402/core`'s facilitator with its batch-settlement scheme over
//! HTTP. Balances are read on chain. This is the baseline stablerail's own
//! facilitator for the scheme is measured against.

use crate::common;

use alloy_primitives::{Address, B256, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use batch_wire::ChannelConfig;
use common::devnet::{devnet_script, node, rpc, Devnet};
use common::process::{free_port, Reaped};
use serde_json::{json, Value};
use std::process::{Command, Stdio};

use crate::facilitator::start_shop_with;

const RECEIVER: &str = "0x00000000000000000000000000000000000ba7c4";
const SETTLEMENT: &str = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";
const ERC3009_COLLECTOR: &str = "0x4020806089470a89826cB9fB1f4059150b550004";
const PERMIT2_COLLECTOR: &str = "0x4020425FAf3B746C082C2f942b4E5159887B0005";
const PERMIT2: &str = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
/// anvil's tenth mnemonic account (funded, used by no other devnet role).
const REFERENCE_RELAYER: &str = "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6";
/// The receiver authorizer: a key that only signs (claims, refunds).
const AUTHORIZER: &str = "0x8b7e1e0a0c5b3c4f5e0d8f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e";

/// The reference facilitator (devnet/nodes/x402-facilitator.mjs) on base.
fn reference_facilitator(dn: &Devnet) -> (u16, Reaped) {
    let port = free_port();
    let mut child = Command::new("node")
        .arg(devnet_script("x402-facilitator.mjs"))
        .args(["--port", &port.to_string(), "--rpc", &dn.rpc_url("base"), "--chain-id", "8453"])
        .args(["--key", REFERENCE_RELAYER, "--authorizer", AUTHORIZER])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    assert!(line.starts_with("ready"), "{line}");
    (port, Reaped(child))
}

async fn post(url: &str) -> Value {
    let resp = reqwest::Client::new().post(url).send().await.unwrap();
    let status = resp.status();
    let body: Value = resp.json().await.unwrap();
    assert!(status.is_success(), "{url}: {status} {body}");
    body
}

/// Who the resource server settles through: the reference facilitator on
/// its port (it signs as the receiver authorizer), or stablerail on its
/// port with a facilitator key, the server signing as the authorizer
/// itself or delegating that to stablerail's own authorizer (the one
/// `/supported` advertises).
#[derive(Clone, Copy)]
enum Through<'a> {
    Reference(u16),
    Stablerail(u16, &'a str),
    Delegating(u16, &'a str),
}

/// One channel's whole life on `asset`, deposited by `method` (`eip3009` or
/// `permit2`), through `through`: `n` metered requests by vouchers (top-up
/// deposits as the client decides), a claim and a sweep, a second sweep
/// that finds nothing, a cooperative refund; balances read on chain.
async fn whole_life(dn: &Devnet, through: Through<'_>, asset: &str, method: &str, payer: usize, n: usize) {
    let token = dn.token("base", asset);
    let (payer, payer_key) = dn.payer(payer);
    let storage = tempfile::tempdir().unwrap();
    // Each request may cost up to 0.01; it charges 0.001 per unit used.
    let mut sale = json!({
        "network": "eip155:8453", "asset": token, "amount": "10000", "payTo": RECEIVER,
        "name": "USD Coin", "version": "2", "scheme": "batch-settlement", "unitPrice": "1000",
        "storage": storage.path(), "extra": { "assetTransferMethod": method },
    });
    let (shop, _shop) = match through {
        Through::Reference(port) => {
            sale["facilitator"] = json!(format!("http://127.0.0.1:{port}"));
            start_shop_with(0, "", sale)
        }
        Through::Stablerail(port, key) => {
            sale["authorizerKey"] = json!(AUTHORIZER);
            start_shop_with(port, key, sale)
        }
        Through::Delegating(port, key) => start_shop_with(port, key, sale),
    };
    let (payer0, held0) = (dn.balance_of("base", asset, &payer).await, dn.balance_of("base", asset, SETTLEMENT).await);
    let uses = [3u64, 1, 4, 1, 5, 9, 2, 6];
    let out = node(
        "batch-pay.mjs",
        &[
            "--url",
            &format!("http://127.0.0.1:{shop}/paid"),
            "--key",
            &payer_key,
            "--asset",
            &token,
            "--rpc",
            &dn.rpc_url("base"),
            "--n",
            &n.to_string(),
            "--uses",
            &uses.map(|u| u.to_string()).join(","),
        ],
        "",
    );
    let got: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let charged: u64 = (0..n).map(|i| uses[i % uses.len()] * 1000).sum();
    assert_eq!(got["paid"], n, "{method}: {got}");
    assert_eq!(got["charged"], charged.to_string(), "{method}: the server charged what each request used: {got}");
    // Each deposit went to the escrow through the collector the method names.
    let collector = if method == "permit2" { PERMIT2_COLLECTOR } else { ERC3009_COLLECTOR };
    let deposits = got["transactions"].as_array().unwrap();
    assert!(!deposits.is_empty(), "{got}");
    for tx in deposits {
        let sent = rpc(&dn.rpc_url("base"), "eth_getTransactionByHash", json!([tx])).await;
        assert!(sent["to"].as_str().unwrap().eq_ignore_ascii_case(SETTLEMENT), "{method}: {sent}");
        assert!(sent["input"].as_str().unwrap().to_lowercase().contains(&collector[2..].to_lowercase()), "{method}: {sent}");
    }
    let held = dn.balance_of("base", asset, SETTLEMENT).await - held0;
    assert_eq!(payer0 - dn.balance_of("base", asset, &payer).await, held, "{method}: the payer's deposits are in the escrow");
    assert!(held >= U256::from(charged), "{method}: deposits cover the charges: {held}");
    assert_eq!(dn.balance_of("base", asset, RECEIVER).await, U256::ZERO, "{method}: vouchers move nothing on chain");

    // One claim transaction for the channel's latest voucher, one sweep.
    let done = post(&format!("http://127.0.0.1:{shop}/channels/claim-and-settle")).await;
    assert_eq!(done["claims"].as_array().map(Vec::len), Some(1), "{done}");
    assert_eq!(dn.balance_of("base", asset, RECEIVER).await, U256::from(charged), "{method}: the receiver got exactly the charges");
    // A second sweep finds nothing to move.
    let again = post(&format!("http://127.0.0.1:{shop}/channels/claim-and-settle")).await;
    assert_eq!(again["claims"], json!([]), "{again}");
    assert_eq!(dn.balance_of("base", asset, RECEIVER).await, U256::from(charged));

    // The cooperative refund returns exactly the rest.
    let refunded = post(&format!("http://127.0.0.1:{shop}/channels/refund")).await;
    assert_eq!(refunded.as_array().map(Vec::len), Some(1), "{refunded}");
    assert_eq!(dn.balance_of("base", asset, &payer).await, payer0 - U256::from(charged), "{method}: the payer paid the charges, no more");
    assert_eq!(dn.balance_of("base", asset, SETTLEMENT).await, held0, "{method}: nothing of this channel left in the escrow");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reference_stack_runs_a_channels_whole_life_on_our_contract() {
    let dn = Devnet::start(32645, "base", "").await;
    let (facilitator, _facilitator) = reference_facilitator(&dn);
    // USDC (Circle's FiatToken) by ERC-3009's receiveWithAuthorization.
    whole_life(&dn, Through::Reference(facilitator), "usdc", "eip3009", 3, 96).await;
    // USDT (no ERC-3009) through Permit2, approved once as Permit2 requires.
    let (payer, _) = dn.payer(5);
    dn.approve("base", "usdt", &payer, PERMIT2, U256::MAX).await;
    whole_life(&dn, Through::Reference(facilitator), "usdt", "permit2", 5, 96).await;
}

/// The same whole life with stablerail as the facilitator (its adapter
/// written with the kit, enabled by config): the USDC channel's server
/// signs its own claims and refunds, the USDT channel's delegates them to
/// stablerail's receiver authorizer; 1,000 paid requests between them.
/// Each deposit, claim, sweep and refund a settlement of stablerail's,
/// credited in its books once.
#[tokio::test(flavor = "multi_thread")]
async fn stablerail_serves_a_channels_whole_life_to_the_reference_server_and_client() {
    // The config `stablerail devnet up` writes (batch-settlement on base's
    // USDC and USDT, stablerail's own receiver authorizer), with keyless
    // access on too: the scheme is refused to it.
    let dn = Devnet::start_serving_batch(32845, "base", "[facilitator]\npublic = true\n").await;
    // The server's key speaks for its receiver: stablerail signs claims
    // and refunds of that receiver's channels when this key asks.
    let key = dn.cli(&["facilitator", "create-key", "channels", "--receiver", RECEIVER])["key"].as_str().unwrap().to_string();
    // A killed process's leases lapse quickly, so a restart takes over.
    dn.service_setting("claim_lease_seconds", 2);
    // Calls that arrive within a quarter second share a relayer batch
    // (anvil mines each transaction at once, so without a window only
    // what queues during a send would).
    dn.service_setting("settlement_batch_window_ms", 250);
    let port = free_port();
    let log = std::env::var("BATCH_LOG").ok().map(std::path::PathBuf::from);
    let service = common::process::serve_logged(&dn, port, log.as_deref(), "info");

    // /supported names the scheme on base with stablerail's receiver
    // authorizer: a key of its own, none of its wallets.
    let (s, supported) = common::process::http(port, "GET", "/x402/supported", None);
    assert_eq!(s, 200, "{supported}");
    let kind = supported["kinds"].as_array().unwrap().iter().find(|k| k["scheme"] == "batch-settlement").cloned().unwrap_or_default();
    assert_eq!((&kind["network"], kind["x402Version"].as_u64()), (&json!("eip155:8453"), Some(2)), "{supported}");
    let ours: Address = kind["extra"]["receiverAuthorizer"].as_str().unwrap_or_default().parse().expect("a receiverAuthorizer");
    let wallets = serde_json::to_string(&dn.info).unwrap().to_lowercase();
    assert!(!wallets.contains(&format!("{ours:x}")), "the authorizer is no wallet of the devnet's: {ours}");
    assert!(!supported["signers"].to_string().to_lowercase().contains(&format!("{ours:x}")), "{supported}");

    whole_life(&dn, Through::Stablerail(port, &key), "usdc", "eip3009", 3, 504).await;
    let (payer, _) = dn.payer(5);
    dn.approve("base", "usdt", &payer, PERMIT2, U256::MAX).await;
    whole_life(&dn, Through::Delegating(port, &key), "usdt", "permit2", 5, 496).await;

    // Every step is a settlement of stablerail's, settled, each with its
    // own movement in the books: deposits (payer → escrow), one claim and
    // one sweep per channel, one refund per channel.
    let rows: Vec<(String, String, String)> = sqlx::query_as("SELECT replay_key, status, scheme FROM x402_settlements ORDER BY created_at")
        .fetch_all(&dn.state.db.pool)
        .await
        .unwrap();
    assert!(rows.iter().all(|(_, status, scheme)| status == "settled" && scheme == "batch-settlement"), "{rows:?}");
    let count = |step: &str| rows.iter().filter(|(k, _, _)| k.contains(&format!("batch-settlement:{step}:"))).count();
    assert_eq!((count("claim"), count("settle"), count("refund")), (2, 2, 2), "{rows:?}");
    assert!(rows.len() >= 2 + 6, "a deposit or more per channel: {rows:?}");
    let movements: i64 = sqlx::Row::get(
        &sqlx::query("SELECT COUNT(*) AS n FROM book_movements WHERE purpose = 'x402'").fetch_one(&dn.state.db.pool).await.unwrap(),
        "n",
    );
    assert_eq!(movements, rows.len() as i64, "one movement per settlement: {rows:?}");

    // A channel of the test's own, through the API directly: a deposit
    // settled once whatever is asked again, then bad vouchers and claims,
    // each refused with the spec's code.
    straight_to_the_api(&dn, port, &key).await;
    // Claims and refunds delegated to stablerail's authorizer: signed for
    // the key that speaks for the receiver, refused to any other.
    delegated(&dn, port, &key, ours).await;
    // Several callers' deposits and claims in one relayer transaction
    // where they touch different channels; never two of one channel.
    several_callers_share_a_transaction(&dn, port, &key).await;
    // A neighbour that sinks a shared transaction (its payer took on
    // gas-burning code after its check) costs the victim one try: the
    // victim is sent again alone and settles.
    a_sunk_call_is_sent_again_alone(&dn, port, &key).await;

    // `kill -9` with four deposits and a claim broadcast and not mined;
    // after a restart each settles once.
    kill_9_during_deposits_and_a_claim(&dn, (service, port), &key, log.as_deref()).await;
}

/// A channel's (balance, totalClaimed) on chain.
async fn channel_on_chain(dn: &Devnet, id: B256) -> (u128, u128) {
    let [call, _, _] = batch_wire::state_calls(id);
    let out =
        rpc(&dn.rpc_url("base"), "eth_call", json!([{ "to": SETTLEMENT, "data": alloy_primitives::hex::encode_prefixed(call) }, "latest"]))
            .await;
    let bytes = alloy_primitives::hex::decode(out.as_str().unwrap()).unwrap();
    let r = <batch_wire::channelsCall as alloy_sol_types::SolCall>::abi_decode_returns(&bytes).unwrap();
    (r.balance, r.totalClaimed)
}

/// `first`: the running service and its port.
async fn kill_9_during_deposits_and_a_claim(dn: &Devnet, first: (Reaped, u16), key: &str, log: Option<&std::path::Path>) {
    let (mut first, first_port) = first;
    let base = dn.rpc_url("base");
    let bearer = format!("Bearer {key}");
    let authorizer: PrivateKeySigner = AUTHORIZER.parse().unwrap();
    let channels: Vec<Channel> = [0usize, 1, 2, 7].iter().map(|&p| Channel::open(dn, p, 0x60 + p as u8)).collect();
    // The channel straight_to_the_api funded (5,000, 2,000 claimed), claimed to 3,000.
    let claimed = Channel::open(dn, 6, 0x5a);
    let mut bodies: Vec<Value> = channels.iter().map(|c| c.body(c.deposit(4000, 9))).collect();
    bodies.push(claimed.body(claimed.claim(3000, Some(&authorizer))));
    let held0 = dn.balance_of("base", "usdc", SETTLEMENT).await;
    rpc(&base, "evm_setAutomine", json!([false])).await;
    let calls: Vec<_> = bodies
        .iter()
        .map(|b| {
            let (b, auth) = (b.clone(), bearer.clone());
            std::thread::spawn(move || common::try_http(first_port, "POST", "/x402/settle", Some(&auth), Some(b)))
        })
        .collect();
    // Every step stored and broadcast (the node holds each transaction,
    // shared batches among them): now the process dies.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (rows, sent): (i64, i64) =
            sqlx::query_as("SELECT COUNT(*), COUNT(DISTINCT tx_hash) FROM chain_transactions WHERE leg = 'x402' AND status <> 'confirmed'")
                .fetch_one(&dn.state.db.pool)
                .await
                .unwrap();
        let status = rpc(&base, "txpool_status", json!([])).await;
        let pending = status["pending"].as_str().and_then(|p| i64::from_str_radix(p.trim_start_matches("0x"), 16).ok());
        if rows == 5 && pending == Some(sent) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not everything was broadcast: {status}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    common::process::kill(first.0.id(), "-KILL");
    let _ = first.0.wait();
    for c in calls {
        let _ = c.join().unwrap();
    }
    rpc(&base, "evm_setAutomine", json!([true])).await;
    rpc(&base, "evm_mine", json!([])).await;

    let port = free_port();
    let _second = common::process::serve_logged(dn, port, log, "info");
    for (n, b) in bodies.iter().enumerate() {
        let (s, v) = common::http(port, "POST", "/x402/settle", Some(&bearer), Some(b.clone()));
        assert_eq!((s, &v["success"]), (200, &json!(true)), "step {n}: {v}");
    }
    assert_eq!(dn.balance_of("base", "usdc", SETTLEMENT).await, held0 + U256::from(4u64 * 4000), "each deposit landed once");
    for c in &channels {
        assert_eq!(channel_on_chain(dn, c.id).await, (4000, 0), "one deposit in each channel");
    }
    assert_eq!(channel_on_chain(dn, claimed.id).await, (5000, 3000), "claimed once, to 3,000");
    // Each settlement settled holds one movement; one that failed holds
    // none (the lower claim of one channel in
    // `several_callers_share_a_transaction` where the higher landed first,
    // the neighbour of `a_sunk_call_is_sent_again_alone`).
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT replay_key, status FROM x402_settlements").fetch_all(&dn.state.db.pool).await.unwrap();
    let settled = rows.iter().filter(|(_, status)| status == "settled").count();
    assert!(settled + 2 >= rows.len(), "{rows:?}");
    let movements = |status: &'static str| async move {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM book_movements m JOIN x402_settlements s ON s.id = m.owner_id \
             WHERE m.purpose = 'x402' AND (s.status = 'settled') = {status}"
        ))
        .fetch_one(&dn.state.db.pool)
        .await
        .unwrap();
        n
    };
    assert_eq!(movements("true").await, settled as i64, "one movement per settlement after the restart: {rows:?}");
    assert_eq!(movements("false").await, 0, "a failed settlement holds no movement: {rows:?}");
}

/// Deposits and claims of several channels asked at once: those of
/// different channels share one relayer transaction (a Multicall3 batch),
/// two of one channel never do; each is answered and credited in the books
/// with its own event, balances on chain.
async fn several_callers_share_a_transaction(dn: &Devnet, port: u16, key: &str) {
    let bearer = format!("Bearer {key}");
    let authorizer: PrivateKeySigner = AUTHORIZER.parse().unwrap();
    let channels: Vec<Channel> = (0..4u8).map(|n| Channel::open(dn, 6, 0x70 + n)).collect();
    // A payer that will be a contract when its channel is claimed.
    let wallet = Channel::open(dn, 3, 0x78);
    let at_once = |bodies: Vec<Value>| -> Vec<Value> {
        let calls: Vec<_> = bodies
            .into_iter()
            .map(|b| {
                let auth = bearer.clone();
                std::thread::spawn(move || common::http(port, "POST", "/x402/settle", Some(&auth), Some(b)).1)
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    };
    let tx = |v: &Value| v["transaction"].as_str().unwrap_or_default().to_string();
    let shared = |answers: &[Value]| {
        let mut seen = std::collections::HashMap::<String, usize>::new();
        for a in answers {
            *seen.entry(tx(a)).or_default() += 1;
        }
        seen.into_values().max().unwrap_or(0)
    };
    let held0 = dn.balance_of("base", "usdc", SETTLEMENT).await;

    // Four channels' deposits, and a second deposit into the first.
    let mut bodies: Vec<Value> = channels.iter().map(|c| c.body(c.deposit(3000, 21))).collect();
    bodies.push(channels[0].body(channels[0].deposit(3000, 22)));
    bodies.push(wallet.body(wallet.deposit(3000, 23)));
    let deposits = at_once(bodies);
    for d in &deposits {
        assert_eq!((&d["success"], &d["amount"]), (&json!(true), &json!("3000")), "{d}");
    }
    assert!(shared(&deposits[..4]) >= 2, "deposits of different channels share a transaction: {deposits:?}");
    assert_ne!(tx(&deposits[0]), tx(&deposits[4]), "two deposits of one channel never share one");
    assert_eq!(dn.balance_of("base", "usdc", SETTLEMENT).await, held0 + U256::from(6u64 * 3000), "each deposit landed once");
    assert_eq!(channel_on_chain(dn, channels[0].id).await, (6000, 0));
    for c in &channels[1..] {
        assert_eq!(channel_on_chain(dn, c.id).await, (3000, 0));
    }

    // Claims of the four channels, each signed for its own batch, and a
    // second claim of the first channel to a higher total.
    // The wallet's payer now has code (a wallet that answers ERC-1271's
    // magic value): its voucher is checked by running that code, which
    // could burn the gas of the calls after it, so its claim goes alone.
    let base = dn.rpc_url("base");
    let magic = "0x631626ba7e60e01b60005260206000f3";
    rpc(&base, "anvil_setCode", json!([wallet.payer.address(), magic])).await;
    let mut bodies: Vec<Value> =
        channels.iter().enumerate().map(|(n, c)| c.body(c.claim(1000 + n as u128 * 100, Some(&authorizer)))).collect();
    bodies.push(channels[0].body(channels[0].claim(2500, Some(&authorizer))));
    bodies.push(wallet.body(wallet.claim(1500, Some(&authorizer))));
    let claims = at_once(bodies);
    rpc(&base, "anvil_setCode", json!([wallet.payer.address(), "0x"])).await;
    for (n, c) in claims.iter().enumerate().skip(1) {
        assert_eq!((&c["success"], &c["amount"]), (&json!(true), &json!("")), "claim {n}: {c}");
    }
    assert!(shared(&claims[1..4]) >= 2, "claims of different channels share a transaction: {claims:?}");
    assert!(claims[..5].iter().all(|c| tx(c) != tx(&claims[5])), "a contract payer's claim goes alone: {claims:?}");
    assert_eq!(channel_on_chain(dn, wallet.id).await, (3000, 1500));
    // What sharing saves: the gas of the transaction holding the most of
    // the four channels' claims, per claim, against the claim sent alone.
    let gas = |hash: String| {
        let base = base.clone();
        async move {
            let r = rpc(&base, "eth_getTransactionReceipt", json!([hash])).await;
            u64::from_str_radix(r["gasUsed"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
        }
    };
    let most = claims[1..4].iter().map(tx).max_by_key(|t| claims[1..4].iter().filter(|c| tx(c) == *t).count()).unwrap();
    let together = claims.iter().filter(|c| tx(c) == most).count() as u64;
    let (per_claim, alone) = (gas(most).await / together, gas(tx(&claims[5])).await);
    eprintln!("batch-settlement claims: {together} in one transaction, {per_claim} gas each; one alone, {alone} gas");
    assert!(per_claim < alone, "{together} claims sharing a transaction cost {per_claim} gas each, one alone {alone}");
    // The first channel's two claims went in two transactions: the lower
    // one is claimed where it landed first, and is a no-op (no event,
    // answered failed) where the higher one did.
    assert_ne!(tx(&claims[0]), tx(&claims[4]), "two claims of one channel never share a transaction");
    assert_eq!(channel_on_chain(dn, channels[0].id).await, (6000, 2500));
    for (n, c) in channels.iter().enumerate().skip(1) {
        assert_eq!(channel_on_chain(dn, c.id).await, (3000, 1000 + n as u128 * 100));
    }

    // The books: each settled step holds one movement of its own
    // transaction, at its own log; nothing credited twice.
    let answers: Vec<&Value> = deposits.iter().chain(claims.iter()).filter(|a| a["success"] == json!(true)).collect();
    let mut logs = std::collections::HashSet::new();
    for a in &answers {
        let held: Vec<(String, i64)> = sqlx::query_as(
            "SELECT m.tx_id, m.log_index FROM book_movements m JOIN x402_settlements s ON s.id = m.owner_id \
             WHERE m.purpose = 'x402' AND s.tx_hash = $1",
        )
        .bind(tx(a))
        .fetch_all(&dn.state.db.pool)
        .await
        .unwrap();
        for h in held {
            assert_eq!(h.0, tx(a), "{a}");
            logs.insert(h);
        }
    }
    assert_eq!(logs.len(), answers.len(), "one movement per settled step: {answers:?}");
}

/// The attack a signer with code makes on a shared transaction: the
/// neighbour's payer has no code when its claim is queued beside the
/// victim's, then takes on code that burns every gas it is given (as an
/// EIP-7702 delegation sent just before the block would). The shared
/// transaction's victim call runs out of gas; its authorization is still
/// good, so it is sent again, alone, and settles once.
async fn a_sunk_call_is_sent_again_alone(dn: &Devnet, port: u16, key: &str) {
    let bearer = format!("Bearer {key}");
    let authorizer: PrivateKeySigner = AUTHORIZER.parse().unwrap();
    let base = dn.rpc_url("base");
    let (neighbour, victim) = (Channel::open(dn, 3, 0x79), Channel::open(dn, 6, 0x7a));
    for c in [&neighbour, &victim] {
        let (_, d) = common::http(port, "POST", "/x402/settle", Some(&bearer), Some(c.body(c.deposit(3000, 31))));
        assert_eq!(d["success"], json!(true), "{d}");
    }
    let rows0 = settlements(dn).await;
    rpc(&base, "evm_setAutomine", json!([false])).await;
    let ask = |c: &Channel| {
        let (body, auth) = (c.body(c.claim(1200, Some(&authorizer))), bearer.clone());
        std::thread::spawn(move || common::http(port, "POST", "/x402/settle", Some(&auth), Some(body)).1)
    };
    // The neighbour first in the batch, the victim after it.
    let theirs = ask(&neighbour);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let ours = ask(&victim);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let batch = loop {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT DISTINCT c.tx_hash FROM chain_transactions c JOIN x402_settlements s ON s.id = c.intent_id \
             WHERE c.leg = 'x402' AND c.status <> 'confirmed'",
        )
        .fetch_all(&dn.state.db.pool)
        .await
        .unwrap();
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM chain_transactions WHERE leg = 'x402' AND status <> 'confirmed'")
            .fetch_one(&dn.state.db.pool)
            .await
            .unwrap();
        let pending = rpc(&base, "txpool_status", json!([])).await["pending"].as_str() == Some("0x1");
        if count == 2 && rows.len() == 1 && pending {
            break rows[0].0.clone();
        }
        assert!(std::time::Instant::now() < deadline, "the two claims were not sent in one transaction: {rows:?} of {count}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    rpc(&base, "anvil_setCode", json!([neighbour.payer.address(), "0x5b600056"])).await;
    rpc(&base, "evm_mine", json!([])).await;
    // The code goes as soon as the block is out (the attacker's second
    // delegation): the neighbour's authorization is usable again too, so
    // both are sent again at about the same moment, each alone.
    rpc(&base, "anvil_setCode", json!([neighbour.payer.address(), "0x"])).await;
    rpc(&base, "evm_setAutomine", json!([true])).await;
    let answer = ours.join().unwrap();
    let _ = theirs.join().unwrap();
    assert_eq!(answer["success"], json!(true), "the victim settles: {answer}");
    let settled_in = answer["transaction"].as_str().unwrap_or_default().to_string();
    assert_ne!(settled_in, batch, "not in the transaction that was sunk: {answer}");
    let sharing: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM chain_transactions WHERE tx_hash = $1")
        .bind(&settled_in)
        .fetch_one(&dn.state.db.pool)
        .await
        .unwrap();
    assert_eq!(sharing, 1, "sent again alone");
    assert_eq!(channel_on_chain(dn, victim.id).await, (3000, 1200), "claimed once");
    let dropped: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM dropped_transactions d JOIN x402_settlements s ON s.id = d.intent_id \
         WHERE d.tx_hash = $1 AND s.tx_hash = $2",
    )
    .bind(&batch)
    .bind(&settled_in)
    .fetch_one(&dn.state.db.pool)
    .await
    .unwrap();
    assert_eq!(dropped, 1, "the victim's call in the sunk transaction was dropped, then sent again");
    assert_eq!(settlements(dn).await, rows0 + 2);
}

async fn settlements(dn: &Devnet) -> i64 {
    sqlx::Row::get(&sqlx::query("SELECT COUNT(*) AS n FROM x402_settlements").fetch_one(&dn.state.db.pool).await.unwrap(), "n")
}

/// Signs as `key` over `digest`: 65 bytes, v 27/28.
fn sign(key: &PrivateKeySigner, digest: B256) -> String {
    let sig = key.sign_hash_sync(&digest).unwrap();
    let mut out = sig.as_bytes();
    if out[64] < 27 {
        out[64] += 27;
    }
    alloy_primitives::hex::encode_prefixed(out)
}

fn keccak(data: &[u8]) -> [u8; 32] {
    alloy_primitives::keccak256(data).0
}

/// A channel of the test's own on base, as a payer's client writes one.
struct Channel {
    payer: PrivateKeySigner,
    config: ChannelConfig,
    id: B256,
    json: Value,
    req: Value,
}

impl Channel {
    /// A channel whose receiver authorizer is the server's own (`AUTHORIZER`).
    fn open(dn: &Devnet, payer: usize, salt: u8) -> Channel {
        Channel::open_for(dn, payer, salt, AUTHORIZER.parse::<PrivateKeySigner>().unwrap().address())
    }

    fn open_for(dn: &Devnet, payer: usize, salt: u8, authorizer: Address) -> Channel {
        let token: Address = dn.token("base", "usdc").parse().unwrap();
        let payer: PrivateKeySigner = dn.payer(payer).1.parse().unwrap();
        let config = ChannelConfig {
            payer: payer.address(),
            payerAuthorizer: Address::ZERO,
            receiver: RECEIVER.parse().unwrap(),
            receiverAuthorizer: authorizer,
            token,
            withdrawDelay: alloy_primitives::aliases::U40::from(900u64),
            salt: B256::repeat_byte(salt),
        };
        let json = json!({
            "payer": payer.address(), "payerAuthorizer": Address::ZERO, "receiver": RECEIVER,
            "receiverAuthorizer": authorizer, "token": token, "withdrawDelay": 900, "salt": config.salt,
        });
        let req = json!({
            "scheme": "batch-settlement", "network": "eip155:8453", "amount": "1000", "asset": token, "payTo": RECEIVER,
            "maxTimeoutSeconds": 300,
            "extra": { "receiverAuthorizer": authorizer, "withdrawDelay": 900, "name": "USD Coin", "version": "2" },
        });
        Channel { id: batch_wire::channel_id(&keccak, &config, 8453), payer, config, json, req }
    }

    fn voucher(&self, by: &PrivateKeySigner, channel: B256, max: u128) -> Value {
        json!({ "channelId": channel, "maxClaimableAmount": max.to_string(),
                "signature": sign(by, batch_wire::voucher_digest(&keccak, channel, max, 8453)) })
    }

    /// A deposit of `amount` by ERC-3009 to the collector, its nonce bound
    /// to the channel by `salt`.
    fn deposit(&self, amount: u64, salt: u64) -> Value {
        let valid_before = U256::from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 3600);
        let auth = batch_wire::ReceiveWithAuthorization {
            from: self.payer.address(),
            to: batch_wire::ERC3009_COLLECTOR,
            value: U256::from(amount),
            validAfter: U256::ZERO,
            validBefore: valid_before,
            nonce: batch_wire::erc3009_nonce(&keccak, self.id, U256::from(salt)),
        };
        let digest = batch_wire::erc3009_digest(&keccak, ("USD Coin", "2", self.config.token), 8453, &auth);
        json!({
            "type": "deposit", "channelConfig": self.json, "voucher": self.voucher(&self.payer, self.id, 1000),
            "deposit": { "amount": amount.to_string(), "authorization": { "erc3009Authorization": {
                "validAfter": "0", "validBefore": valid_before.to_string(), "salt": B256::from(U256::from(salt)),
                "signature": sign(&self.payer, digest),
            } } },
        })
    }

    /// A claim of this channel up to `total` (the payer's voucher for it),
    /// signed as the receiver authorizer by `by`, or unsigned.
    fn claim(&self, total: u128, by: Option<&PrivateKeySigner>) -> Value {
        let v = self.voucher(&self.payer, self.id, total);
        let row = json!({ "voucher": { "channel": self.json, "maxClaimableAmount": total.to_string() }, "signature": v["signature"], "totalClaimed": total.to_string() });
        let rows = vec![batch_wire::VoucherClaim {
            voucher: batch_wire::ClaimedVoucher { channel: self.config.clone(), maxClaimableAmount: total },
            signature: Default::default(),
            totalClaimed: total,
        }];
        let batch = batch_wire::claim_batch_digest(&keccak, &rows, 8453);
        match by {
            Some(by) => json!({ "type": "claim", "claims": [row], "claimAuthorizerSignature": sign(by, batch) }),
            None => json!({ "type": "claim", "claims": [row] }),
        }
    }

    /// A refund of `amount` completed as a server does (the channel's
    /// `nonce`, the payer's zero-charge voucher at `charged`, no claims),
    /// left unsigned for the facilitator's authorizer.
    fn refund(&self, charged: u128, amount: u128, nonce: u64) -> Value {
        json!({ "type": "refund", "channelConfig": self.json, "voucher": self.voucher(&self.payer, self.id, charged),
                "amount": amount.to_string(), "refundNonce": nonce.to_string(), "claims": [] })
    }

    /// The `/x402/{verify,settle}` body of `payload` under the route's requirements.
    fn body(&self, payload: Value) -> Value {
        json!({ "x402Version": 2, "paymentPayload": { "x402Version": 2, "accepted": self.req, "payload": payload }, "paymentRequirements": self.req })
    }
}

fn refused(answer: &Value, code: &str) {
    let reason = answer.get("invalidReason").or(answer.get("errorReason")).and_then(Value::as_str);
    assert_eq!(reason, Some(code), "{answer}");
}

/// Claims and refunds left for stablerail's receiver authorizer (`ours`) to
/// sign: signed only for a key that speaks for the channel's receiver.
async fn delegated(dn: &Devnet, port: u16, key: &str, ours: Address) {
    // A receiver that is not an address, or the zero address: refused,
    // and no key of that name is left half-made.
    for bad in [
        "0x0b0b",
        "not-an-address",
        "0x0000000000000000000000000000000000000000",
        "eip155::0x0000000000000000000000000000000000000b0b",
        "eip155:0:0x0000000000000000000000000000000000000b0b",
        "eip155:+8453:0x0000000000000000000000000000000000000b0b",
        "solana:8453:0x0000000000000000000000000000000000000b0b",
        // A checksum (mixed case) with a typo; no 0x.
        "0x00000000000000000000000000000000000Ba7C4",
        "00000000000000000000000000000000000ba7c4",
    ] {
        let (ok, _, stderr) = dn.cli_answer(&["facilitator", "create-key", "another-shop", "--receiver", bad]);
        assert!(!ok && stderr.contains("--receiver"), "{bad}: {stderr}");
    }
    let other = dn.cli(&["facilitator", "create-key", "another-shop", "--receiver", "0x0000000000000000000000000000000000000b0b"]);
    let other = other["key"].as_str().unwrap();
    let ch = Channel::open_for(dn, 4, 0x4d, ours);
    let payer = ch.payer.address().to_string();
    let ask = |by: Option<&str>, payload: Value| {
        let bearer = by.map(|k| format!("Bearer {k}"));
        common::http(port, "POST", "/x402/settle", bearer.as_deref(), Some(ch.body(payload))).1
    };
    let deposited = ask(Some(key), ch.deposit(6000, 5));
    assert_eq!((&deposited["success"], &deposited["amount"]), (&json!(true), &json!("6000")), "{deposited}");
    let (rows0, payer0) = (settlements(dn).await, dn.balance_of("base", "usdc", &payer).await);

    // An unsigned claim asked by a key that speaks for another receiver,
    // or by nobody: refused, nothing recorded, nothing claimed.
    refused(&ask(Some(other), ch.claim(2500, None)), "payment_not_allowed");
    refused(&ask(None, ch.claim(2500, None)), "payment_not_allowed");
    assert_eq!((settlements(dn).await, channel_on_chain(dn, ch.id).await), (rows0, (6000, 0)));
    // A key bound to the receiver on another network (CAIP-10, Ethereum's
    // mainnet) does not speak for it on base; one bound on base does.
    let elsewhere = dn.cli(&["facilitator", "create-key", "mainnet-shop", "--receiver", &format!("eip155:1:{RECEIVER}")]);
    refused(&ask(elsewhere["key"].as_str(), ch.claim(2500, None)), "payment_not_allowed");
    // (Given with its EIP-55 checksum, stored in lowercase.)
    let on_base =
        dn.cli(&["facilitator", "create-key", "base-shop", "--receiver", "eip155:8453:0x00000000000000000000000000000000000Ba7c4"]);
    assert_eq!(on_base["receivers"], json!([format!("eip155:8453:{}", RECEIVER.to_lowercase())]), "{on_base}");
    assert_eq!(settlements(dn).await, rows0);
    // The receiver's key: stablerail signs the batch, the contract takes it.
    // A claim moves no token: its answer's amount is empty, as the spec's.
    let claimed = ask(on_base["key"].as_str(), ch.claim(2500, None));
    assert_eq!((&claimed["success"], &claimed["amount"]), (&json!(true), &json!("")), "{claimed}");
    assert_eq!(channel_on_chain(dn, ch.id).await, (6000, 2500));
    // The sweep says what the contract moved to the receiver (this claim
    // and the API channel's 2,000 before it), read from its own event.
    let receiver0 = dn.balance_of("base", "usdc", RECEIVER).await;
    let swept = ask(Some(key), json!({ "type": "settle", "receiver": RECEIVER, "token": ch.config.token }));
    let moved = dn.balance_of("base", "usdc", RECEIVER).await - receiver0;
    assert_eq!((&swept["success"], &swept["amount"]), (&json!(true), &json!(moved.to_string())), "{swept}");
    assert_eq!(moved, U256::from(4500u64), "{swept}");

    // A refund of the rest, completed by the payer itself (the nonce, no
    // signature) and sent by the other key or with none: refused, nothing
    // moved. The payer would take back what it owes before the server
    // claims it; the refund is the receiver's to ask for.
    let refund = ch.refund(2500, 3500, 0);
    // Nor more than is left, even for the receiver's key (the reference
    // server passes a payer's requested amount on): a signature for more
    // would take back the claimed part were it sent without its claims.
    refused(&ask(Some(key), ch.refund(2500, 3501, 0)), "invalid_batch_settlement_evm_refund_amount_invalid");
    refused(&ask(Some(key), ch.refund(2500, u128::MAX, 0)), "invalid_batch_settlement_evm_refund_amount_invalid");
    refused(&ask(Some(other), refund.clone()), "payment_not_allowed");
    refused(&ask(None, refund.clone()), "payment_not_allowed");
    assert_eq!(settlements(dn).await, rows0 + 2);
    assert_eq!(dn.balance_of("base", "usdc", &payer).await, payer0, "no refund without the receiver's key");
    let refunded = ask(Some(key), refund);
    assert_eq!((&refunded["success"], &refunded["amount"]), (&json!(true), &json!("3500")), "{refunded}");
    assert_eq!(dn.balance_of("base", "usdc", &payer).await, payer0 + U256::from(3500u64), "exactly the rest, once");
    assert_eq!(channel_on_chain(dn, ch.id).await, (2500, 2500));

    // A channel naming the server's own authorizer, unsigned: not
    // stablerail's to sign, even for the receiver's key.
    let theirs = Channel::open(dn, 6, 0x5a);
    let (_, answer) =
        common::http(port, "POST", "/x402/settle", Some(&format!("Bearer {key}")), Some(theirs.body(theirs.claim(4000, None))));
    refused(&answer, "invalid_batch_settlement_evm_authorizer_address_mismatch");
}

async fn straight_to_the_api(dn: &Devnet, port: u16, key: &str) {
    let bearer = format!("Bearer {key}");
    let ch = Channel::open(dn, 6, 0x5a);
    let (payer, id, config_json) = (&ch.payer, ch.id, &ch.json);
    let payer_address = payer.address().to_string();
    let authorizer: PrivateKeySigner = AUTHORIZER.parse().unwrap();
    let stranger = PrivateKeySigner::random();
    let voucher = |by: &PrivateKeySigner, channel: B256, max: u128| ch.voucher(by, channel, max);
    let ask = |path: &str, payload: Value| common::http(port, "POST", path, Some(&bearer), Some(ch.body(payload)));

    // The deposit: 5,000 by ERC-3009 to the collector, nonce bound to the channel.
    let deposit = ch.deposit(5000, 77);
    let (s, verified) = ask("/x402/verify", deposit.clone());
    assert_eq!((s, &verified["isValid"]), (200, &json!(true)), "{verified}");
    assert_eq!(
        (verified["extra"]["channelId"].as_str(), &verified["extra"]["balance"]),
        (Some(&*id.to_string()), &json!("0")),
        "{verified}"
    );
    let (held0, payer0) = (dn.balance_of("base", "usdc", SETTLEMENT).await, dn.balance_of("base", "usdc", &payer_address).await);
    let (s, settled) = ask("/x402/settle", deposit.clone());
    assert_eq!((s, &settled["success"], &settled["amount"]), (200, &json!(true), &json!("5000")), "{settled}");
    assert_eq!(settled["extra"]["channelState"]["balance"], "5000", "{settled}");
    // Asked again: the same settlement's answer, nothing moved twice.
    let (_, again) = ask("/x402/settle", deposit);
    assert_eq!((&again["success"], &again["transaction"]), (&json!(true), &settled["transaction"]), "{again}");
    assert_eq!(dn.balance_of("base", "usdc", SETTLEMENT).await, held0 + U256::from(5000u64), "deposited once");
    assert_eq!(dn.balance_of("base", "usdc", &payer_address).await, payer0 - U256::from(5000u64));

    // A claim of 2,000 signed by the server's authorizer (unsigned, it is
    // not stablerail's to sign: the channel names the server's authorizer).
    let (_, unsigned) = ask("/x402/settle", ch.claim(2000, None));
    refused(&unsigned, "invalid_batch_settlement_evm_authorizer_address_mismatch");
    let (_, forged) = ask("/x402/settle", ch.claim(2000, Some(&stranger)));
    refused(&forged, "invalid_batch_settlement_evm_authorizer_address_mismatch");
    let (_, claimed) = ask("/x402/settle", ch.claim(2000, Some(&authorizer)));
    assert_eq!((&claimed["success"], &claimed["amount"]), (&json!(true), &json!("")), "{claimed}");

    // Vouchers: the good one, then each bad one with its code.
    let ask_voucher = |v: Value| ask("/x402/verify", json!({ "type": "voucher", "channelConfig": config_json, "voucher": v })).1;
    let good = ask_voucher(voucher(payer, id, 3000));
    assert_eq!((&good["isValid"], &good["extra"]["totalClaimed"]), (&json!(true), &json!("2000")), "{good}");
    refused(&ask_voucher(voucher(payer, B256::repeat_byte(7), 3000)), "invalid_batch_settlement_evm_channel_id_mismatch");
    refused(&ask_voucher(voucher(&stranger, id, 3000)), "invalid_batch_settlement_evm_voucher_signature");
    refused(&ask_voucher(voucher(payer, id, 2000)), "invalid_batch_settlement_evm_cumulative_below_claimed");
    refused(&ask_voucher(voucher(payer, id, 5001)), "invalid_batch_settlement_evm_cumulative_exceeds_balance");
    // Keyless: a good top-up deposit (above the public minimum, to another
    // party) is refused; the scheme is served to facilitator keys only.
    let fresh = Channel::open(dn, 4, 0x44);
    let (s, keyed) = common::http(port, "POST", "/x402/verify", Some(&bearer), Some(fresh.body(fresh.deposit(4000, 1))));
    assert_eq!((s, &keyed["isValid"]), (200, &json!(true)), "{keyed}");
    let (s, keyless) = common::http(port, "POST", "/x402/verify", None, Some(fresh.body(fresh.deposit(4000, 1))));
    assert_eq!(s, 200, "{keyless}");
    refused(&keyless, "payment_not_allowed");
    // A voucher is claimed, never settled on its own.
    let rows_before = settlements(dn).await;
    let (_, alone) = ask("/x402/settle", json!({ "type": "voucher", "channelConfig": config_json, "voucher": voucher(payer, id, 3000) }));
    refused(&alone, "invalid_batch_settlement_evm_payload_type");
    assert_eq!(settlements(dn).await, rows_before, "refused before anything is recorded");
    assert_eq!(dn.balance_of("base", "usdc", SETTLEMENT).await, held0 + U256::from(5000u64), "claims and vouchers move no token");
}

/// What a stranger tries against the contract and its collectors
/// (devnet/clients/batch-attack.mjs), each refused for its own reason; the
/// payer's timed withdrawal and a permissionless sweep go through.
#[tokio::test(flavor = "multi_thread")]
async fn strangers_are_refused_by_the_contract_each_for_its_own_reason() {
    let dn = Devnet::start(32745, "base", "").await;
    let token = dn.token("base", "usdc");
    let (payer, payer_key) = dn.payer(4);
    let payer0 = dn.balance_of("base", "usdc", &payer).await;
    let out = node(
        "batch-attack.mjs",
        &[
            "--rpc",
            &dn.rpc_url("base"),
            "--token",
            &token,
            "--payer-key",
            &payer_key,
            "--authorizer-key",
            AUTHORIZER,
            "--receiver",
            RECEIVER,
        ],
        "",
    );
    let got: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let steps: Vec<(bool, String, String)> = got["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["ok"].as_bool().unwrap(), s["step"].as_str().unwrap().to_string(), s["reason"].as_str().unwrap().to_string()))
        .collect();
    let want = [
        (true, "a stranger relays the payer's deposit", "success"),
        (false, "the same authorization again", "FiatTokenV2: authorization is used or canceled"),
        (false, "the authorization moved to another channel", "FiatTokenV2: invalid signature"),
        (false, "the collector called directly", "only the settlement contract"),
        (false, "a stranger claims a real voucher", "not the receiver's side"),
        (false, "a claim batch signed by a stranger", "claim batch not signed by the receiver authorizer"),
        (false, "a voucher signed by a stranger", "voucher not signed by the payer"),
        (false, "a claim above the balance", "claim above the balance"),
        (false, "a claim above its voucher", "claim above the voucher"),
        (false, "the payer's voucher with v as 0/1", "voucher not signed by the payer"),
        (true, "the authorizer's claim, relayed", "success"),
        (true, "the same claim again", "success"),
        (false, "a refund signed by a stranger", "refund not signed by the receiver authorizer"),
        (false, "a refund of another amount than signed", "refund not signed by the receiver authorizer"),
        (false, "a refund of nothing", "zero refund"),
        (false, "a refund at a future nonce", "stale refund nonce"),
        (false, "a stranger starts the payer's withdrawal", "not the payer's side"),
        (false, "a withdrawal above the unclaimed balance", "withdrawal above the unclaimed balance"),
        (true, "the payer starts a withdrawal", "success"),
        (false, "the withdrawal finished early", "withdraw delay not over"),
        (false, "a stranger finishes the withdrawal", "not the payer's side"),
        (true, "the payer finishes the withdrawal after the delay", "success"),
        (true, "a stranger sweeps the receiver's claims", "success"),
    ]
    .map(|(ok, step, reason)| (ok, step.to_string(), reason.to_string()));
    assert_eq!(steps, want);
    // The contract speaks the published events (batch-wire's), and says
    // what happened: one deposit, one claim (the replay and every refusal
    // logged nothing), the withdrawal, the sweep.
    let logs = rpc(&dn.rpc_url("base"), "eth_getLogs", json!([{ "address": SETTLEMENT, "fromBlock": "0x0", "toBlock": "latest" }])).await;
    let logs: Vec<alloy_primitives::Log> = logs
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let topics = l["topics"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().parse().unwrap()).collect();
            let data: alloy_primitives::Bytes = l["data"].as_str().unwrap().parse().unwrap();
            alloy_primitives::Log::new(SETTLEMENT.parse().unwrap(), topics, data).unwrap()
        })
        .collect();
    let named = |log: &alloy_primitives::Log| {
        use alloy_sol_types::SolEvent;
        let topic = log.topics()[0];
        [
            (batch_wire::ChannelCreated::SIGNATURE_HASH, "ChannelCreated"),
            (batch_wire::ChannelClosed::SIGNATURE_HASH, "ChannelClosed"),
            (batch_wire::Deposited::SIGNATURE_HASH, "Deposited"),
            (batch_wire::Claimed::SIGNATURE_HASH, "Claimed"),
            (batch_wire::Settled::SIGNATURE_HASH, "Settled"),
            (batch_wire::Refunded::SIGNATURE_HASH, "Refunded"),
            (batch_wire::WithdrawInitiated::SIGNATURE_HASH, "WithdrawInitiated"),
            (batch_wire::WithdrawFinalized::SIGNATURE_HASH, "WithdrawFinalized"),
        ]
        .iter()
        .find(|(hash, _)| *hash == topic)
        .map(|(_, name)| *name)
        .unwrap_or("unknown")
    };
    assert_eq!(
        logs.iter().map(named).collect::<Vec<_>>(),
        ["ChannelCreated", "Deposited", "Claimed", "WithdrawInitiated", "WithdrawFinalized", "Settled"]
    );
    {
        use alloy_sol_types::SolEvent;
        let deposited = batch_wire::Deposited::decode_log(&logs[1]).unwrap();
        assert_eq!((deposited.amount, deposited.newBalance), (50_000, 50_000));
        let claimed = batch_wire::Claimed::decode_log(&logs[2]).unwrap();
        assert_eq!((claimed.claimAmount, claimed.newTotalClaimed), (20_000, 20_000));
        assert_eq!(batch_wire::WithdrawFinalized::decode_log(&logs[4]).unwrap().amount, 30_000);
        assert_eq!(batch_wire::Settled::decode_log(&logs[5]).unwrap().amount, 20_000);
    }
    // 50,000 in; 20,000 claimed once (the replayed claim changed nothing)
    // and swept to the receiver; 30,000 withdrawn by the payer.
    assert_eq!(got["channel"], json!({ "balance": "20000", "totalClaimed": "20000" }), "{got}");
    assert_eq!((got["withdrawn"].as_str(), got["swept"].as_str()), (Some("30000"), Some("20000")), "{got}");
    assert_eq!(dn.balance_of("base", "usdc", RECEIVER).await, U256::from(20_000u64));
    assert_eq!(dn.balance_of("base", "usdc", &payer).await, payer0 - U256::from(20_000u64));
    assert_eq!(dn.balance_of("base", "usdc", SETTLEMENT).await, U256::ZERO);
}

/// `batch-wire` (the scheme's typed data, calls and payloads, for the
/// adapter and the host) agrees with the reference package as installed: a
/// fresh run of devnet/vectors/batch-vectors.mjs (new salts, nonces and
/// signatures by `@x402/evm`'s client and signing helpers) checks out, each
/// id and signature by the digests batch-wire computes.
#[test]
fn batch_wire_agrees_with_a_fresh_run_of_the_reference_package() {
    use alloy_primitives::{Address, Signature, B256};
    let v: Value = serde_json::from_str(&node("batch-vectors.mjs", &[], "")).unwrap();
    let keccak = |data: &[u8]| alloy_primitives::keccak256(data).0;
    let recover =
        |digest: &B256, sig: &[u8]| -> Option<Address> { Signature::from_raw(sig).ok()?.recover_address_from_prehash(digest).ok() };
    assert_eq!(batch_wire::vectors::check(&v, &keccak, &recover), Ok(4 + 3 + 4 + 6 * 3 + 2));
}
