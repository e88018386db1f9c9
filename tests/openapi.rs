//! The OpenAPI document: it is served, it names every route and every route
//! it names exists (schemathesis fuzzes it in `api_fuzz.rs`).

use crate::common;

use std::path::Path;

use common::app::{App, Backend};
use serde_json::Value;

/// Routes are registered only through utoipa-axum's `routes!`, which needs
/// the handler's `#[utoipa::path]`; a plain axum `.route(` would add an
/// undocumented one. The dashboard's HTML pages (`crates/web/src/dashboard/`) are
/// not the API: they are routed by axum and described in docs/dashboard.md.
#[test]
fn routes_are_added_only_with_their_documentation() {
    fn scan(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && path.file_name().is_some_and(|n| n == "dashboard") {
                continue;
            }
            if path.is_dir() {
                scan(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    if [".route(", ".route_service(", ".nest(", ".nest_service("].iter().any(|r| line.contains(r)) {
                        found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    // Every crate: a route added in any of them would be served.
    scan(&common::repo_root().join("host/src"), &mut found);
    scan(&common::repo_root().join("crates"), &mut found);
    assert!(found.is_empty(), "routes added outside `routes!`:\n{}", found.join("\n"));
}

/// Every documented operation is answered by its handler: not the
/// router's "no such endpoint" or "method not allowed".
#[tokio::test]
async fn every_documented_operation_is_routed() {
    let app = App::start(Backend::Sqlite, "").await;
    let (status, doc) = app.call("GET", "/api/openapi.json", None, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    // Without TRON, the TRON helpers are neither routed nor documented.
    assert_eq!(doc, serde_json::from_str::<Value>(stablerail::api::docs::document(false)).unwrap());
    assert!(stablerail::api::docs::DOCUMENT.contains("/api/tron/permit2/approve/prepare") && !doc.to_string().contains("/api/tron/"));
    let (_, bearer) = app.agent("doc", None).await;
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["get", "post", "put", "patch", "delete"] {
            let Some(op) = item.get(method) else { continue };
            operations += 1;
            assert!(op["responses"]["default"]["content"]["application/json"].is_object(), "{method} {path}: no error envelope");
            if path.starts_with("/v2/") {
                assert_eq!(op["security"][0]["bearer"], serde_json::json!([]), "{method} {path}: no Bearer security");
            }
            let uri = path.replace("{id}", "01JD3Q5W8Z6X2V4T7R9P1M3K5H");
            let body = (method == "post").then(|| serde_json::json!({}));
            // The agent's event stream has no end: routed is what it answers without a key.
            let auth: &[(&str, &str)] = if path == "/v2/events" { &[] } else { &[("authorization", &bearer)] };
            let (status, answer) = app.call(&method.to_uppercase(), &uri, body, auth).await;
            assert_ne!(status, 405, "{method} {path} is documented but not routed");
            assert!(!(status == 404 && answer["message"] == "no such endpoint"), "{method} {path} is documented but not routed");
        }
    }
    assert_eq!(operations, 37, "operations in the document");
    // And a route that is not documented does not answer.
    let (status, answer) = app.call("GET", "/api/nothing-here", None, &[]).await;
    assert_eq!((status.as_u16(), answer["message"].as_str()), (404, Some("no such endpoint")));
    app.close().await;
}
