//! Keys that never leave a hardware module, and the master key rotated.
//!
//! The module is SoftHSM2 (Debian's `softhsm2`) through PKCS#11: the
//! relayer's and the proxy's keys are generated inside a fresh token by
//! `keys init`, marked sensitive and never extractable, and the service
//! (its own binary, logged in to the same token) signs a paid intent's
//! source leg on EVM and its Solana payout with them; balances are read on
//! chain. `keys rotate-master` is killed half-way, every key still opens,
//! and the re-run finishes under one new key.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::common;
use common::devnet::{x402_pay, Devnet};
use common::process::{free_port, http, serve, wait_status};
use stablerail::config::Family;
use stablerail::family::keys::{self, Keystore, Role};
use stablerail::family::module::Held;

const SOFTHSM: &str = "/usr/lib/softhsm/libsofthsm2.so";
const SOL_MERCHANT: &str = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";

/// A fresh token in SoftHSM's store (`softhsm2-util`), removed when dropped.
struct Token(String);

impl Token {
    fn new() -> Token {
        assert!(Path::new(SOFTHSM).exists(), "SoftHSM2 is installed (scripts/test.sh installs Debian's softhsm2)");
        let label = format!("sr-{}-{}", std::process::id(), ulid::Ulid::new().to_string().to_lowercase().split_at(20).1);
        let out = Command::new("softhsm2-util")
            .args(["--init-token", "--free", "--label", &label, "--pin", "246810", "--so-pin", "13579111"])
            .output()
            .unwrap();
        assert!(out.status.success(), "softhsm2-util: {}", String::from_utf8_lossy(&out.stderr));
        Token(label)
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        let _ = Command::new("softhsm2-util").args(["--delete-token", "--token", &self.0]).output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_made_in_a_module_pay_an_evm_source_leg_and_a_solana_payout() {
    let token = Token::new();
    let dir = tempfile::tempdir().unwrap();
    let pin = dir.path().join("hsm.pin");
    std::fs::write(&pin, "246810\n").unwrap();
    let hsm = format!(
        "[hsm]\nmodule = \"{SOFTHSM}\"\ntoken = \"{}\"\npin_file = \"{}\"\nroles = [\"relayer\", \"proxy\"]\n",
        token.0,
        pin.display()
    );
    let section = stablerail::config::Hsm {
        module: Some(SOFTHSM.into()),
        token: token.0.clone(),
        pin_file: Some(pin.clone()),
        roles: vec!["relayer".into(), "proxy".into()],
    };
    let held = Held::open(&section, &|p: &Path| p.to_path_buf()).unwrap().unwrap();
    let dn = Devnet::start_held(32545, "base,solana", &hsm, held.clone()).await;

    // Made inside the module, and it will not give them out.
    for name in ["relayer:evm", "proxy:evm", "relayer:solana", "proxy:solana"] {
        let id = dn.state.keys.held_id(name).await.unwrap().unwrap_or_else(|| panic!("{name} is not held in the module"));
        let g = held.module().guarded(&id).unwrap();
        assert!(g.sensitive && !g.extractable && g.never_extractable, "{name}: {g:?}");
        assert!(!held.module().gives_private_value(&id), "{name}: the module gave its private value");
    }
    // Not made there: the collection wallet's role is not the module's.
    assert!(dn.state.keys.held_id("collection:evm").await.unwrap().is_none());
    let relayer = dn.state.keys.address(keys::RELAYER).await.unwrap();
    let proxy = dn.state.keys.address("proxy:solana").await.unwrap();

    let port = free_port();
    let _service = serve(&dn, port);
    let (payer, key) = dn.payer(1);
    let body =
        json!({ "recipient": SOL_MERCHANT, "amount": "2.5", "payer_chain": "base", "target_chain": "solana", "target_asset": "usdc" });
    let (s, intent) = http(port, "POST", "/api/intents", Some(body));
    assert_eq!(s, 201, "{intent}");
    let id = intent["intent_id"].as_str().unwrap().to_string();
    let payer_before = dn.balance("base", &payer).await;
    let proxy_before = dn.sol_balance("usdc", &proxy).await;
    let proof = x402_pay(&intent["payment_requirements"], &key);
    let (s, r) = http(port, "POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })));
    assert_eq!(s, 200, "{r}");
    let done = wait_status(port, &id, "TARGET_SETTLED", Duration::from_secs(120));

    // The source leg was the module relayer's transaction.
    let tx = common::devnet::rpc(&dn.rpc_url("base"), "eth_getTransactionByHash", json!([done["source_payment"]["tx_hash"]])).await;
    assert_eq!(tx["from"].as_str().unwrap().to_lowercase(), relayer.to_lowercase(), "{tx}");
    let sending = alloy_primitives::U256::from_str_radix(intent["payment_requirements"]["amount"].as_str().unwrap(), 10).unwrap();
    assert_eq!(dn.balance("base", &payer).await, payer_before - sending, "the payer paid once");
    // The payout: from the module proxy's wallet, exactly once.
    assert_eq!(dn.sol_balance("usdc", SOL_MERCHANT).await, 2_500_000, "the merchant got exactly 2.5 USDC");
    assert_eq!(dn.sol_balance("usdc", &proxy).await, proxy_before - 2_500_000, "from the proxy's wallet");
}

/// The database's keys, name → address, as a fresh keystore opens them.
async fn opened(db: &stablerail::db::Db, master: &Path) -> Result<Vec<(String, String)>, String> {
    let keys = Keystore::open(db.clone(), master).map_err(|e| e.to_string())?;
    let mut out = vec![];
    for (name, _) in keys.list().await.unwrap() {
        let family = keys::family_of(&name);
        let key = keys.key(&name).await.map_err(|e| format!("{name}: {e}"))?;
        out.push((name, key.address(family)));
    }
    Ok(out)
}

/// How many keys open under `master` alone (a copy, with no next key beside it).
async fn open_under(db: &stablerail::db::Db, master: &Path) -> usize {
    let alone = tempfile::tempdir().unwrap();
    let copy = alone.path().join("master.key");
    std::fs::copy(master, &copy).unwrap();
    let keys = Keystore::open(db.clone(), &copy).unwrap();
    let mut n = 0;
    for (name, _) in keys.list().await.unwrap() {
        n += usize::from(keys.key(&name).await.is_ok());
    }
    n
}

fn rotate(config: &Path, database: &str, pause_ms: u64) -> Command {
    let mut cmd = Command::new(common::stablerail_bin());
    cmd.args(["keys", "rotate-master", "--config"])
        .arg(config)
        .args(["--database", database])
        .env("STABLERAIL_ROTATE_PAUSE_MS", pause_ms.to_string())
        .env_remove("STABLERAIL_MASTER_KEY");
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn rotate_master_killed_half_way_and_run_again_leaves_every_key_usable() {
    let dir = tempfile::tempdir().unwrap();
    // The shipped config: its keys under `.stablerail/` beside it.
    let config: PathBuf = dir.path().join("chains.toml");
    std::fs::copy(common::repo_root().join("chains.toml"), &config).unwrap();
    let database = format!("sqlite://{}", dir.path().join("sr.db").display());
    let db = stablerail::db::Db::connect(&database).await.unwrap();
    let master = dir.path().join(".stablerail/master.key");
    let families = [Family::Evm, Family::Solana, Family::Tron];
    keys::init(&master, &dir.path().join(".stablerail/pepper"), db.clone(), &families, None).await.unwrap();
    let keys = Keystore::open(db.clone(), &master).unwrap();
    for n in 0..12 {
        for family in families {
            keys.address(&Role::Agent(format!("agent-{n}")).key_name(family)).await.unwrap();
        }
    }
    let before = opened(&db, &master).await.unwrap();
    assert_eq!(before.len(), 9 + 36);
    let old = std::fs::read_to_string(&master).unwrap();

    // Killed half-way: some keys under the next key, the rest under the
    // old; every key opens.
    let mut run = rotate(&config, &database, 60).stdout(std::process::Stdio::null()).spawn().unwrap();
    let next = keys::next_master_file(&master);
    for _ in 0..200 {
        if next.exists() && open_under(&db, &next).await >= 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A second run meanwhile is refused (it would write another next key).
    let second = rotate(&config, &database, 0).output().unwrap();
    assert!(!second.status.success(), "a second rotation ran beside the first");
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("another `keys rotate-master` is running"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    run.kill().unwrap();
    run.wait().unwrap();
    let moved = open_under(&db, &next).await;
    assert!((1..before.len()).contains(&moved), "killed half-way: {moved} of {} re-sealed", before.len());
    assert_eq!(opened(&db, &master).await.unwrap(), before, "every key opens while the rotation is half done");
    assert_eq!(std::fs::read_to_string(&master).unwrap(), old, "the master key is the old one until the end");

    // Run again: it finishes, under the same next key.
    let next_key = std::fs::read_to_string(&next).unwrap();
    let out = rotate(&config, &database, 0).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let done: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["resealed"].as_u64().unwrap() + done["already"].as_u64().unwrap(), before.len() as u64, "{done}");
    assert!(done["already"].as_u64().unwrap() >= moved as u64, "{done}");
    assert!(!next.exists());
    assert_eq!(std::fs::read_to_string(&master).unwrap(), next_key, "the next key is the master key now");
    assert_eq!(opened(&db, &master).await.unwrap(), before, "every key opens under the new master key, the same keys");
    // The old master key opens none of them.
    let old_dir = tempfile::tempdir().unwrap();
    std::fs::write(old_dir.path().join("master.key"), &old).unwrap();
    assert_eq!(open_under(&db, &old_dir.path().join("master.key")).await, 0, "the old master key opens nothing");
}

/// The receiver authorizer signs claims and refunds only: the same secret as
/// a wallet's (the EVM relayer's, or the TRON relayer's, whose address is
/// another form of the same 20 bytes) is refused, a key of its own taken.
#[tokio::test(flavor = "multi_thread")]
async fn the_receiver_authorizer_is_never_a_wallets_key() {
    use stablerail::x402::facilitator::{Authorizer, AUTHORIZER_KEY};
    const SECRET: &str = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
    for wallet in ["relayer:evm", "relayer:tron"] {
        let dir = tempfile::tempdir().unwrap();
        let db = stablerail::db::Db::connect(&format!("sqlite://{}", dir.path().join("sr.db").display())).await.unwrap();
        let master = dir.path().join("master.key");
        keys::init(&master, &dir.path().join("pepper"), db.clone(), &[], None).await.unwrap();
        let keys = Keystore::open(db.clone(), &master).unwrap();
        keys.import(wallet, SECRET).await.unwrap();
        keys.import(AUTHORIZER_KEY, SECRET).await.unwrap();
        let refused = Authorizer::load(&keys).await.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains(&format!("same key as `{wallet}`")), "{wallet}: {refused:?}");
    }
    // Its own key (made on first use): taken, and no wallet's.
    let dir = tempfile::tempdir().unwrap();
    let db = stablerail::db::Db::connect(&format!("sqlite://{}", dir.path().join("sr.db").display())).await.unwrap();
    let master = dir.path().join("master.key");
    keys::init(&master, &dir.path().join("pepper"), db.clone(), &[Family::Evm, Family::Tron], None).await.unwrap();
    let keys = Keystore::open(db, &master).unwrap();
    let ours = Authorizer::load(&keys).await.unwrap();
    assert_ne!(ours.address.to_string(), keys.address(keys::RELAYER).await.unwrap());
}
