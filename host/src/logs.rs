//! The process's logs and traces: log lines to standard error (text or
//! JSON, filtered by `RUST_LOG`), and, when `[telemetry] otlp_endpoint`
//! names a collector, stablerail's spans exported as OpenTelemetry traces
//! (OTLP over HTTP, protobuf), sampled by `sample_ratio` unless a caller's
//! `traceparent` decided.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;

use crate::config::Telemetry;

/// Keeps the exporter; dropping it sends what is buffered.
pub struct Guard(Option<SdkTracerProvider>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take() {
            if let Err(e) = provider.shutdown() {
                eprintln!("traces: the last spans could not be sent: {e}");
            }
        }
    }
}

/// Install the subscriber. Logs go to standard error, so a command's
/// answer on standard output stays clean JSON.
pub fn init(json: bool, telemetry: Option<&Telemetry>) -> anyhow::Result<Guard> {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "stablerail=info,tower_http=info".into());
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = if json {
        logs.json().flatten_event(true).with_current_span(true).with_span_list(false).boxed()
    } else {
        logs.with_ansi(std::io::stderr().is_terminal()).boxed()
    };
    let provider = match telemetry.and_then(|t| t.otlp_endpoint.as_deref().map(|e| (t, e))) {
        Some((t, endpoint)) => Some(provider(t, endpoint)?),
        None => None,
    };
    // Only stablerail's own spans become traces, whatever `RUST_LOG` lets
    // the log lines show; log lines are not span events (their fields were
    // written for logs, not for a collector outside).
    let traces = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer().with_tracer(p.tracer("stablerail")).with_filter(tracing_subscriber::filter::filter_fn(|m| {
            m.is_span() && m.target().starts_with("stablerail") && *m.level() <= tracing::Level::INFO
        }))
    });
    if let Some(t) = telemetry {
        crate::traces::send_to_providers(t.traceparent_to_providers);
    }
    tracing_subscriber::registry().with(logs.with_filter(filter)).with(traces).try_init()?;
    Ok(Guard(provider))
}

fn provider(t: &Telemetry, endpoint: &str) -> anyhow::Result<SdkTracerProvider> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_timeout(std::time::Duration::from_secs(10))
        .build()?;
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(t.service_name.clone()).build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Decide(Sampler::TraceIdRatioBased(t.sample_ratio)))
        .with_resource(resource)
        .build())
}

/// Spans that may begin a trace: a request, a settlement's pass, a relayer
/// batch of several payments (linked to theirs), a webhook attempt (of a
/// change made with tracing off). Any other span without a parent (a
/// follower's receipt reads, a sweeper's transaction) would be a trace of
/// one span each: those are not kept.
const ROOTS: [&str; 4] = ["request", "settlement pass", "relayer batch", "webhook attempt"];

/// Who is recorded. A span inside this process follows its parent. A
/// caller's `traceparent` is continued (its trace id), but a caller cannot
/// make the service record more than `sample_ratio` of traces: one that
/// says "not sampled" is not recorded, one that says "sampled" is by the
/// ratio (decided on the trace id, so every service that does the same
/// agrees). A span with no parent begins a trace only if it is one of
/// `ROOTS`, by the ratio.
#[derive(Debug, Clone)]
struct Decide(Sampler);

impl opentelemetry_sdk::trace::ShouldSample for Decide {
    fn should_sample(
        &self,
        parent: Option<&opentelemetry::Context>,
        trace_id: opentelemetry::trace::TraceId,
        name: &str,
        kind: &opentelemetry::trace::SpanKind,
        attributes: &[opentelemetry::KeyValue],
        links: &[opentelemetry::trace::Link],
    ) -> opentelemetry::trace::SamplingResult {
        use opentelemetry::trace::{SamplingDecision, SamplingResult, TraceContextExt as _};
        let drop = || SamplingResult { decision: SamplingDecision::Drop, attributes: vec![], trace_state: Default::default() };
        let keep = || SamplingResult { decision: SamplingDecision::RecordAndSample, attributes: vec![], trace_state: Default::default() };
        let parent_span = parent.filter(|cx| cx.has_active_span()).map(|cx| cx.span().span_context().clone());
        match parent_span {
            Some(p) if p.is_valid() && !p.is_remote() => {
                if p.is_sampled() {
                    keep()
                } else {
                    drop()
                }
            }
            Some(p) if p.is_valid() => {
                if p.is_sampled() {
                    self.0.should_sample(parent, trace_id, name, kind, attributes, links)
                } else {
                    drop()
                }
            }
            _ if ROOTS.contains(&name) => self.0.should_sample(parent, trace_id, name, kind, attributes, links),
            _ => drop(),
        }
    }
}
