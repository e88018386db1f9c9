//! Every entry of `scripts/bench.sh` runs as documented, at a tiny size, so
//! none can rot between the sessions that measure with it: each runs the
//! script itself (its devnet, its service, its load generator) with the
//! binary this suite tests, and its report is read back. Each entry takes
//! a devnet port block of its own (`PORT`: the chains, the service at +50,
//! a peer or a receiver at +60). Named to sort early: they are slow.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

/// `scripts/bench.sh NAME` with `env`, in a folder of its own (`OUT`).
async fn bench(name: &str, port: u16, env: &[(&str, &str)], out: &Path) -> Output {
    let mut cmd = Command::new(common::repo_root().join("scripts/bench.sh"));
    cmd.arg(name)
        .current_dir(common::repo_root())
        .env("BIN", common::stablerail_bin())
        .env("PORT", port.to_string())
        .env("OUT", out)
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = tokio::task::spawn_blocking(move || cmd.output().expect("bench.sh runs")).await.unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(
        output.status.success(),
        "scripts/bench.sh {name} failed ({}):\n{}\n{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
    output
}

fn rows(file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The last line of a report that is one JSON document per run.
fn last_json(stdout: &[u8]) -> Value {
    let text = String::from_utf8_lossy(stdout);
    let start = text.find('{').unwrap_or_else(|| panic!("no JSON report in:\n{text}"));
    serde_json::from_str(&text[start..]).unwrap_or_else(|e| panic!("report: {e}\n{text}"))
}

fn positive(v: &Value, what: &str) -> f64 {
    let n = v.as_f64().unwrap_or_else(|| panic!("{what} is not a number: {v}"));
    assert!(n > 0.0, "{what} is {n}");
    n
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_peers_runs_every_row() {
    let out = tempfile::tempdir().unwrap();
    let env = [("N", "4"), ("CONC", "2"), ("BLOCKS", "0"), ("SERVICE_CPU", "0-1"), ("LOAD_CPU", "0-1")];
    bench("peers", 22545, &env, out.path()).await;
    let rows = rows(&out.path().join("results.jsonl"));
    for what in ["stablerail-x402-settle", "stablerail-intents", "typescript-reference"] {
        let row = rows.iter().find(|r| r["what"] == what).unwrap_or_else(|| panic!("no {what} row in {rows:?}"));
        positive(&row["per_second"], what);
    }
    let settle = rows.iter().find(|r| r["what"] == "stablerail-x402-settle").unwrap();
    positive(&settle["gas_per_payment"], "gas per payment");
    let svg = std::fs::read_to_string(out.path().join("benchmarks.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("stablerail"), "the picture: {}", &svg[..svg.len().min(200)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_peers_open_loop_on_blocks() {
    let out = tempfile::tempdir().unwrap();
    let env = [("N", "6"), ("CONC", "6"), ("RATE", "6"), ("BLOCKS", "1"), ("ROWS", "x402"), ("SERVICE_CPU", "0-1"), ("LOAD_CPU", "0-1")];
    bench("peers", 22945, &env, out.path()).await;
    let rows = rows(&out.path().join("results.jsonl"));
    let row = rows.iter().find(|r| r["what"] == "stablerail-x402-settle").expect("the /settle row");
    assert_eq!(row["block_seconds"], 1);
    positive(&row["per_second"], "per second");
    assert!(out.path().join("benchmarks-1s.svg").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_settlement_and_events() {
    let out = tempfile::tempdir().unwrap();
    let settlement = bench("settlement", 23745, &[("N", "3")], &out.path().join("settlement")).await;
    let report = last_json(&settlement.stdout);
    positive(&report["stablerail"]["source_leg"]["per_second"], "the source leg");

    let events = out.path().join("events");
    bench("events", 23745, &[("N", "4"), ("C", "2")], &events).await;
    let rows = rows(&events.join("events.jsonl"));
    let [row] = &rows[..] else { panic!("one row: {rows:?}") };
    positive(&row["ratio_source"], "with ÷ without");
    positive(&row["deliveries"]["delivered_ids"], "deliveries");
    assert_eq!(row["deliveries"]["verified_share"], 1.0, "every delivery verifies: {row}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_create_on_both_databases() {
    let out = tempfile::tempdir().unwrap();
    bench("create", 23945, &[("SECONDS_PER_ROW", "1")], out.path()).await;
    let rows = rows(&out.path().join("create.jsonl"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in rows {
        positive(&row["per_second"], "creates per second");
        assert_eq!(row["non_2xx"], 0, "{row}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_swap_and_soak() {
    let out = tempfile::tempdir().unwrap();
    let swap = bench("swap", 24045, &[("N", "5")], &out.path().join("swap")).await;
    let report = last_json(&swap.stdout);
    assert!(report.is_object(), "{report}");

    let soak = out.path().join("soak");
    bench("soak-memory", 24045, &[("N", "3"), ("ROUNDS", "3"), ("REST", "0")], &soak).await;
    let rows = rows(&soak.join("memory.jsonl"));
    assert_eq!(rows.len(), 4, "{rows:?}");
    for row in rows {
        positive(&row["rss_kib"], "resident memory");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_in_flight() {
    let out = tempfile::tempdir().unwrap();
    let env = [("N", "20"), ("RATE", "20"), ("C", "20"), ("BLOCKS", "1"), ("AFTER", "6")];
    bench("in-flight", 26845, &env, out.path()).await;
    let summary: Value = serde_json::from_str(std::fs::read_to_string(out.path().join("summary.json")).unwrap().trim()).unwrap();
    positive(&summary["rss_mib_from_peak"]["max"], "resident memory");
    assert_eq!(summary["last"]["settled"], 20, "every payment settles: {summary}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_traces() {
    let out = tempfile::tempdir().unwrap();
    bench("traces", 27445, &[("N", "4"), ("C", "2"), ("ROUNDS", "1")], out.path()).await;
    let summary: Value = serde_json::from_str(std::fs::read_to_string(out.path().join("summary.json")).unwrap().trim()).unwrap();
    for mode in ["off", "0.01", "1"] {
        positive(&summary["modes"][mode]["per_second"], &format!("{mode}: throughput"));
        assert_eq!(summary["modes"][mode]["bad"], 0, "{summary}");
    }
    // Traced at 100 %: the collector was sent spans.
    positive(&summary["collector"]["bytes"], "bytes the collector was sent");
}

/// batch-settlement through the reference facilitator: every voucher
/// verified, and a charged request costs less gas than an `exact` one.
#[tokio::test(flavor = "multi_thread")]
async fn bench_batch() {
    let out = tempfile::tempdir().unwrap();
    bench("batch", 27645, &[("N", "10"), ("V", "20"), ("C", "4")], out.path()).await;
    let rows = rows(&out.path().join("batch.jsonl"));
    let names: Vec<&str> = rows.iter().map(|r| r["facilitator"].as_str().unwrap()).collect();
    assert_eq!(names, ["reference", "stablerail"]);
    for row in rows.iter().map(|r| &r["report"]) {
        assert_eq!((&row["vouchers"]["ok"], &row["vouchers"]["bad"]), (&json!(20), &json!(0)), "{row}");
        positive(&row["vouchers"]["per_second"], "vouchers verified per second");
        let gas = &row["gas_per_request"];
        positive(&gas["batch_settlement"], "gas per batch-settlement request");
        assert!(gas["batch_settlement"].as_u64() < gas["exact"].as_u64(), "{row}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_abuse() {
    let out = tempfile::tempdir().unwrap();
    let env = [("LEGIT", "10"), ("SECONDS_OF_FLOOD", "2"), ("QUEUES_N", "3"), ("QUEUES_SECONDS", "2")];
    bench("abuse", 26745, &env, out.path()).await;
    for file in ["report.json", "queues.json"] {
        let text = std::fs::read_to_string(out.path().join(file)).unwrap();
        let report: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{file}: {e}\n{text}"));
        let legit = if file == "report.json" { &report["legit_loaded"]["p99"] } else { &report["webhooks"]["loaded"]["p99"] };
        positive(legit, &format!("{file}: the legit client's p99"));
    }
}
