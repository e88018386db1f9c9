//! The docs name only routes that exist. Every `METHOD /path` in README.md
//! and docs/*.md (prose and code blocks alike), and every bare `/v2/…`,
//! `/api/…` or `/x402/…` path in inline code, is an operation of the served
//! OpenAPI document (with that method, when one is named), or is on the short
//! list below of routes that are deliberately not in it. Path parameters
//! are compared by place, whatever their spelling (`{id}`, `:id`, `<id>`);
//! a path ending in `/*` stands for the routes under it.

use std::collections::{BTreeMap, BTreeSet};

use crate::common;

use common::app::{App, Backend};
use serde_json::Value;

/// Routes the docs may name that the OpenAPI document does not hold, as
/// (method, path, why); `*` is any method, a path ending in `/*` the path
/// and everything under it. The probes, `/metrics`, `/api/openapi.json`
/// and both event streams are in the document, so they are not here.
const NOT_IN_OPENAPI: [(&str, &str, &str); 5] = [
    // Ours, outside the JSON API: routed by axum (host/src/dashboard/).
    ("*", "/dashboard/*", "the dashboard's HTML pages and forms, described in docs/dashboard.md"),
    // Not ours: other servers' routes in the docs' examples.
    ("POST", "/hooks", "the receiver's own route in docs/events.md's example delivery"),
    ("GET", "/report", "the resource server's paid route in docs/facilitator.md's examples"),
    ("GET", "/swap/v1/quote", "Jupiter's Swap API, as the devnet's stand-in answers it (devnet/nodes/jupiter.mjs)"),
    ("POST", "/swap/v1/swap", "likewise"),
];

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];
const PREFIXES: [&str; 3] = ["/v2/", "/api/", "/x402/"];

/// Operations of an OpenAPI document: normalised path → its methods.
type Operations = BTreeMap<String, BTreeSet<String>>;

#[tokio::test]
async fn every_route_the_docs_name_is_served() {
    let app = App::start(Backend::Sqlite, "").await;
    let (status, served) = app.call("GET", "/api/openapi.json", None, &[]).await;
    app.close().await;
    assert_eq!(status, 200);
    let mut ops = operations(&served);
    assert!(ops.len() > 30, "the served document's paths were read: {ops:?}");
    // This deployment has TRON off, so it neither routes nor documents the
    // TRON approval helpers (tests/openapi.rs); one with TRON on serves them
    // in its document, so the docs may name them.
    let with_tron: Value = serde_json::from_str(stablerail::api::docs::document(true)).unwrap();
    for (path, methods) in operations(&with_tron) {
        if path.starts_with("/api/tron/") {
            ops.entry(path).or_default().extend(methods);
        }
    }

    let docs = read_docs();
    assert!(docs.len() >= 10, "README.md and docs/*.md were read: {:?}", docs.iter().map(|(f, _)| f).collect::<Vec<_>>());
    let named: usize = docs.iter().map(|(_, text)| routes_in(text).len()).sum();
    assert!(named > 100, "the docs' routes were found: only {named}");
    let wrong = unknown_routes(&docs, &ops);
    assert!(
        wrong.is_empty(),
        "routes the docs name that the service does not serve (fix the doc, or list the route in NOT_IN_OPENAPI with why):\n{}",
        wrong.join("\n")
    );
}

/// The check can fail: a made-up doc naming routes that do not exist, a
/// method a route does not take and a wildcard with nothing under it is
/// reported, line by line; parameters in any spelling, allowed routes,
/// words that only end in a method's name and a sentence's full stop are not.
#[test]
fn a_route_the_service_does_not_serve_is_reported() {
    let document: Value = serde_json::from_str(stablerail::api::docs::document(true)).unwrap();
    let ops = operations(&document);
    let made_up = r#"# Made up

Create with `POST /v2/payment-intents`, then pay with
POST /api/payment-intents/{id}/proof (`api/intents.rs`).
Read it with `GET /api/intents/:id` or `GET
/v2/intents/<id>`, and see `/v2/me`; `DELETE /v2/me` is not a route.
`/x402/refund?id=` does not exist. The approval helpers are
`/api/tron/permit2/approve/*`; nothing is under `/api/nothing/*`.
FORGET /v2/nothing names no method; a sentence may end at GET /metrics.

```http
GET /dashboard/wallets HTTP/1.1
POST /hooks HTTP/1.1
PUT /v2/intents/{id} HTTP/1.1
```
"#;
    let doc = vec![("made-up.md".to_string(), made_up.to_string())];
    let found: BTreeSet<String> = unknown_routes(&doc, &ops).into_iter().collect();
    let expected: BTreeSet<String> = [
        "made-up.md: POST /v2/payment-intents",
        "made-up.md: POST /api/payment-intents/{id}/proof",
        "made-up.md: DELETE /v2/me",
        "made-up.md: PUT /v2/intents/{id}",
        "made-up.md: (any method) /x402/refund",
        "made-up.md: (any method) /api/nothing/*",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(found, expected);

    // The same doc with its routes put right: nothing is reported.
    let fixed = made_up
        .replace("POST /v2/payment-intents", "POST /v2/intents")
        .replace("POST /api/payment-intents/{id}/proof", "POST /api/intents/{id}")
        .replace("`DELETE /v2/me`", "`GET /v2/me`")
        .replace("`/x402/refund?id=`", "`/x402/settlements?id=`")
        .replace("`/api/nothing/*`", "`/api/swap/*`")
        .replace("PUT /v2/intents/{id}", "GET /v2/intents/{id}");
    assert_eq!(unknown_routes(&[("made-up.md".to_string(), fixed)], &ops), Vec::<String>::new());
}

/// README.md and docs/*.md, as (path from the repository's root, text).
fn read_docs() -> Vec<(String, String)> {
    let root = common::repo_root();
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root.join("README.md"));
    docs.into_iter().map(|p| (p.strip_prefix(&root).unwrap().display().to_string(), std::fs::read_to_string(&p).unwrap())).collect()
}

fn operations(document: &Value) -> Operations {
    let mut ops = Operations::new();
    for (path, item) in document["paths"].as_object().expect("the document has paths") {
        let methods = ops.entry(normalise(path)).or_default();
        for method in METHODS {
            if item.get(method.to_lowercase()).is_some() {
                methods.insert(method.to_string());
            }
        }
    }
    ops
}

/// Each route the docs name that is neither an operation of `ops` nor on
/// the list of routes outside the document, as `file: METHOD /path`.
fn unknown_routes(docs: &[(String, String)], ops: &Operations) -> Vec<String> {
    let mut wrong = Vec::new();
    for (file, text) in docs {
        for (method, path) in routes_in(text) {
            if !allowed(method, &path) && !documented(method, &path, ops) {
                wrong.push(format!("{file}: {} {path}", method.unwrap_or("(any method)")));
            }
        }
    }
    wrong
}

/// The routes a text names: `METHOD /path` anywhere (the method a word of
/// its own, then spaces or a line break), and bare paths under the API's
/// prefixes in inline code outside fenced blocks, with no method.
fn routes_in(text: &str) -> Vec<(Option<&'static str>, String)> {
    let mut found = Vec::new();
    for method in METHODS {
        for (at, _) in text.match_indices(method) {
            let own_word = text[..at].chars().next_back().is_none_or(|c| c != '_' && !c.is_alphanumeric());
            let rest = &text[at + method.len()..];
            let after = rest.trim_start_matches([' ', '\n']);
            if own_word && after.len() < rest.len() && after.starts_with('/') {
                found.push((Some(method), path_at(after)));
            }
        }
    }
    let mut fenced = false;
    let prose: Vec<&str> = text
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                ""
            } else if fenced {
                ""
            } else {
                line
            }
        })
        .collect();
    let prose = prose.join("\n");
    // Every other piece between backticks is inline code.
    for span in prose.split('`').skip(1).step_by(2) {
        if PREFIXES.iter().any(|p| span.starts_with(p)) {
            found.push((None, path_at(span)));
        }
    }
    found
}

/// The path at the start of `s`: up to the first character a path does not
/// have (a query's `?`, a space, a quote, a bracket), without a sentence's
/// full stop or colon after it.
fn path_at(s: &str) -> String {
    let end = s.find(|c: char| !c.is_ascii_alphanumeric() && !"/_-.{}:<>*".contains(c)).unwrap_or(s.len());
    s[..end].trim_end_matches(['.', ':']).to_string()
}

/// One spelling for every path parameter: `{id}`, `:id` and `<id>` are `{}`.
fn normalise(path: &str) -> String {
    let segments: Vec<&str> = path
        .split('/')
        .map(|s| {
            let param =
                (s.len() > 1 && s.starts_with(':')) || (s.starts_with('{') && s.ends_with('}')) || (s.starts_with('<') && s.ends_with('>'));
            if param {
                "{}"
            } else {
                s
            }
        })
        .collect();
    segments.join("/")
}

fn allowed(method: Option<&str>, path: &str) -> bool {
    let path = normalise(path);
    NOT_IN_OPENAPI.iter().any(|(m, pattern, _why)| {
        let method_fits = *m == "*" || method.is_none_or(|named| named == *m);
        let path_fits = match pattern.strip_suffix("/*") {
            Some(base) => path == base || path.starts_with(&format!("{base}/")),
            None => path == *pattern,
        };
        method_fits && path_fits
    })
}

/// Is `path` (or, ending in `/*`, some path under it) an operation of
/// `ops`, with `method` when one is named?
fn documented(method: Option<&str>, path: &str, ops: &Operations) -> bool {
    let path = normalise(path);
    let takes = |methods: &BTreeSet<String>| method.is_none_or(|named| methods.contains(named));
    match path.strip_suffix('*').filter(|prefix| prefix.ends_with('/')) {
        Some(prefix) => ops.iter().any(|(p, methods)| p.starts_with(prefix) && takes(methods)),
        None => ops.get(&path).is_some_and(takes),
    }
}
