//! Trace context as W3C `traceparent` text: what the HTTP layer reads from
//! a caller, what an intent and an event keep in their rows, and what goes
//! out on RPC calls and webhook deliveries, so one intent's whole life is
//! one trace across processes and time. With tracing off (no exporter
//! installed) spans carry no context: nothing is read, kept or sent.

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry_sdk::propagation::TraceContextPropagator as Propagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// `span`'s context as a `traceparent`, or `None` when tracing is off.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    let mut out = std::collections::HashMap::new();
    Propagator::new().inject_context(&cx, &mut out);
    out.remove("traceparent")
}

/// The current span's `traceparent`.
pub fn current() -> Option<String> {
    traceparent_of(&tracing::Span::current())
}

/// Make `span` a child of `traceparent` (a caller's header, or what a row
/// kept). Text that is not a valid `traceparent` is ignored: the span
/// starts a trace of its own.
pub fn set_parent(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(text) = traceparent else { return };
    // The W3C form is 55 characters; anything longer is not one.
    if text.len() > 64 {
        return;
    }
    let carrier = std::collections::HashMap::from([("traceparent".to_string(), text.to_string())]);
    let cx = Propagator::new().extract(&carrier);
    use opentelemetry::trace::TraceContextExt as _;
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// Link `span` to `other`'s trace (work done for several traces at once).
pub fn link(span: &tracing::Span, other: &tracing::Span) {
    use opentelemetry::trace::TraceContextExt as _;
    let cx = other.context();
    let context = cx.span().span_context().clone();
    if context.is_valid() {
        span.add_link(context);
    }
}

/// Whether RPC providers are sent `traceparent` (`[telemetry]
/// traceparent_to_providers`); set once at start.
static TO_PROVIDERS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

pub fn send_to_providers(on: bool) {
    TO_PROVIDERS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The current span's `traceparent` for an RPC provider, unless the
/// operator keeps traces from providers.
pub fn for_providers() -> Option<String> {
    TO_PROVIDERS.load(std::sync::atomic::Ordering::Relaxed).then(current).flatten()
}
