//! Six versions of the adapter interface in one server: the EIP-3009
//! adapter (built on the kit, `stablerail:adapter@0.7.0`), the `lab-v6`
//! fixture (`0.6.0`), the `lab-v5` fixture (`0.5.0`), the `lab-v4` fixture (`0.4.0`), the `lab-v2` fixture
//! (`0.2.0`) and the `lab-v1` fixture (`0.1.0`) are loaded, described and
//! called side by side, directly and through the HTTP API.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use stablerail::adapter::system_clock;
use stablerail::payment::{Submission, Terms};
use tower::ServiceExt;

use common::app::MERCHANT;

const LAB: &str = r#"
[chains.lab]
family = "evm"
chain_id = 31337
roles = ["payer"]
collection_address = "0x00000000000000000000000000000000000000c0"

[chains.lab.assets.usdc]
state = "live"
scheme = "lab-v2"
token = "0x0000000000000000000000000000000000000001"
decimals = 6
eip712_name = "Lab Dollar"
eip712_version = "7"
domain = "salted"

[chains.lab1]
family = "evm"
chain_id = 31338
roles = ["payer"]
collection_address = "0x00000000000000000000000000000000000000c1"

[chains.lab1.assets.usdc]
state = "live"
scheme = "lab-v1"
token = "0x0000000000000000000000000000000000000002"
decimals = 6
eip712_name = "Lab One"
eip712_version = "3"

[chains.lab4]
family = "evm"
chain_id = 31339
roles = ["payer"]
collection_address = "0x00000000000000000000000000000000000000c4"

[chains.lab4.assets.usdc]
state = "live"
scheme = "lab-v4"
token = "0x0000000000000000000000000000000000000004"
decimals = 6

[chains.lab5]
family = "evm"
chain_id = 31340
roles = ["payer"]
collection_address = "0x00000000000000000000000000000000000000c5"

[chains.lab5.assets.usdc]
state = "live"
scheme = "lab-v5"
token = "0x0000000000000000000000000000000000000005"
decimals = 6

[chains.lab6]
family = "evm"
chain_id = 31341
roles = ["payer"]
collection_address = "0x00000000000000000000000000000000000000c6"

[chains.lab6.assets.usdc]
state = "live"
scheme = "lab-v6"
token = "0x0000000000000000000000000000000000000006"
decimals = 6
eip712_name = "Lab Six"
eip712_version = "1"
"#;

async fn call(app: &axum::Router, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    let req = Request::builder().method(method).uri(uri).header("content-type", "application/json");
    let req = req.body(body.map_or(Body::empty(), |b| Body::from(b.to_string()))).unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    (status, serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapters_of_six_interface_versions_serve_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write_config(dir.path(), &format!("{}{LAB}", common::BASE_USDC));
    let db = format!("sqlite://{}", dir.path().join("sr.db").display());
    common::init_keys(&path, &db).await;
    let state = stablerail::server::build_state(&path, &db, system_clock()).await.unwrap();
    let (v4, v2) = (state.registry.asset("base", "usdc").unwrap(), state.registry.asset("lab", "usdc").unwrap());
    let v1 = state.registry.asset("lab1", "usdc").unwrap();
    let (lab4, lab5) = (state.registry.asset("lab4", "usdc").unwrap(), state.registry.asset("lab5", "usdc").unwrap());
    assert_eq!((v4.adapter.interface, v2.adapter.interface, v1.adapter.interface), ("0.7.0", "0.2.0", "0.1.0"));
    let lab6 = state.registry.asset("lab6", "usdc").unwrap();
    assert_eq!((lab6.adapter.interface, &*lab6.adapter.name), ("0.6.0", "lab-v6"));
    assert_eq!((lab5.adapter.interface, &*lab5.adapter.name), ("0.5.0", "lab-v5"));
    assert_eq!((&*v4.adapter.name, &*v2.adapter.name, &*v1.adapter.name), ("eip3009", "lab-v2", "lab-v1"));
    assert_eq!((lab4.adapter.interface, &*lab4.adapter.name), ("0.4.0", "lab-v4"));

    // 0.4.0 refuses a proof with 0.1.0's proof-error, which 0.5.0 replaced:
    // the host reads both as its own.
    let terms = Terms { amount: "7".into(), pay_to: MERCHANT.into(), max_timeout_seconds: 60 };
    let r = lab4.requirements(&terms).await.unwrap().unwrap();
    let refused = lab4.verify(&r, "{}").await.unwrap().unwrap_err();
    assert_eq!(refused, stablerail::payment::ProofError::SignerMismatch("lab-v4 accepts no proofs (2 bytes)".into()));
    // 0.5.0 is still handed the proof as its text (0.6.0 hands a record)
    // and refuses with its own smart-wallet refusal.
    let r = lab5.requirements(&terms).await.unwrap().unwrap();
    let refused = lab5.verify(&r, "{\"x\":1}").await.unwrap().unwrap_err();
    assert_eq!(refused, stablerail::payment::ProofError::UndeployedSmartWallet("lab-v5 accepts no proofs (7 bytes)".into()));

    // 0.6.0 is handed the proof as its record (the JSON and what the host
    // decoded: here nothing), and the domain separator; it has no
    // `answer-extra`, and the host asks nothing of it.
    let r = lab6.requirements(&terms).await.unwrap().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&r.extra).unwrap(), json!({ "domainSeparator": true }));
    let refused = lab6.verify(&r, "{\"x\":1}").await.unwrap().unwrap_err();
    assert_eq!(refused, stablerail::payment::ProofError::Malformed("lab-v6 accepts no proofs (7 bytes, not decoded)".into()));
    assert_eq!(lab6.answer_extra(&r, "{}", None).await.unwrap().unwrap(), None);

    // 0.2.0 receives the token's EIP-712 domain as one record.
    let terms = Terms { amount: "1500000".into(), pay_to: MERCHANT.into(), max_timeout_seconds: 60 };
    let r2 = v2.requirements(&terms).await.unwrap().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&r2.extra).unwrap(), json!({ "name": "Lab Dollar", "version": "7", "shape": "salted" }));
    let r4 = v4.requirements(&terms).await.unwrap().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&r4.extra).unwrap()["name"], "USD Coin");
    // 0.1.0 receives it as three fields.
    let r1 = v1.requirements(&terms).await.unwrap().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&r1.extra).unwrap(), json!({ "name": "Lab One", "version": "3", "domain": "standard" }));
    // 0.1.0's bare setup calls get the host's labels (`setup:` + 8 bytes of the call's hash).
    let steps = v1.prepare_sender(MERCHANT, "1").await.unwrap().unwrap();
    assert_eq!(steps.len(), 1);
    assert!(steps[0].label.starts_with("setup:") && steps[0].label.len() == 22, "{}", steps[0].label);
    assert!(matches!(&steps[0].submission, Submission::EvmCall(c) if c.to == "0x0000000000000000000000000000000000000002"));

    // 0.2.0's wallet setup arrives as the host's settle steps, label and all.
    let steps = v2.prepare_sender(MERCHANT, "1").await.unwrap().unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].label, "setup:lab-v2");
    assert!(matches!(&steps[0].submission, Submission::EvmCall(c) if c.to == "0x0000000000000000000000000000000000000001"));
    assert_eq!(v2.to_base_units("2.5").await.unwrap().unwrap(), "2500000");
    assert!(v2.normalize_address(stablerail::payment::Family::Evm, "0x12").await.unwrap().is_err());

    // One server, both versions: each chain listed, an intent on each.
    let app = stablerail::api::router(state.clone());
    let (_, chains) = call(&app, "GET", "/api/chains", None).await;
    assert_eq!(chains["chains"], json!(["base", "lab", "lab1", "lab4", "lab5", "lab6"]));
    for (chain, name) in [("base", "USD Coin"), ("lab", "Lab Dollar"), ("lab1", "Lab One")] {
        let body = json!({ "recipient": MERCHANT, "amount": "1.5", "payer_chain": chain });
        let (status, intent) = call(&app, "POST", "/api/intents", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{intent}");
        let req = &intent["payment_requirements"];
        let network = match chain {
            "lab" => "eip155:31337",
            "lab1" => "eip155:31338",
            _ => "eip155:8453",
        };
        assert_eq!(req["network"], network);
        assert_eq!(req["extra"]["name"], name, "{intent}");
    }
    // An address the 0.2.0 adapter refuses is refused by the API.
    let bad = json!({ "recipient": MERCHANT, "amount": "1.5", "payer_chain": "lab", "payer_address": "0x12" });
    let (status, _) = call(&app, "POST", "/api/intents", Some(bad)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
