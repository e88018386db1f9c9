//! `stablerail adapter check`: a shipped adapter passes against its own
//! vectors, and the checks fail where the adapter or the chain is not what
//! the vectors say, naming the check.

use std::process::Command;

use serde_json::{json, Value};

use crate::common;

fn check(wasm: &str, vectors: Option<&Value>) -> (bool, Value) {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::new(common::stablerail_bin());
    c.args(["adapter", "check"]).arg(common::adapters_dir().join(wasm)).args(["--config", "/nonexistent.toml"]);
    if let Some(v) = vectors {
        let path = dir.path().join("vectors.json");
        std::fs::write(&path, v.to_string()).unwrap();
        c.arg("--vectors").arg(path);
    }
    let out = c.current_dir(dir.path()).env("RUST_LOG", "error").output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.success(), report["passed"] == true, "the exit code follows the report");
    (out.status.success(), report)
}

fn results(report: &Value) -> Vec<(String, String)> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["check"].as_str().unwrap().into(), r["result"].as_str().unwrap().into()))
        .collect()
}

fn failed(report: &Value) -> Vec<String> {
    results(report).into_iter().filter(|(_, r)| r == "fail").map(|(c, _)| c).collect()
}

fn vectors_of(adapter: &str) -> Value {
    let path = common::repo_root().join("adapters").join(adapter).join("vectors.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn vectors() -> Value {
    vectors_of("eip3009")
}

#[test]
fn the_shipped_adapters_pass_every_check_of_their_vectors() {
    for (wasm, crate_dir) in [("eip3009.wasm", "eip3009"), ("permit2.wasm", "permit2")] {
        let (ok, report) = check(wasm, Some(&vectors_of(crate_dir)));
        assert!(ok, "{report:#}");
        every_check_passed(&report, &[]);
    }
    // Solana: its proof lives by its blockhash (settle refuses it once the
    // node no longer knows it), and replay is the ledger's (one success per
    // transaction), not a chain read.
    let (ok, report) = check("solana_spl.wasm", Some(&vectors_of("solana-spl")));
    assert!(ok, "{report:#}");
    checks_passed(&report, &["replay x402-v2"], "tamper window (expired on chain) x402-v2");
    assert_eq!(report["interface"], "stablerail:adapter@0.3.0", "the suite's 0.3.0 component");
    // TRON: no replay answers (a Permit2 nonce is refused by the chain at settle).
    let (ok, report) = check("tron_permit2.wasm", Some(&vectors_of("tron-permit2")));
    assert!(ok, "{report:#}");
    every_check_passed(&report, &["replay x402-v2"]);
    // Contract payers: the EVM adapters accept a wallet's ERC-1271 answer and
    // refuse what the wallet or the chain's allowlist refuses.
    for (crate_dir, report) in [
        ("eip3009", check("eip3009.wasm", Some(&vectors_of("eip3009"))).1),
        ("permit2", check("permit2.wasm", Some(&vectors_of("permit2"))).1),
    ] {
        let rows: Vec<(String, String)> = results(&report).into_iter().filter(|(c, _)| c.starts_with("contract payer")).collect();
        let want = if crate_dir == "eip3009" { 4 } else { 3 };
        assert_eq!(rows.len(), want, "{crate_dir}: {report:#}");
        assert!(rows.iter().all(|(_, r)| r == "pass"), "{crate_dir}: {report:#}");
    }
    // upto pays resource servers only: no host-held wallet round trip.
    let (ok, report) = check("upto.wasm", Some(&vectors_of("upto")));
    assert!(ok, "{report:#}");
    every_check_passed(&report, &["authorize/assemble"]);
    // batch-settlement: the server writes the requirements (the vectors give
    // them), the scheme refuses by its spec's codes, a voucher has no
    // window, and host-held wallets never pay with it.
    let (ok, report) = check("batch_settlement.wasm", Some(&vectors_of("batch-settlement")));
    assert!(ok, "{report:#}");
    let all = results(&report);
    let mut skipped: Vec<String> = all.iter().filter(|(_, r)| r == "skip").map(|(c, _)| c.clone()).collect();
    let mut want_skipped: Vec<String> =
        ["deposit-eip3009", "deposit-authorization", "voucher"].map(|p| format!("tamper amount {p}")).into();
    want_skipped.extend(
        [
            "requirements",
            "authorize/assemble",
            "tamper window voucher",
            "replay voucher",
            "tamper window (early) deposit-eip3009",
            "tamper window (early) deposit-authorization",
            "replay deposit-authorization",
            "read-receipt deposit-authorization",
            "read-receipt voucher",
        ]
        .map(String::from),
    );
    skipped.sort();
    want_skipped.sort();
    assert_eq!(skipped, want_skipped, "{report:#}");
    for must in [
        "verify deposit-eip3009",
        "tamper recipient deposit-eip3009",
        "tamper window (late) deposit-eip3009",
        "tamper signer deposit-eip3009",
        "tamper signer deposit-authorization",
        "replay deposit-eip3009",
        "read-receipt deposit-eip3009",
        "verify voucher",
        "tamper recipient voucher",
        "tamper signer voucher",
        "contract payer erc1271-voucher",
        "contract payer erc1271-voucher-stranger",
        "limits",
    ] {
        assert!(all.contains(&(must.into(), "pass".into())), "{must}: {report:#}");
    }
    // A fresh run of the vectors' recipe (new salts, signatures, clock) by
    // the reference client as installed checks out the same.
    let fresh: Value = serde_json::from_str(&common::devnet::node("batch-check-vectors.mjs", &[], "")).unwrap();
    let (ok, again) = check("batch_settlement.wasm", Some(&fresh));
    assert!(ok, "{again:#}");
    assert_eq!(results(&again), all, "{again:#}");
    // The scheme's codes are held to: another code for a tampering fails it.
    let mut v = vectors_of("batch-settlement");
    v["scheme_refusals"]["recipient"] = json!(["invalid_batch_settlement_evm_token_mismatch"]);
    v["scheme_refusals"]["signer"] = json!(["invalid_batch_settlement_evm_voucher_signature"]);
    let (ok, report) = check("batch_settlement.wasm", Some(&v));
    assert!(!ok);
    let mut failed = failed(&report);
    failed.sort();
    assert_eq!(
        failed,
        [
            "tamper recipient deposit-authorization",
            "tamper recipient deposit-eip3009",
            "tamper recipient voucher",
            "tamper signer deposit-authorization"
        ],
        "{report:#}"
    );
    // Without vectors only the static checks run, and say so.
    let (ok, report) = check("eip3009.wasm", None);
    assert!(ok);
    assert!(results(&report).contains(&("vectors".into(), "skip".into())), "{report:#}");
}

/// Every check passed but those in `skipped`, which were skipped.
fn every_check_passed(report: &Value, skipped: &[&str]) {
    checks_passed(report, skipped, "tamper window (late) x402-v2");
    // Built on the kit: the newest interface.
    assert_eq!(report["interface"], "stablerail:adapter@0.7.0");
}

/// The same, for a proof whose window is tampered as `window`.
fn checks_passed(report: &Value, skipped: &[&str], window: &str) {
    let all = results(report);
    for name in skipped {
        assert!(all.contains(&(name.to_string(), "skip".into())), "{name} was not skipped: {report:#}");
    }
    let names: Vec<String> = all.into_iter().filter(|(_, r)| r == "pass").map(|(c, _)| c).collect();
    for want in [
        "loads",
        "interface",
        "imports",
        "serves",
        "requirements",
        "verify x402-v2",
        "tamper amount x402-v2",
        "tamper recipient x402-v2",
        window,
        "tamper signer x402-v2",
        "tamper malformed (not JSON) x402-v2",
        "tamper malformed (an empty object) x402-v2",
        "tamper malformed (a truncated payload) x402-v2",
        "preflight x402-v2",
        "replay x402-v2",
        "read-receipt x402-v2",
        "authorize/assemble",
        "determinism",
        "limits",
    ]
    .into_iter()
    .filter(|c| !skipped.contains(c))
    {
        assert!(names.iter().any(|n| n == want), "{want} did not pass: {report:#}");
    }
}

#[test]
fn a_check_fails_by_name_when_the_adapter_or_its_chain_differs() {
    // The chain says the authorization was used: preflight fails, and only it.
    let mut v = vectors();
    let replay = v["proofs"][0]["replay"][0].clone();
    v["chain"][0] = replay;
    let (ok, report) = check("eip3009.wasm", Some(&v));
    assert!(!ok);
    assert_eq!(failed(&report), vec!["preflight x402-v2".to_string()], "{report:#}");

    // Vectors whose payer is someone else: the valid proof's check fails.
    let mut v = vectors();
    v["proofs"][0]["payer"] = json!("0x000000000000000000000000000000000000dEaD");
    let (ok, report) = check("eip3009.wasm", Some(&v));
    assert!(!ok);
    assert_eq!(failed(&report), vec!["verify x402-v2".to_string()], "{report:#}");

    // A contract payer's row fails alone when the wallet says otherwise or
    // the vectors expect another answer.
    let mut v = vectors();
    let magic = format!("0x1626ba7e{}", "0".repeat(56));
    let answer = v["chain"].as_array().unwrap().iter().position(|a| a["result"] == json!(magic)).unwrap();
    v["chain"][answer]["result"] = json!(format!("0xffffffff{}", "0".repeat(56)));
    let (ok, report) = check("eip3009.wasm", Some(&v));
    assert!(!ok);
    assert_eq!(failed(&report), vec!["contract payer erc1271".to_string()], "{report:#}");
    let mut v = vectors();
    let elsewhere = v["contract_payers"].as_array().unwrap().iter().position(|p| p["refusal"] == "factory-not-allowed").unwrap();
    v["contract_payers"][elsewhere]["refusal"] = json!("invalid-signature");
    let (ok, report) = check("eip3009.wasm", Some(&v));
    assert!(!ok);
    assert_eq!(failed(&report), vec!["contract payer erc6492-factory-not-allowed".to_string()], "{report:#}");

    // Requirements the adapter does not make: `extra` lacks a member.
    let mut v = vectors();
    v["requirements"]["extra"]["feePayer"] = Value::Null;
    let (_, report) = check("eip3009.wasm", Some(&v));
    assert_eq!(failed(&report), vec!["requirements".to_string()], "{report:#}");

    // Another scheme's adapter against these vectors: it does not serve them.
    let (ok, report) = check("permit2.wasm", Some(&vectors()));
    assert!(!ok);
    assert_eq!(failed(&report), vec!["vectors".to_string()], "{report:#}");

    // A vectors file that is not one: a clear error naming the file, no report.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"scheme": "eip3009", "contxt": {}}"#).unwrap();
    let out = Command::new(common::stablerail_bin())
        .args(["adapter", "check"])
        .arg(common::adapters_dir().join("eip3009.wasm"))
        .arg("--vectors")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success() && out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.json: not a vectors file") && err.contains("contxt"), "{err}");

    // Not a component at all.
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.wasm");
    std::fs::write(&junk, b"\0asm junk").unwrap();
    let out = Command::new(common::stablerail_bin()).args(["adapter", "check"]).arg(&junk).output().unwrap();
    assert!(!out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(failed(&report), vec!["loads".to_string()]);
}

#[test]
fn each_mutant_fails_its_own_check_and_no_other() {
    // The mutant without a fault is eip3009: every check passes.
    let with = |fault: &str| {
        let mut v = vectors();
        v["scheme"] = json!("eip3009");
        v["context"]["params"]["mutant"] = json!(fault);
        v
    };
    let (ok, report) = check("mutant.wasm", Some(&with("")));
    assert!(ok, "{report:#}");
    every_check_passed(&report, &[]);

    for (fault, fails) in [
        ("requirements", vec!["requirements"]),
        ("verify", vec!["verify x402-v2"]),
        ("amount", vec!["tamper amount x402-v2"]),
        ("recipient", vec!["tamper recipient x402-v2"]),
        ("window", vec!["tamper window (late) x402-v2"]),
        // Accepting a signature its signer does not own: a stranger's for a contract wallet too.
        ("signer", vec!["tamper signer x402-v2", "contract payer erc1271-stranger"]),
        (
            "malformed",
            vec![
                "tamper malformed (not JSON) x402-v2",
                "tamper malformed (an empty object) x402-v2",
                "tamper malformed (a truncated payload) x402-v2",
            ],
        ),
        ("preflight", vec!["preflight x402-v2"]),
        ("replay", vec!["replay x402-v2"]),
        ("receipt", vec!["read-receipt x402-v2"]),
        ("assemble", vec!["authorize/assemble"]),
        ("determinism", vec!["determinism"]),
        ("limits", vec!["limits"]),
    ] {
        let (ok, report) = check("mutant.wasm", Some(&with(fault)));
        assert!(!ok, "the {fault} mutant passed: {report:#}");
        assert_eq!(failed(&report), fails, "the {fault} mutant: {report:#}");
    }
}

/// The mutant's file with `from` overwritten by `to` (same length)
/// everywhere it occurs, written beside a temporary directory.
fn patched(dir: &std::path::Path, name: &str, from: &[u8], to: &[u8]) -> String {
    assert_eq!(from.len(), to.len(), "a patch keeps every length in the file");
    let mut wasm = std::fs::read(common::adapters_dir().join("mutant.wasm")).unwrap();
    let mut found = 0;
    let mut i = 0;
    while i + from.len() <= wasm.len() {
        if &wasm[i..i + from.len()] == from {
            wasm[i..i + from.len()].copy_from_slice(to);
            found += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    assert!(found > 0, "{} not in mutant.wasm", String::from_utf8_lossy(from));
    let path = dir.join(name);
    std::fs::write(&path, wasm).unwrap();
    path.display().to_string()
}

#[test]
fn each_static_mutant_fails_its_own_check_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = vectors();
    v["scheme"] = json!("eip3009");

    // It exports the scheme at a version no host links.
    let wasm = patched(dir.path(), "interface.wasm", b"stablerail:adapter/scheme@0.7.0", b"stablerail:adapter/scheme@0.9.0");
    let (ok, report) = check(&wasm, Some(&v));
    assert!(!ok);
    assert_eq!(failed(&report), vec!["interface".to_string()], "{report:#}");
    assert!(report.to_string().contains("stablerail:adapter/scheme@0.9.0"), "{report:#}");

    // It imports an interface outside the world (WASI's environment, renamed).
    let wasm = patched(dir.path(), "imports.wasm", b"wasi:cli/environment@", b"acme:cli/environment@");
    let (ok, report) = check(&wasm, Some(&v));
    assert!(!ok);
    assert_eq!(failed(&report), vec!["imports".to_string()], "{report:#}");
    assert!(report.to_string().contains("acme:cli/environment@"), "{report:#}");

    // Its describe serves nothing.
    let wasm = patched(dir.path(), "serves.wasm", b"stablerail-mutant-static:.......", b"stablerail-mutant-static:serves.");
    let (ok, report) = check(&wasm, Some(&v));
    assert!(!ok);
    assert_eq!(failed(&report), vec!["serves".to_string()], "{report:#}");

    // A server refuses the foreign import by name at load.
    let out = std::process::Command::new(common::stablerail_bin())
        .args(["adapter", "inspect"])
        .arg(dir.path().join("imports.wasm"))
        .args(["--config", "/nonexistent.toml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("imports outside the stablerail:adapter world: acme:cli/environment@"), "{err}");
}

#[test]
fn a_new_adapter_builds_for_wasm_and_passes_every_check() {
    let report = new_adapter("evm", "my-scheme", &["src/lib.rs"]);
    every_check_passed(&report, &[]);
}

#[test]
fn a_new_tron_adapter_builds_for_wasm_and_passes_every_check() {
    let sources = ["src/lib.rs", "src/node.rs", "src/permit.rs", "src/transfer.rs"];
    let report = new_adapter("tron", "my-tron-scheme", &sources);
    every_check_passed(&report, &["replay x402-v2"]);
}

#[test]
fn a_new_solana_adapter_builds_for_wasm_and_passes_every_check() {
    let sources = ["src/lib.rs", "src/accounts.rs", "src/build.rs", "src/chain.rs", "src/payer_tx.rs", "src/receipt.rs", "src/units.rs"];
    let report = new_adapter("solana", "my-sol-scheme", &sources);
    checks_passed(&report, &["replay x402-v2"], "tamper window (expired on chain) x402-v2");
    // Moved onto the kit: the newest interface, unlike the shipped 0.3.0 adapter.
    assert_eq!(report["interface"], "stablerail:adapter@0.7.0");
}

/// `adapter new NAME --family FAMILY` writes a crate that builds for
/// wasm32-wasip2 and passes `adapter check` with the vectors it wrote.
fn new_adapter(family: &str, name: &str, sources: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(common::stablerail_bin())
        .args(["adapter", "new", name, "--family", family, "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let written: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut files = vec!["Cargo.toml", "Cargo.lock", ".cargo/config.toml"];
    files.extend(sources);
    files.extend(["vectors.json", "README.md"]);
    assert_eq!(written["files"], json!(files), "{written}");
    let krate = dir.path().join(name);

    // Built as an author would, beside the shipped adapters' build outputs.
    common::adapters_dir();
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--quiet"])
        .env("CARGO_TARGET_DIR", common::repo_root().join("adapters/target"))
        .current_dir(&krate)
        .status()
        .unwrap();
    assert!(status.success());
    let wasm = common::adapters_dir().join(format!("{}.wasm", name.replace('-', "_")));
    let vectors: Value = serde_json::from_str(&std::fs::read_to_string(krate.join("vectors.json")).unwrap()).unwrap();
    let (ok, report) = check(wasm.to_str().unwrap(), Some(&vectors));
    assert!(ok, "{report:#}");
    assert_eq!(report["adapter"], name, "{report:#}");

    // The same name again is refused, and nothing is overwritten.
    let again = Command::new(common::stablerail_bin()).args(["adapter", "new", name, "--dir"]).arg(dir.path()).output().unwrap();
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("already exists"));
    report
}
