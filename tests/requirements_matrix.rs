//! `payment_requirements.extra` for every live EVM (chain, asset) pair of the
//! spec's table, created through the API from the shipped chains.toml. The
//! values an operator must supply (chain ids and token addresses our
//! reference lacks, collection wallets) are filled in with test values;
//! everything else is the shipped file as it is.

use crate::common;

use serde_json::{json, Value};

use common::app::{App, MERCHANT};

const BOTH: &[&str] = &["eip2612GasSponsoring", "erc20ApprovalGasSponsoring"];
const PERMIT: &[&str] = &["eip2612GasSponsoring"];

/// Scheme facts per pair, from the spec's token × chain and scheme tables.
struct Row {
    chain: &'static str,
    asset: &'static str,
    decimals: u8,
    /// (name, version) of the token's EIP-712 domain, if it has one.
    domain: Option<(&'static str, &'static str)>,
    salted: bool,
    /// Permit2 and its accepted extensions; None = EIP-3009.
    permit2: Option<&'static [&'static str]>,
}

const fn row(
    chain: &'static str,
    asset: &'static str,
    decimals: u8,
    domain: Option<(&'static str, &'static str)>,
    salted: bool,
    permit2: Option<&'static [&'static str]>,
) -> Row {
    Row { chain, asset, decimals, domain, salted, permit2 }
}

const USDC: Option<(&str, &str)> = Some(("USD Coin", "2"));
const USDT0_TETHER: Option<(&str, &str)> = Some(("USD\u{20ae}0", "1"));
const USDT0_ASCII: Option<(&str, &str)> = Some(("USDT0", "1"));

const LIVE: &[Row] = &[
    row("base", "usdc", 6, USDC, false, None),
    row("ethereum", "usdc", 6, USDC, false, None),
    row("polygon", "usdc", 6, USDC, false, None),
    row("hyperevm", "usdc", 6, USDC, false, None),
    row("arbitrum", "usdc", 6, USDC, false, None),
    row("skale-base", "usdc", 6, Some(("Bridged USDC (SKALE Bridge)", "2")), false, None),
    row("bsc", "usdc", 18, None, false, Some(BOTH)),
    row("monad", "usdc", 6, Some(("USDC", "2")), false, Some(PERMIT)),
    row("megaeth", "usdc", 18, Some(("MegaUSD", "1")), false, Some(PERMIT)),
    row("polygon", "usdt0", 6, USDT0_ASCII, true, Some(PERMIT)),
    row("polygon", "usdt", 6, USDT0_ASCII, true, Some(PERMIT)),
    row("arbitrum", "usdt0", 6, USDT0_TETHER, false, None),
    row("arbitrum", "usdt", 6, USDT0_TETHER, false, None),
    row("hyperevm", "usdt0", 6, USDT0_TETHER, false, None),
    row("monad", "usdt0", 6, USDT0_ASCII, false, None),
    row("megaeth", "usdt0", 6, USDT0_ASCII, false, None),
];

/// Live only while USDT_ENABLED is on.
const GATED: &[Row] = &[
    row("base", "usdt", 6, None, false, Some(BOTH)),
    row("ethereum", "usdt", 6, None, false, Some(BOTH)),
    row("bsc", "usdt", 18, None, false, Some(BOTH)),
];

/// A deterministic stand-in address for an operator-supplied value.
fn filler(seed: &str) -> String {
    let h = alloy_primitives::keccak256(seed.as_bytes());
    alloy_primitives::Address::from_slice(&h[12..]).to_checksum(None)
}

/// The shipped chains.toml with the operator's blanks filled in.
fn shipped_config(dir: &std::path::Path, usdt: bool) -> String {
    let text = std::fs::read_to_string(common::repo_root().join("chains.toml")).unwrap();
    let mut cfg: toml::Table = toml::from_str(&text).unwrap();
    let service = cfg["service"].as_table_mut().unwrap();
    service.insert("adapters_dir".into(), common::adapters_dir().display().to_string().into());
    service.insert("cache_dir".into(), common::adapter_cache_dir().display().to_string().into());
    service.insert("pepper_file".into(), dir.join("pepper").display().to_string().into());
    service.insert("master_key_file".into(), dir.join("master.key").display().to_string().into());
    cfg["flags"].as_table_mut().unwrap().insert("USDT_ENABLED".into(), usdt.into());
    let chains = cfg["chains"].as_table_mut().unwrap();
    for (n, (name, chain)) in chains.iter_mut().enumerate() {
        let chain = chain.as_table_mut().unwrap();
        if chain["family"].as_str() != Some("evm") {
            continue;
        }
        // OPERATOR: chain ids our reference does not give.
        chain.entry("chain_id").or_insert(toml::Value::Integer(900_000 + n as i64));
        chain.remove("enabled");
        chain.insert("collection_address".into(), filler(&format!("collect:{name}")).into());
        for (key, asset) in chain["assets"].as_table_mut().unwrap().iter_mut() {
            let asset = asset.as_table_mut().unwrap();
            if !asset.contains_key("alias_of") && asset.get("token").is_none_or(|t| t.as_str() == Some("")) {
                asset.insert("token".into(), filler(&format!("token:{name}:{key}")).into());
            }
        }
    }
    toml::to_string(&cfg).unwrap()
}

async fn create(app: &App, chain: &str, asset: &str) -> (u16, Value) {
    let body = json!({ "recipient": MERCHANT, "amount": "1.5", "payer_chain": chain, "payer_asset": asset, "target_chain": "base" });
    let (s, v) = app.call("POST", "/api/intents", Some(body), &[]).await;
    (s.as_u16(), v)
}

fn check(r: &Row, intent: &Value, cfg: &stablerail::config::Config) {
    let at = format!("{}/{}", r.chain, r.asset);
    let req = &intent["payment_requirements"];
    let extra = &req["extra"];
    let chain = &cfg.chains[r.chain];
    let asset = &chain.assets[r.asset];
    assert_eq!(req["scheme"], "exact", "{at}");
    assert_eq!(req["network"], format!("eip155:{}", chain.chain_id.unwrap()), "{at}");
    assert_eq!(req["payTo"], chain.collection_address.clone().unwrap(), "{at}");
    assert_eq!(req["asset"], asset.token, "{at}");
    assert_eq!(extra["asset"], asset.token, "{at}");
    assert_eq!(extra["decimals"], r.decimals, "{at}");
    assert_eq!(extra["amount"], req["amount"], "{at}");
    // sending_amount in base units of this token's decimals, exactly.
    let sending: rust_decimal::Decimal = intent["sending_amount"].as_str().unwrap().parse().unwrap();
    let units = sending * rust_decimal::Decimal::from(10u64.pow(u32::from(r.decimals)));
    assert_eq!(req["amount"], units.normalize().to_string(), "{at}");
    match r.domain {
        Some((name, version)) => {
            assert_eq!(extra["name"], name, "{at}");
            assert_eq!(extra["version"], version, "{at}");
        }
        None => assert!(extra.get("name").is_none() && extra.get("version").is_none(), "{at}: no token domain: {extra}"),
    }
    assert_eq!(extra.get("domainType").and_then(Value::as_str), r.salted.then_some("salted"), "{at}");
    match r.permit2 {
        Some(ext) => {
            assert_eq!(extra["assetTransferMethod"], "permit2", "{at}");
            assert_eq!(extra["extensions"], json!(ext), "{at}");
        }
        None => {
            assert!(extra.get("assetTransferMethod").is_none(), "{at}: EIP-3009 leaves it absent: {extra}");
            assert!(extra.get("extensions").is_none(), "{at}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_live_evm_pair_has_its_extra() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::on_config(&shipped_config(dir.path(), true)).await;
    let mut served = 0;
    for r in LIVE.iter().chain(GATED) {
        let (s, intent) = create(&app, r.chain, r.asset).await;
        assert_eq!(s, 201, "{}/{}: {intent}", r.chain, r.asset);
        check(r, &intent, &app.state.config);
        served += 1;
    }
    // The table covers every EVM pair the config serves, and nothing else.
    let configured = app.state.config.served_assets().filter(|(_, c, _, _)| c.family == stablerail::config::Family::Evm).count();
    assert_eq!(served, configured);
    // UTF-8 bytes of the USD₮0 name go out exactly.
    let (_, intent) = create(&app, "arbitrum", "usdt0").await;
    assert_eq!(intent["payment_requirements"]["extra"]["name"].as_str().unwrap().as_bytes(), b"USD\xe2\x82\xae0");
    app.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usdt_gate_off_refuses_usdt_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::on_config(&shipped_config(dir.path(), false)).await;
    for r in GATED {
        let (s, e) = create(&app, r.chain, r.asset).await;
        assert_eq!(s, 400, "{}/{}: {e}", r.chain, r.asset);
        assert_eq!(e["message"], "invalid payer_asset", "{}/{}", r.chain, r.asset);
    }
    // The usdt names that are aliases of usdt0 are not behind the gate.
    for (chain, asset) in [("polygon", "usdt"), ("arbitrum", "usdt")] {
        assert_eq!(create(&app, chain, asset).await.0, 201, "{chain}/{asset}");
    }
    // Shipped as is, bsc USDC is live and needs no operator value.
    let (s, _) = create(&app, "bsc", "usdc").await;
    assert_eq!(s, 201);
    app.close().await;
}
