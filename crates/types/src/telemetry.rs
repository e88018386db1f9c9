//! Prometheus metrics, all named `stablerail_*`. Counters and histograms
//! go through the `metrics` facade into one recorder per process;
//! `/metrics` renders them and adds what is read from the database at
//! scrape time (intents by status, the settlement queue), so those are
//! always this replica's view of the shared database.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Seconds: from a millisecond RPC call to a settlement waiting out an outage.
const BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Install the process's recorder once; later calls reuse it. `None` if
/// another recorder was installed first (then nothing is recorded here).
pub fn init() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
                .expect("bucket list is not empty")
                .install_recorder();
            match recorder {
                Ok(h) => Some(h),
                Err(e) => {
                    tracing::warn!(error = %e, "metrics recorder not installed");
                    None
                }
            }
        })
        .as_ref()
}

/// The recorded metrics in Prometheus text format.
pub fn render() -> String {
    init().map(|h| h.render()).unwrap_or_default()
}

pub fn http_request(route: &str, method: &str, status: u16, took: Duration) {
    let labels = [("route", route.to_string()), ("method", method.to_string())];
    metrics::counter!("stablerail_http_requests_total", "route" => route.to_string(), "method" => method.to_string(), "status" => status.to_string()).increment(1);
    metrics::histogram!("stablerail_http_request_duration_seconds", &labels).record(took.as_secs_f64());
}

/// One webhook attempt's outcome (`delivered`, `retry`, `given_up`) and
/// how long after its event it came.
pub fn webhook_delivery(outcome: &'static str, since_event_ms: i64) {
    metrics::counter!("stablerail_webhook_attempts_total", "outcome" => outcome).increment(1);
    if outcome == "delivered" {
        metrics::histogram!("stablerail_webhook_delivery_latency_seconds").record(since_event_ms.max(0) as f64 / 1000.0);
    }
}

/// Webhook deliveries waiting.
pub fn webhook_pending(n: i64) {
    metrics::gauge!("stablerail_webhook_deliveries_pending").set(n as f64);
}

pub fn rpc_call(chain: &str, method: &str, outcome: &'static str, took: Duration) {
    metrics::counter!("stablerail_rpc_calls_total", "chain" => chain.to_string(), "method" => method.to_string(), "outcome" => outcome)
        .increment(1);
    metrics::histogram!("stablerail_rpc_call_duration_seconds", "chain" => chain.to_string(), "method" => method.to_string())
        .record(took.as_secs_f64());
}

/// One request to one provider of a chain (`endpoint`: its redacted
/// label): `ok`, `node_error`, `throttled` or `failed`, and whether that
/// method's breaker is open on it now.
pub fn rpc_endpoint(chain: &str, endpoint: &str, method: &str, outcome: &'static str, resting: bool) {
    metrics::counter!("stablerail_rpc_endpoint_requests_total", "chain" => chain.to_string(), "endpoint" => endpoint.to_string(), "method" => method.to_string(), "outcome" => outcome)
        .increment(1);
    metrics::gauge!("stablerail_rpc_endpoint_resting", "chain" => chain.to_string(), "endpoint" => endpoint.to_string(), "method" => method.to_string())
        .set(if resting { 1.0 } else { 0.0 });
}

/// How many blocks a provider's head is behind the best one's.
pub fn rpc_endpoint_lag(chain: &str, endpoint: &str, blocks: u64) {
    metrics::gauge!("stablerail_rpc_endpoint_lag_blocks", "chain" => chain.to_string(), "endpoint" => endpoint.to_string())
        .set(blocks as f64);
}

pub fn adapter_call(adapter: &str, function: &'static str, outcome: &'static str, took: Duration) {
    metrics::counter!("stablerail_adapter_calls_total", "adapter" => adapter.to_string(), "function" => function, "outcome" => outcome)
        .increment(1);
    metrics::histogram!("stablerail_adapter_call_duration_seconds", "adapter" => adapter.to_string(), "function" => function)
        .record(took.as_secs_f64());
}

/// A settlement leg ended a pass with `outcome` (settled, failed, blocked,
/// retried, partial); `since` is when that leg began (the proof's
/// acceptance for a source leg, the source leg's settlement for a payout).
pub fn settlement_leg(chain: &str, leg: &'static str, outcome: &'static str, since: Option<Duration>) {
    metrics::counter!("stablerail_settlement_legs_total", "chain" => chain.to_string(), "leg" => leg, "outcome" => outcome).increment(1);
    if let Some(took) = since {
        metrics::histogram!("stablerail_settlement_leg_seconds", "chain" => chain.to_string(), "leg" => leg, "outcome" => outcome)
            .record(took.as_secs_f64());
    }
}

/// A payment whose movement the books gave to another payment: each one
/// is an attempt to have one transfer pay twice, or a defect.
pub fn books_refused(chain: &str, purpose: &'static str) {
    metrics::counter!("stablerail_books_refused_total", "chain" => chain.to_string(), "purpose" => purpose).increment(1);
}

/// What the books cannot explain (`settle::books`), as gauges an alert
/// rule watches: any unexplained outgoing movement or unseen credit is an
/// operator's page.
pub fn books_alarms(unexplained_outgoing: i64, unmatched_incoming: i64, unseen_credits: i64, stalled_wallets: i64) {
    metrics::gauge!("stablerail_books_unexplained_outgoing").set(unexplained_outgoing as f64);
    metrics::gauge!("stablerail_books_unmatched_incoming").set(unmatched_incoming as f64);
    metrics::gauge!("stablerail_books_unseen_credits").set(unseen_credits as f64);
    metrics::gauge!("stablerail_books_stalled_wallets").set(stalled_wallets as f64);
}

/// Nonces a sender has taken beyond what its chain has mined.
pub fn nonce_lag(chain: &str, sender: &str, lag: u64) {
    metrics::gauge!("stablerail_relayer_nonce_lag", "chain" => chain.to_string(), "sender" => sender.to_string()).set(lag as f64);
}

/// A service wallet's balance in whole units (a gauge is a float; amounts
/// that matter are read exactly from the chain, never from here).
/// An address found on a sanctions list, by where it was screened.
/// A facilitator answer by route, scheme, network and outcome (`valid`,
/// `settled`, or the x402 reason code).
pub fn facilitator(route: &'static str, scheme: &str, network: &str, outcome: &str) {
    metrics::counter!(
        "stablerail_facilitator_requests_total",
        "route" => route,
        "scheme" => scheme.to_string(),
        "network" => network.to_string(),
        "outcome" => outcome.to_string()
    )
    .increment(1);
}

/// What the relayer paid, in gwei, for a transaction of its own that was
/// mined and failed: gas spent for nothing.
pub fn relayer_wasted_fee(chain: &str, gwei: u64) {
    metrics::counter!("stablerail_relayer_wasted_fee_total", "chain" => chain.to_string()).increment(gwei);
}

/// A rate-limit table emptied because every remembered key was active.
pub fn limiter_reset() {
    metrics::counter!("stablerail_rate_limit_resets_total").increment(1);
}

pub fn sanctions_hit(stage: &'static str) {
    metrics::counter!("stablerail_sanctions_hits_total", "stage" => stage).increment(1);
}

pub fn wallet_balance(wallet: &str, chain: &str, asset: &str, amount: rust_decimal::Decimal) {
    use rust_decimal::prelude::ToPrimitive;
    metrics::gauge!("stablerail_wallet_balance", "wallet" => wallet.to_string(), "chain" => chain.to_string(), "asset" => asset.to_string())
        .set(amount.to_f64().unwrap_or(f64::NAN));
}

/// Prometheus text for values read at scrape time.
pub fn scrape_text(by_status: &[(String, i64)], queue_depth: i64, oldest_due_age_seconds: i64) -> String {
    let mut out = String::new();
    out.push_str("# HELP stablerail_intents Intents in the database by status.\n# TYPE stablerail_intents gauge\n");
    for (status, n) in by_status {
        out.push_str(&format!("stablerail_intents{{status=\"{status}\"}} {n}\n"));
    }
    out.push_str("# HELP stablerail_settlement_queue_depth Settlement queue entries.\n# TYPE stablerail_settlement_queue_depth gauge\n");
    out.push_str(&format!("stablerail_settlement_queue_depth {queue_depth}\n"));
    out.push_str("# HELP stablerail_settlement_queue_oldest_due_seconds Age of the oldest entry that is due (0 when none).\n# TYPE stablerail_settlement_queue_oldest_due_seconds gauge\n");
    out.push_str(&format!("stablerail_settlement_queue_oldest_due_seconds {oldest_due_age_seconds}\n"));
    out
}
