//! An in-process stablerail on SQLite or Postgres, driven over its router.
#![allow(dead_code)]

use std::path::PathBuf;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use stablerail::adapter::system_clock;
use stablerail::api::Shared;
use tower::ServiceExt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub const COLLECTOR_BASE: &str = "0x00000000000000000000000000000000C011EC70";
pub const COLLECTOR_ARB: &str = "0x00000000000000000000000000000000C011EC71";
pub const MERCHANT: &str = "0x000000000000000000000000000000000000bEEF";

/// base and arbitrum (EIP-3009 USDC, collection wallets, fees), polygon
/// with USDT0 unwired, base USDT behind USDT_ENABLED, TRON behind its flag.
pub fn config(extra: &str) -> String {
    const EMPTY_CHAIN: &str = super::empty_chain::URL;
    format!(
        r#"
[fees]
platform_fee_percentage = "0.3"

[limits]
requests_per_minute = 100000

[flags]
USDT_ENABLED = false
TRON_ENABLED = false

[chains.base]
family = "evm"
chain_id = 8453
roles = ["payer", "target"]
rpc_urls = ["{EMPTY_CHAIN}"]
fee = "0.01"
explorer_tx_url = "https://basescan.org/tx/{{tx}}"
collection_address = "{COLLECTOR_BASE}"
[chains.base.assets.usdc]
state = "live"
scheme = "eip3009"
token = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
decimals = 6
eip712_name = "USD Coin"
eip712_version = "2"
[chains.base.assets.usdt]
state = "gated"
flag = "USDT_ENABLED"
scheme = "eip3009"
decimals = 6

[chains.arbitrum]
family = "evm"
chain_id = 42161
roles = ["payer", "target"]
fee = "0.02"
collection_address = "{COLLECTOR_ARB}"
[chains.arbitrum.assets.usdc]
state = "live"
scheme = "eip3009"
token = "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"
decimals = 6
eip712_name = "USD Coin"
eip712_version = "2"

[chains.bsc]
family = "evm"
chain_id = 56
roles = ["payer", "target"]
fee = "0.05"
collection_address = "{COLLECTOR_BASE}"
[chains.bsc.assets.usdc]
state = "live"
scheme = "eip3009"
token = "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d"
decimals = 18
eip712_name = "USD Coin"
eip712_version = "2"

[chains.polygon]
family = "evm"
chain_id = 137
roles = ["payer", "target"]
[chains.polygon.assets.usdt0]
state = "unwired"
scheme = "eip3009"
decimals = 6

[chains.skale-base]
family = "evm"
chain_id = 1187947933
roles = ["payer"]

[chains.tron]
gate = "TRON_ENABLED"
family = "tron"
chain_id = 728126428
caip2 = "tron:0x2b6653dc"
roles = ["payer", "target"]
[chains.tron.assets.usdt]
state = "unwired"
scheme = "tron-permit2"
decimals = 6
{extra}
"#
    )
}

pub struct App {
    pub state: Shared,
    pub dir: tempfile::TempDir,
    pg_schema: Option<(String, String)>,
}

/// A database URL for `backend` (Postgres: a fresh schema, returned for cleanup).
pub async fn database(backend: Backend, dir: &std::path::Path) -> (String, Option<(String, String)>) {
    match backend {
        Backend::Sqlite => (format!("sqlite://{}", dir.join("sr.db").display()), None),
        Backend::Postgres => {
            let base = std::env::var("STABLERAIL_TEST_POSTGRES").unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".into());
            let schema = format!("sr_{}", ulid::Ulid::new().to_string().to_lowercase());
            let admin = stablerail::db::Db::connect_unmigrated(&base).await.expect("Postgres reachable");
            sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin.pool).await.unwrap();
            admin.pool.close().await;
            let sep = if base.contains('?') { '&' } else { '?' };
            (format!("{base}{sep}options=-c%20search_path%3D{schema}"), Some((base, schema)))
        }
    }
}

impl App {
    pub async fn start(backend: Backend, extra: &str) -> App {
        // No engine runs here: execute answers at once.
        App::start_with(backend, extra, 0).await
    }

    /// `execute_wait_seconds` set: for tests that play the engine's part.
    pub async fn start_with(backend: Backend, extra: &str, execute_wait_seconds: u64) -> App {
        let dir = tempfile::tempdir().unwrap();
        let path: PathBuf = super::config::TestConfig::new()
            .with(&config(extra))
            .set("service.execute_wait_seconds", execute_wait_seconds as i64)
            .write(dir.path());
        let (url, pg_schema) = database(backend, dir.path()).await;
        super::init_keys(&path, &url).await;
        let state = stablerail::server::build_state(&path, &url, system_clock()).await.unwrap();
        App { state, dir, pg_schema }
    }

    /// On SQLite with a whole config text of the caller's.
    pub async fn on_config(text: &str) -> App {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chains.toml");
        std::fs::write(&path, text).unwrap();
        let (url, pg_schema) = database(Backend::Sqlite, dir.path()).await;
        super::init_keys(&path, &url).await;
        let state = stablerail::server::build_state(&path, &url, system_clock()).await.unwrap();
        App { state, dir, pg_schema }
    }

    pub async fn call(&self, method: &str, uri: &str, body: Option<Value>, headers: &[(&str, &str)]) -> (StatusCode, Value) {
        let mut req = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body = match body {
            Some(v) => {
                req = req.header("content-type", "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        self.raw(req.body(body).unwrap()).await
    }

    pub async fn raw(&self, req: Request<Body>) -> (StatusCode, Value) {
        let resp = stablerail::api::router(self.state.clone()).oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        (status, v)
    }

    /// A new agent (optionally owned) and its Bearer token.
    pub async fn agent(&self, name: &str, account: Option<&str>) -> (String, String) {
        let now = stablerail::clock::now_ms();
        let a = stablerail::store::agents::create_agent(&self.state.db, account, name, now).await.unwrap();
        let c = stablerail::auth::issue_keys(&self.state.db, &self.state.pepper, &a.id, now).await.unwrap();
        (a.id, format!("Bearer {}", c.bearer()))
    }

    pub async fn close(self) {
        self.state.db.pool.close().await;
        if let Some((base, schema)) = self.pg_schema {
            let admin = stablerail::db::Db::connect_unmigrated(&base).await.unwrap();
            sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin.pool).await.unwrap();
        }
    }
}

/// `#[tokio::test]`s that run one scenario on each engine.
#[macro_export]
macro_rules! on_both_engines {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() { super::$name(super::common::app::Backend::Sqlite).await } )*
        }
        mod postgres {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() { super::$name(super::common::app::Backend::Postgres).await } )*
        }
    };
}
