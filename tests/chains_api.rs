//! `GET /api/chains` from config and flags, the error envelope, and the
//! binary's start-up behaviour.

use crate::common;

use std::process::{Command, Stdio};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use stablerail::adapter::system_clock;
use tower::ServiceExt;

/// Payer-and-target base, a payer-only chain, a disabled chain, TRON behind
/// its flag (its USDT gated by it too), and a chain with nothing to serve.
fn body(tron_enabled: bool) -> String {
    format!(
        r#"{base}
[flags]
TRON_ENABLED = {tron_enabled}

[adapters]
tron-permit2 = "tron_permit2.wasm"

[chains.skale-base]
family = "evm"
chain_id = 1187947933
roles = ["payer"]
[chains.skale-base.assets.usdc]
state = "live"
scheme = "eip3009"
token = "0x85889c8c714505E0c94b30fcfcF64fE3Ac8FCb20"
decimals = 6
eip712_name = "Bridged USDC (SKALE Bridge)"
eip712_version = "2"

[chains.monad]
enabled = false
family = "evm"
roles = ["payer", "target"]

[chains.ethereum]
family = "evm"
chain_id = 1
roles = ["payer", "target"]
[chains.ethereum.assets.usdc]
state = "unwired"
scheme = "eip3009"
decimals = 6

[chains.tron]
gate = "TRON_ENABLED"
family = "tron"
chain_id = 728126428
caip2 = "tron:0x2b6653dc"
roles = ["payer", "target"]
[chains.tron.assets.usdt]
state = "gated"
flag = "TRON_ENABLED"
scheme = "tron-permit2"
token = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
decimals = 6
params = {{ permit2-address = "TTJxU3P8rHycAyFY4kVtGNfmnMH4ezcuM9", proxy-address = "TNtw4Wg6uQe4bqFywtcn5qagVZesSdYBSs" }}
"#,
        base = common::BASE_USDC
    )
}

async fn get(tron_enabled: bool, uri: &str) -> (StatusCode, Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write_config(dir.path(), &body(tron_enabled));
    common::init_keys(&path, "sqlite::memory:").await;
    let state = stablerail::server::build_state(&path, "sqlite::memory:", system_clock()).await.unwrap();
    let resp = stablerail::api::router(state).oneshot(Request::get(uri).body(Body::empty()).unwrap()).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn chains_follow_roles_and_the_tron_flag() {
    let (status, off) = get(false, "/api/chains").await;
    assert_eq!(status, StatusCode::OK);
    // ethereum has nothing to serve (its one asset unwired): not listed.
    assert_eq!(off, json!({ "chains": ["base", "skale-base"], "target_chains": ["base"] }));

    let (_, on) = get(true, "/api/chains").await;
    assert_eq!(on, json!({ "chains": ["base", "skale-base", "tron"], "target_chains": ["base", "tron"] }));
}

#[tokio::test]
async fn unknown_routes_use_the_error_envelope() {
    let (status, body) = get(false, "/api/nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["statusCode"], 404);
    assert_eq!(body["error"], "Not Found");
    assert!(body["message"].as_str().unwrap().len() > 3);
}

fn binary() -> Command {
    let mut c = Command::new(common::stablerail_bin());
    c.env_remove("TRON_ENABLED").env_remove("USDT_ENABLED").env("RUST_LOG", "warn");
    c
}

/// Run `serve` on a free port (after `keys init`, on a database beside
/// the config) and return what a create paying on TRON answers.
fn serve_and_create(config: &std::path::Path, env: &[(&str, &str)]) -> Value {
    let port = common::process::free_port();
    let database = format!("sqlite://{}", config.with_file_name("sr.db").display());
    let init = binary().args(["keys", "init", "--database", &database, "--config"]).arg(config).envs(env.iter().copied()).output().unwrap();
    assert!(init.status.success(), "keys init: {}", String::from_utf8_lossy(&init.stderr));
    let mut child = binary()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--database", &database, "--config"])
        .arg(config)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::wait_for_port(port);
    let ask = json!({ "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "tron", "payer_asset": "usdt" });
    let (_, answer) = common::http(port, "POST", "/api/intents", None, Some(ask));
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let status = child.wait().unwrap();
    assert!(status.success(), "graceful shutdown on SIGTERM exits 0, got {status:?}");
    answer
}

#[test]
fn environment_overrides_the_config_flag() {
    // What a create on TRON answers tells whether the flag is on: off, the
    // chain is not enabled; on, it is (and its USDT waits for its node,
    // which this config names none of).
    let dir = tempfile::tempdir().unwrap();
    let path = common::write_config(dir.path(), &body(false));
    let on = serve_and_create(&path, &[("TRON_ENABLED", "true")]);
    assert_ne!(on["message"], "TRON is not enabled on this deployment", "{on}");
    let path = common::write_config(dir.path(), &body(true));
    let off = serve_and_create(&path, &[("TRON_ENABLED", "0")]);
    assert_eq!(off["message"], "TRON is not enabled on this deployment", "{off}");
}

#[tokio::test]
async fn shipped_config_serves_the_matrix_and_tron_behind_its_flag() {
    common::adapters_dir();
    let shipped = common::repo_root().join("chains.toml");
    let dir = tempfile::tempdir().unwrap();
    // The shipped file with its cache redirected into the temp dir.
    let text = std::fs::read_to_string(&shipped)
        .unwrap()
        .replace(
            "adapters_dir = \"adapters/target/wasm32-wasip2/release\"",
            &format!("adapters_dir = {:?}", common::adapters_dir().display().to_string()),
        )
        .replace("cache_dir = \".stablerail/cache\"", &format!("cache_dir = {:?}", dir.path().join("cache").display().to_string()));
    let path = dir.path().join("chains.toml");
    std::fs::write(&path, text).unwrap();

    // In process: the chains the config exposes (serve would also withhold
    // any whose public RPC does not answer from here).
    common::init_keys(&path, "sqlite::memory:").await;
    let state = stablerail::server::build_state(&path, "sqlite::memory:", system_clock()).await.unwrap();
    let resp = stablerail::api::router(state).oneshot(Request::get("/api/chains").body(Body::empty()).unwrap()).await.unwrap();
    let listed: Value = serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    // The spec's whole EVM matrix (skale-base and megaeth pay, never
    // receive) and Solana on both sides.
    assert_eq!(
        listed,
        json!({
            "chains": ["arbitrum", "base", "bsc", "ethereum", "hyperevm", "megaeth", "monad", "polygon", "skale-base", "solana"],
            "target_chains": ["arbitrum", "base", "bsc", "ethereum", "hyperevm", "monad", "polygon", "solana"],
        })
    );

    // Turning TRON on serves mainnet USDT through the x402 proxy x402-rs
    // publishes (checked on chain before it is served), and never Nile:
    // a testnet has its own flag.
    let on = std::fs::read_to_string(&path).unwrap().replace("TRON_ENABLED = false", "TRON_ENABLED = true");
    let cfg = stablerail::config::Config::parse(&on).unwrap();
    let served: Vec<(&str, &str)> = cfg.served_assets().map(|(chain, _, key, _)| (chain, key)).collect();
    assert!(served.contains(&("solana", "usdc")) && served.contains(&("tron", "usdt")), "{served:?}");
    assert!(!served.contains(&("tron-nile", "usdt")), "TRON_ENABLED serves mainnet TRON only: {served:?}");
    let nile = on.replace("TRON_NILE_ENABLED = false", "TRON_NILE_ENABLED = true");
    let cfg = stablerail::config::Config::parse(&nile).unwrap();
    let served: Vec<(&str, &str)> = cfg.served_assets().map(|(chain, _, key, _)| (chain, key)).collect();
    assert!(served.contains(&("tron-nile", "usdt")), "{served:?}");
    use stablerail::config::Kind;
    let kinds: Vec<(&str, Kind)> = ["tron", "tron-nile", "base", "solana"].iter().map(|c| (*c, cfg.chains[*c].kind())).collect();
    assert_eq!(kinds, [("tron", Kind::Mainnet), ("tron-nile", Kind::Testnet), ("base", Kind::Mainnet), ("solana", Kind::Mainnet)]);
    // A known chain's kind is its own: the config may not say otherwise.
    let lying = nile.replacen("[chains.tron-nile]\n", "[chains.tron-nile]\nkind = \"mainnet\"\n", 1);
    assert_ne!(lying, nile);
    let refused = stablerail::config::Config::parse(&lying).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(refused.contains("kind says mainnet"), "{refused}");

    // With both TRON chains on, an intent across a testnet and a mainnet is
    // refused either way round, in the envelope, before a node is asked.
    std::fs::write(&path, &nile).unwrap();
    let state = stablerail::server::build_state(&path, "sqlite::memory:", system_clock()).await.unwrap();
    for (payer, target) in [("tron-nile", "base"), ("base", "tron-nile"), ("solana", "tron-nile")] {
        let body = json!({ "recipient": "TXLAQ63Xg1NAzckPwKHvzw7CSEmLMEqcdj", "amount": "1", "payer_chain": payer, "target_chain": target, "payer_asset": "usdt" });
        let req = Request::post("/api/intents").header("content-type", "application/json").body(Body::from(body.to_string())).unwrap();
        let resp = stablerail::api::router(state.clone()).oneshot(req).await.unwrap();
        let status = resp.status();
        let e: Value = serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(
            (status.as_u16(), e["message"].as_str(), e["statusCode"].as_u64()),
            (400, Some("payer_chain and target_chain must both be mainnets or both testnets"), Some(400)),
            "{payer} -> {target}: {e}"
        );
    }
}

#[test]
fn inspect_prints_the_description() {
    let out = binary()
        .args(["adapter", "inspect"])
        .arg(common::adapters_dir().join("eip3009.wasm"))
        .args(["--config", "/nonexistent.toml"])
        .current_dir(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["name"], "eip3009");
    assert_eq!(d["interface"], "stablerail:adapter@0.7.0");
    assert_eq!(d["serves"], json!([{ "family": "evm", "scheme": "eip3009" }]));

    let dir = tempfile::tempdir().unwrap();
    let bad = binary().args(["adapter", "inspect", "/nonexistent.wasm"]).current_dir(dir.path()).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("/nonexistent.wasm not found"));
}

#[test]
fn alias_of_copies_the_asset_and_refuses_unknown_targets() {
    let base = |alias: &str| {
        format!(
            r#"
[service]
default_target_chain = "polygon"
[adapters]
permit2 = "permit2.wasm"
[chains.polygon]
family = "evm"
chain_id = 137
roles = ["payer", "target"]
[chains.polygon.assets.usdt0]
state = "live"
scheme = "permit2"
token = "0xc2132D05D31c914a87C6611C10748AEb04B58e8F"
decimals = 6
eip712_name = "USDT0"
eip712_version = "1"
domain = "salted"
[chains.polygon.assets.usdt]
state = "unwired"
{alias}
"#
        )
    };
    let cfg = stablerail::config::Config::parse(&base(r#"alias_of = "usdt0""#)).unwrap();
    let (usdt, usdt0) = (&cfg.chains["polygon"].assets["usdt"], &cfg.chains["polygon"].assets["usdt0"]);
    assert_eq!(usdt.token, usdt0.token);
    assert_eq!(usdt.eip712_name.as_deref(), Some("USDT0"));
    assert_eq!(usdt.domain, stablerail::config::DomainKind::Salted);
    assert_eq!(usdt.scheme, "permit2");
    assert_eq!(usdt.state, stablerail::config::AssetState::Unwired, "the alias keeps its own state");

    let err = stablerail::config::Config::parse(&base(r#"alias_of = "usdc""#)).unwrap_err().to_string();
    assert!(err.contains("chains.polygon.assets.usdt.alias_of names `usdc`, which is not an asset of this chain"), "{err}");
    let err = stablerail::config::Config::parse(&base("alias_of = 7")).unwrap_err().to_string();
    assert!(err.contains("alias_of must be a string"), "{err}");
}
