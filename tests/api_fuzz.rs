//! schemathesis (the real tool, from PyPI) finds no server error and no
//! answer that breaks its own schema in over a thousand generated requests
//! against a service on the devnet. Its own module, named to sort early, so
//! that its two minutes start near the suite's beginning, beside other
//! tests, instead of ending it (tests run in name order).

use crate::common;

use std::process::Command;

use common::devnet::Devnet;
use serde_json::Value;

/// The sum of `stablerail_http_requests_total`, all of it and 5xx only.
async fn requests_served(port: u16) -> (u64, u64) {
    let text = common::devnet::metrics_text(port).await;
    let (mut all, mut server_errors) = (0, 0);
    for line in text.lines().filter(|l| l.starts_with("stablerail_http_requests_total{")) {
        let n: u64 = line.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64;
        all += n;
        if line.contains("status=\"5") {
            server_errors += n;
        }
    }
    (all, server_errors)
}

fn schemathesis() -> std::path::PathBuf {
    std::env::var_os("SCHEMATHESIS").map(Into::into).unwrap_or_else(|| common::repo_root().join(".venv/bin/schemathesis"))
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_no_server_error_and_no_schema_break() {
    // With the devnet's swap provider, so that the swap operations answer
    // from a live upstream (without one they are 502 by design).
    let dn = Devnet::start_swaps(23345, "base,arbitrum", "").await;
    let now = stablerail::clock::now_ms();
    let account = stablerail::store::agents::create_account(&dn.state.db, "fuzz", now).await.unwrap();
    let agent = stablerail::store::agents::create_agent(&dn.state.db, Some(&account), "fuzzer", now).await.unwrap();
    dn.state.keys.address(&stablerail::family::keys::agent_key(&agent.id)).await.unwrap();
    let creds = stablerail::auth::issue_keys(&dn.state.db, &dn.state.pepper, &agent.id, now).await.unwrap();
    let port = common::process::free_port();
    let _service = common::process::serve(&dn, port);
    let (before, _) = requests_served(port).await;

    let report = dn.dir.path().join("schemathesis.json");
    let workdir = dn.dir.path().to_path_buf(); // its cache stays out of the repository
    let tool = schemathesis();
    let run = tokio::task::spawn_blocking(move || {
        Command::new(&tool)
            .args(["run", &format!("http://127.0.0.1:{port}/api/openapi.json")])
            .args(["--checks", "not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance"])
            .args(["--max-examples", "100", "--seed", "402", "--workers", "2", "--request-timeout", "30"])
            .args(["--phases", "examples,coverage,fuzzing"])
            .args(["-H", &format!("Authorization: Bearer {}", creds.bearer())])
            // The agent's event stream never ends by itself (tests/webhooks.rs reads it).
            .args(["--exclude-path", "/v2/events"])
            .args(["--report", "json", "--report-json-path"])
            .arg(&report)
            .env("NO_COLOR", "1")
            .current_dir(&workdir)
            .output()
            .unwrap_or_else(|e| panic!("{} could not run ({e}); scripts/setup.sh installs it", tool.display()))
    })
    .await
    .unwrap();
    let said = format!("{}\n{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "schemathesis found problems:\n{said}");

    let (after, server_errors) = requests_served(port).await;
    let cases = after - before;
    eprintln!("{said}\nschemathesis sent {cases} requests");
    assert!(cases >= 1000, "only {cases} generated requests reached the service:\n{said}");
    assert_eq!(server_errors, 0, "the service answered 5xx:\n{said}");
    // Every operation was exercised.
    let text = common::devnet::metrics_text(port).await;
    let doc: Value = serde_json::from_str(stablerail::api::docs::document(false)).unwrap();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if path == "/v2/events" {
                continue;
            }
            let label = format!("route=\"{path}\",method=\"{}\"", method.to_uppercase());
            assert!(text.contains(&label), "schemathesis never called {method} {path}");
        }
    }
}
