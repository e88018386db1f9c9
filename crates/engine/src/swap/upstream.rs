//! The HTTP side of a swap provider: one client with the configured
//! timeout and API key header. Transport failures and timeouts are
//! `Unavailable`, with the URL kept out of the detail.

use std::time::Duration;

use serde_json::Value;

use super::SwapError;

/// The largest answer read from a provider (LI.FI's full token list is a
/// few megabytes).
const MAX_ANSWER_BYTES: usize = 32 << 20;

pub struct Upstream {
    http: reqwest::Client,
    base: String,
    /// Header name and value of the API key, when one is configured.
    key: Option<(&'static str, String)>,
}

impl Upstream {
    pub fn new(base: &str, timeout_ms: u64, key_header: &'static str, key_env: Option<&str>) -> Upstream {
        let http = reqwest::Client::builder().timeout(Duration::from_millis(timeout_ms)).build().expect("an HTTP client");
        let key = key_env.and_then(|k| std::env::var(k).ok()).filter(|k| !k.is_empty()).map(|k| (key_header, k));
        Upstream { http, base: base.trim_end_matches('/').to_string(), key }
    }

    async fn send(&self, path: &str, req: reqwest::RequestBuilder) -> Result<(reqwest::StatusCode, Vec<u8>), SwapError> {
        let req = match &self.key {
            Some((name, value)) => req.header(*name, value),
            None => req,
        };
        let failed = |e: reqwest::Error| SwapError::Unavailable(format!("{path}: {}", e.without_url()));
        let mut resp = req.send().await.map_err(failed)?;
        let status = resp.status();
        // Bounded in size as in time: a provider gone bad cannot make the
        // service hold an endless answer.
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(SwapError::Unavailable(format!("{path}: answer larger than {MAX_ANSWER_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, body))
    }

    /// The answer's status and body bytes.
    pub async fn get_bytes(&self, path: &str, query: &[(&str, String)]) -> Result<(reqwest::StatusCode, Vec<u8>), SwapError> {
        self.send(path, self.http.get(format!("{}{path}", self.base)).query(query)).await
    }

    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<(reqwest::StatusCode, Value), SwapError> {
        let (status, body) = self.get_bytes(path, query).await?;
        json(path, status, &body)
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<(reqwest::StatusCode, Value), SwapError> {
        let (status, bytes) = self.send(path, self.http.post(format!("{}{path}", self.base)).json(body)).await?;
        json(path, status, &bytes)
    }
}

fn json(path: &str, status: reqwest::StatusCode, body: &[u8]) -> Result<(reqwest::StatusCode, Value), SwapError> {
    let value = serde_json::from_slice(body).map_err(|_| SwapError::Unavailable(format!("{path}: HTTP {status}, not JSON")))?;
    Ok((status, value))
}
