//! A misbehaving adapter fails its own call and nothing else.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stablerail::adapter::{system_clock, CallError, Registry};
use stablerail::config::Config;
use stablerail::payment::{PaymentRequirements, ProofError};

fn lab() -> String {
    let mut s = String::from(common::BASE_USDC);
    s.push_str("\n[chains.lab]\nfamily = \"evm\"\nchain_id = 31337\nroles = [\"payer\"]\n");
    for mode in ["loop", "hog", "trap", "ok", "remember", "clock"] {
        s.push_str(&format!(
            "[chains.lab.assets.{mode}]\nstate = \"live\"\nscheme = \"misbehave\"\ntoken = \"0x0000000000000000000000000000000000000001\"\ndecimals = 6\nparams = {{ mode = \"{mode}\" }}\n"
        ));
    }
    s
}

fn registry(dir: &std::path::Path, fuel: u64) -> Registry {
    registry_with(dir, fuel, system_clock())
}

fn registry_with(dir: &std::path::Path, fuel: u64, clock: stablerail::adapter::Clock) -> Registry {
    let path = common::write_config(dir, &lab());
    let text = std::fs::read_to_string(&path).unwrap().replace("adapter_fuel = 200000000", &format!("adapter_fuel = {fuel}"));
    std::fs::write(&path, text).unwrap();
    let cfg = Config::load(&path).unwrap();
    Registry::from_config(
        &cfg,
        stablerail::server::runtime_for(&cfg, clock).unwrap(),
        &stablerail::family::chain::Chains::from_config(&cfg),
    )
    .unwrap()
}

fn req() -> PaymentRequirements {
    PaymentRequirements {
        scheme: "exact".into(),
        network: "eip155:31337".into(),
        amount: "1".into(),
        asset: "0x0000000000000000000000000000000000000001".into(),
        pay_to: "0x0000000000000000000000000000000000000002".into(),
        max_timeout_seconds: 60,
        extra: "{}".into(),
    }
}

fn verify(reg: &Registry, mode: &str) -> Result<Result<stablerail::payment::VerifiedPayment, ProofError>, CallError> {
    common::wait(reg.asset("lab", mode).unwrap().verify(&req(), "{}"))
}

#[test]
fn each_misbehaviour_fails_only_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path(), 200_000_000);

    let started = Instant::now();
    assert!(matches!(verify(&reg, "loop"), Err(CallError::OutOfFuel(_))));
    assert!(started.elapsed() < Duration::from_secs(60), "the fuel budget ends the loop");

    match verify(&reg, "hog") {
        Err(CallError::MemoryLimit(name, mib)) => {
            assert_eq!(&*name, "misbehave");
            assert_eq!(mib, 32);
        }
        other => panic!("expected a memory-limit failure, got {other:?}"),
    }
    match verify(&reg, "trap") {
        Err(CallError::Trap(name, why)) => {
            assert_eq!(&*name, "misbehave");
            assert!(!why.is_empty());
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    // The same adapter answers normally right after, and so do others.
    assert!(matches!(verify(&reg, "ok").unwrap(), Err(ProofError::Malformed(_))));
    let usdc = reg.asset("base", "usdc").unwrap();
    assert_eq!(common::wait(usdc.to_base_units("1.5")).unwrap().unwrap(), "1500000");
}

/// Each call runs in a fresh instance of the component (re-instantiated
/// from its pre-linked `InstancePre` into a recycled pool slot whose memory
/// wasmtime resets): a call that writes its globals and heap is not seen by
/// the next, in sequence or at once, on the same slot or another, nor after
/// a call that trapped or ran out of fuel there.
/// Answers of pure calls are kept per asset and input (a create repeats
/// them); one that read the clock is asked again, and inputs never mix.
#[test]
fn only_answers_from_the_inputs_alone_are_reused() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let now = std::sync::Arc::new(AtomicU64::new(1_000));
    let clock = {
        let now = now.clone();
        std::sync::Arc::new(move || now.load(Ordering::SeqCst)) as stablerail::adapter::Clock
    };
    let reg = registry_with(dir.path(), 200_000_000, clock);
    let terms = |amount: &str| stablerail::payment::Terms {
        amount: amount.into(),
        pay_to: "0x0000000000000000000000000000000000000002".into(),
        max_timeout_seconds: 60,
    };
    let ask = |mode: &str, amount: &str| common::wait(reg.asset("lab", mode).unwrap().requirements(&terms(amount))).unwrap().unwrap();

    // Read the clock: asked again, and the answer follows the clock.
    assert_eq!(ask("clock", "5").extra, r#"{"now":1000}"#);
    now.store(2_000, Ordering::SeqCst);
    assert_eq!(ask("clock", "5").extra, r#"{"now":2000}"#, "an answer that read the clock was reused");

    // From the terms alone: each input its own answer, the same input the same one.
    let (a, b) = (ask("ok", "5"), ask("ok", "6"));
    assert_eq!((a.amount.as_str(), b.amount.as_str()), ("5", "6"));
    assert_eq!(ask("ok", "5"), a);
    assert_eq!(ask("ok", "6"), b);
    // Another asset of the same adapter keeps its own answers.
    assert!(common::wait(reg.asset("lab", "remember").unwrap().requirements(&terms("5"))).unwrap().is_err());
}

#[test]
fn a_call_never_sees_what_an_earlier_call_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path(), 200_000_000);
    let fresh = |r: Result<Result<stablerail::payment::VerifiedPayment, ProofError>, CallError>| match r {
        Ok(Err(ProofError::Malformed(m))) => assert_eq!(m, "calls seen: 1, notes: 1", "state leaked from an earlier call"),
        other => panic!("expected the fixture's count, got {other:?}"),
    };
    for _ in 0..50 {
        fresh(verify(&reg, "remember"));
    }
    // Slots that held a trapped or exhausted call are reused cleanly.
    assert!(matches!(verify(&reg, "trap"), Err(CallError::Trap(..))));
    assert!(matches!(verify(&reg, "loop"), Err(CallError::OutOfFuel(_))));
    fresh(verify(&reg, "remember"));
    let reg = Arc::new(reg);
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let reg = reg.clone();
            std::thread::spawn(move || (0..25).for_each(|_| fresh(verify(&reg, "remember"))))
        })
        .collect();
    calls.into_iter().for_each(|c| c.join().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_answers_while_adapters_spin() {
    let dir = tempfile::tempdir().unwrap();
    // A budget that keeps a spinning call busy for a while.
    let path = common::write_config(dir.path(), &lab());
    let text = std::fs::read_to_string(&path).unwrap().replace("adapter_fuel = 200000000", "adapter_fuel = 4000000000");
    std::fs::write(&path, text).unwrap();
    common::init_keys(&path, "sqlite::memory:").await;
    let state = stablerail::server::build_state(&path, "sqlite::memory:", system_clock()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = stablerail::api::router(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let finished = Arc::new(AtomicUsize::new(0));
    let mut spinners = Vec::new();
    for mode in ["loop", "loop", "hog"] {
        let asset = state.registry.asset("lab", mode).unwrap();
        let finished = finished.clone();
        spinners.push(tokio::spawn(async move {
            let r = asset.verify(&req(), "{}").await;
            finished.fetch_add(1, Ordering::SeqCst);
            r
        }));
    }

    let client = reqwest::Client::new();
    let mut answered_while_busy = 0;
    for _ in 0..20 {
        let resp = tokio::time::timeout(Duration::from_secs(10), client.get(format!("http://{addr}/api/chains")).send())
            .await
            .expect("answered in time")
            .unwrap();
        assert_eq!(resp.status(), 200);
        let body: serde_json::Value = resp.json().await.unwrap();
        assert!(body["chains"].as_array().unwrap().iter().any(|c| c == "lab"));
        if finished.load(Ordering::SeqCst) < 2 {
            answered_while_busy += 1;
        }
    }
    assert!(answered_while_busy > 0, "requests were served while the loops were still running");

    let outcomes: Vec<_> = futures_join(spinners).await;
    assert!(matches!(outcomes[0], Err(CallError::OutOfFuel(_))));
    assert!(matches!(outcomes[1], Err(CallError::OutOfFuel(_))));
    assert!(matches!(outcomes[2], Err(CallError::MemoryLimit(..))));
}

/// More calls at once than the instance pool holds, each keeping its
/// instance while its chain takes 300 ms to answer: the extra calls wait for
/// a slot; none fails for want of one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_beyond_the_instance_pool_wait_for_a_slot() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let node = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", node.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = node.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = conn.read(&mut buf).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                let body = format!(r#"{{"jsonrpc":"2.0","id":1,"result":"0x{}"}}"#, "0".repeat(64));
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(format!("{head}{body}").as_bytes()).await;
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let config = common::BASE_USDC.replace(common::empty_chain::URL, &url);
    let cfg = Config::load(&common::write_config(dir.path(), &config)).unwrap();
    let runtime = stablerail::server::runtime_for(&cfg, system_clock()).unwrap();
    let reg = Registry::from_config(&cfg, runtime, &stablerail::family::chain::Chains::from_config(&cfg)).unwrap();
    let payment = stablerail::payment::VerifiedPayment {
        payer: "0x0000000000000000000000000000000000000003".into(),
        pay_to: "0x0000000000000000000000000000000000000002".into(),
        amount: "1".into(),
        valid_after: 0,
        valid_before: u64::MAX,
        replay_key: format!("eip3009:eip155:8453:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913:0x{}3:0x{}", "0".repeat(39), "1".repeat(64)),
    };
    let calls: Vec<_> = (0..300)
        .map(|_| {
            let (asset, payment) = (reg.asset("base", "usdc").unwrap(), payment.clone());
            tokio::spawn(async move { asset.preflight(&payment).await })
        })
        .collect();
    for outcome in futures_join(calls).await {
        assert!(outcome.is_ok(), "the call itself failed: {outcome:?}");
    }
}

async fn futures_join<T>(handles: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

/// Start-up refuses a config that names an adapter it cannot use, and says
/// which file and why.
#[test]
fn startup_names_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let adapters = dir.path().join("adapters");
    std::fs::create_dir_all(&adapters).unwrap();
    for fixture in ["misbehave.wasm", "misfit.wasm"] {
        std::fs::copy(common::adapters_dir().join(fixture), adapters.join(fixture)).unwrap();
    }
    std::fs::write(adapters.join("garbage.wasm"), b"\0asm but not really").unwrap();

    let attempt = |adapter_file: &str| -> String {
        let text = format!(
            "[service]\nadapters_dir = {:?}\ncache_dir = {:?}\n[adapters]\neip3009 = \"{adapter_file}\"\n{}",
            adapters.display().to_string(),
            dir.path().join("cache").display().to_string(),
            common::BASE_USDC
        );
        let cfg = Config::parse(&text).unwrap();
        let rt = stablerail::server::runtime_for(&cfg, system_clock()).unwrap();
        match Registry::from_config(&cfg, rt, &stablerail::family::chain::Chains::from_config(&cfg)) {
            Ok(_) => panic!("{adapter_file} should not be accepted"),
            // As the service prints it: the whole chain, each reason once.
            Err(e) => format!("{:#}", anyhow::Error::from(e)),
        }
    };

    let missing = attempt("eip3009.wasm");
    assert!(missing.contains("eip3009.wasm") && missing.contains("not found"), "{missing}");
    assert!(missing.contains("chains.base.assets.usdc"), "{missing}");

    let garbage = attempt("garbage.wasm");
    assert!(garbage.contains("garbage.wasm") && garbage.contains("not a loadable WebAssembly component"), "{garbage}");
    assert_eq!(garbage.matches("not a loadable").count(), 1, "{garbage}");

    let wrong = attempt("misbehave.wasm");
    assert!(wrong.contains("misbehave.wasm") && wrong.contains("does not serve scheme `eip3009`"), "{wrong}");

    // 0.4.0 by name, one export of another type: refused at load by the
    // one type check 0.4.0's calls rely on, before any call is made.
    let misfit = attempt("misfit.wasm");
    assert!(misfit.contains("misfit.wasm") && misfit.contains("export `to-base-units`"), "{misfit}");
}

#[test]
fn precompiled_artifacts_are_cached_and_stale_ones_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let cached =
        || -> Vec<std::path::PathBuf> { std::fs::read_dir(&cache).map(|d| d.map(|e| e.unwrap().path()).collect()).unwrap_or_default() };
    // A cache of its own, not the suite's shared one.
    let load = || {
        let file = common::config::TestConfig::new()
            .with(common::BASE_USDC)
            .set("service.cache_dir", cache.display().to_string())
            .write(dir.path());
        common::registry_of(&file, system_clock()).unwrap()
    };

    drop(load());
    let files = cached();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(name.ends_with(".cwasm") && name.contains("wasmtime48."), "{name}");
    let written = std::fs::metadata(&files[0]).unwrap().modified().unwrap();

    drop(load());
    assert_eq!(cached(), files, "a second start reuses the artifact");
    assert_eq!(std::fs::metadata(&files[0]).unwrap().modified().unwrap(), written);

    // A corrupt artifact is detected, recompiled and replaced.
    std::fs::write(&files[0], b"corrupt").unwrap();
    let reg = load();
    assert_eq!(common::wait(reg.asset("base", "usdc").unwrap().to_base_units("2")).unwrap().unwrap(), "2000000");
    assert!(std::fs::metadata(&files[0]).unwrap().len() > 1000);
}
