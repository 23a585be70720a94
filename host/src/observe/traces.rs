//! Traces in the OpenTelemetry MCP conventions, exported with OTLP when the standard `OTEL_*`
//! variables ask for it.
//!
//! The spans are `tracing` spans of the target [`TARGET`], made only when traces are on
//! ([`on`]: one atomic load when they are off), and turned into OpenTelemetry spans by
//! `tracing-opentelemetry`'s layer, which [`layer`] gives the subscriber. A request's span is
//! the SERVER span the conventions name `{mcp.method.name} {target}` ([`request_span`]); its
//! parent is the W3C trace context the request came with. The context going on to a bridged
//! server, an isolated child or a plugin is the current span's ([`current_context`]).

use std::{
    collections::HashMap,
    sync::{
        OnceLock,
        atomic::{AtomicBool, Ordering},
    },
};

use opentelemetry::{
    propagation::TextMapPropagator,
    trace::{TraceContextExt as _, TracerProvider as _},
};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::{Resource, propagation::TraceContextPropagator, trace::SdkTracerProvider};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::{Layer, filter::filter_fn, registry::LookupSpan};

/// The `tracing` target of every span made for traces; the exporting layer takes these alone.
pub(crate) const TARGET: &str = "mcp";

/// Whether traces are on (set once, by [`layer`]).
static ON: AtomicBool = AtomicBool::new(false);

/// The provider whose batch exporter [`shutdown`] flushes.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Whether spans are made: an exporter is configured.
#[inline]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// What the `OTEL_*` variables ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Export {
    /// Nothing: no endpoint, or `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`.
    Off,
    /// OTLP over HTTP, in protobuf or JSON.
    Otlp(Protocol),
}

/// Reads the standard variables through `var`: `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER`,
/// `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, and
/// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the
/// default, or `http/json`). An error names the variable and the value it cannot use.
pub(crate) fn export_from(var: impl Fn(&str) -> Option<String>) -> Result<Export, String> {
    let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(Export::Off);
    }
    if let Some(exporter) = set("OTEL_TRACES_EXPORTER") {
        match exporter.trim() {
            "none" => return Ok(Export::Off),
            "otlp" => {}
            other => {
                return Err(format!(
                    "OTEL_TRACES_EXPORTER={other}: this server exports traces with `otlp` only \
                     (or `none`)"
                ));
            }
        }
    }
    if set("OTEL_EXPORTER_OTLP_ENDPOINT").is_none()
        && set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_none()
    {
        return Ok(Export::Off);
    }
    let (name, protocol) = match set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") {
        Some(protocol) => ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", protocol),
        None => match set("OTEL_EXPORTER_OTLP_PROTOCOL") {
            Some(protocol) => ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
            None => return Ok(Export::Otlp(Protocol::HttpBinary)),
        },
    };
    match protocol.trim() {
        "http/protobuf" => Ok(Export::Otlp(Protocol::HttpBinary)),
        "http/json" => Ok(Export::Otlp(Protocol::HttpJson)),
        other => Err(format!(
            "{name}={other}: this server exports OTLP over HTTP, `http/protobuf` or `http/json` \
             (gRPC is not built in: point it at a collector's HTTP port, 4318)"
        )),
    }
}

/// The layer that exports this process's spans, when the environment asks for an exporter;
/// turns traces on. `None` (and traces stay off) when it does not; an error when the
/// variables cannot be used or the exporter cannot be made.
pub(crate) fn layer<S>() -> Result<Option<impl Layer<S> + Send + Sync>, String>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    let Export::Otlp(protocol) = export_from(|name| std::env::var(name).ok())? else {
        return Ok(None);
    };
    crate::util::tls::install_crypto_provider();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .build()
        .map_err(|e| format!("cannot make the OTLP trace exporter: {e}"))?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(env!("CARGO_PKG_NAME"));
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer(env!("CARGO_PKG_NAME"));
    let _ = PROVIDER.set(provider);
    ON.store(true, Ordering::Relaxed);
    Ok(Some(
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(filter_fn(|meta| meta.is_span() && meta.target() == TARGET)),
    ))
}

/// Sends the spans not yet exported, and stops the exporter; for the end of the process.
pub(crate) fn shutdown() {
    if let Some(provider) = PROVIDER.get()
        && let Err(error) = provider.shutdown()
    {
        eprintln!("warning: the last spans were not exported: {error}");
    }
}

/// What a request's SERVER span is named for and labelled with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    /// `mcp.method.name`.
    pub(crate) method: &'a str,
    /// The tool or prompt name, or the resource URI: the span name's target.
    pub(crate) target: Option<&'a str>,
    /// `jsonrpc.request.id`.
    pub(crate) request_id: Option<&'a str>,
    /// `mcp.session.id`.
    pub(crate) session: Option<&'a str>,
    /// `mcp.protocol.version`.
    pub(crate) protocol: Option<&'a str>,
    /// `network.transport`: `tcp` or `pipe`.
    pub(crate) transport: &'static str,
    /// `user.id`: the authenticated caller.
    pub(crate) caller: Option<&'a str>,
    /// The W3C `traceparent` and `tracestate` the request came with.
    pub(crate) parent: Option<(&'a str, Option<&'a str>)>,
}

/// The SERVER span of one request; [`Span::none`] when traces are off.
pub(crate) fn request_span(request: &Request<'_>) -> Span {
    if !on() {
        return Span::none();
    }
    let name = match request.target {
        Some(target) => format!("{} {target}", request.method),
        None => request.method.to_owned(),
    };
    let (tool, prompt, uri) = match request.method {
        "tools/call" => (request.target, None, None),
        "prompts/get" => (None, request.target, None),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            (None, None, request.target)
        }
        _ => (None, None, None),
    };
    let span = tracing::info_span!(
        target: TARGET,
        "request",
        otel.name = name.as_str(),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = request.method,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        gen_ai.tool.name = tool,
        gen_ai.prompt.name = prompt,
        mcp.resource.uri = uri,
        jsonrpc.request.id = request.request_id,
        mcp.session.id = request.session,
        mcp.protocol.version = request.protocol,
        network.transport = request.transport,
        user.id = request.caller,
        error.type = tracing::field::Empty,
        rpc.response.status_code = tracing::field::Empty,
        trace_id = tracing::field::Empty,
        span_id = tracing::field::Empty,
    );
    if let Some((parent, state)) = request.parent {
        let _ = span.set_parent(extract(parent, state));
    }
    let ids = span.context().span().span_context().clone();
    span.record("trace_id", tracing::field::display(ids.trace_id()));
    span.record("span_id", tracing::field::display(ids.span_id()));
    span
}

/// Records on `span` that its request failed: `error_type` is the conventions' `error.type`
/// (`tool_error`, or the JSON-RPC code), `code` the JSON-RPC code of an error answer.
pub(crate) fn record_error(span: &Span, error_type: &str, code: Option<i32>) {
    if span.is_none() {
        return;
    }
    span.record("otel.status_code", "ERROR");
    span.record("error.type", error_type);
    if let Some(code) = code {
        span.record("rpc.response.status_code", code);
    }
}

/// A child span of the current one, of `kind` (`internal` or `client`), named `name`, with
/// `reactor.plugin` set; [`Span::none`] when traces are off.
pub(crate) fn child_span(name: &str, kind: &'static str, plugin: &str) -> Span {
    if !on() {
        return Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "step",
        otel.name = name,
        otel.kind = kind,
        otel.status_code = tracing::field::Empty,
        reactor.plugin = plugin,
        reactor.isolated = tracing::field::Empty,
        mcp.method.name = tracing::field::Empty,
        gen_ai.tool.name = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// A child span of the W3C context `parent` (a JSON object of `traceparent` and `tracestate`,
/// as [`current_context`] gives it), for work that runs where the current span is not the
/// caller's (a plugin's thread); [`Span::none`] when traces are off.
pub(crate) fn child_of(parent: Option<&str>, name: &str, plugin: &str) -> Span {
    let span = child_span(name, "internal", plugin);
    if let Some(parent) =
        parent.and_then(|json| serde_json::from_str::<HashMap<String, String>>(json).ok())
    {
        let _ = span.set_parent(TraceContextPropagator::new().extract(&parent));
    }
    span
}

/// The W3C trace context of `span` as the JSON object of strings plugins and `_meta` get
/// (`traceparent`, and `tracestate` when there is one); `None` when traces are off or the
/// span is not recorded.
pub(crate) fn context_of(span: &Span) -> Option<serde_json::Map<String, serde_json::Value>> {
    if !on() || span.is_none() {
        return None;
    }
    let mut fields = HashMap::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut fields);
    fields.contains_key("traceparent").then(|| {
        fields
            .into_iter()
            .map(|(key, value)| (key, serde_json::Value::String(value)))
            .collect()
    })
}

/// [`context_of`] the current span.
pub(crate) fn current_context() -> Option<serde_json::Map<String, serde_json::Value>> {
    context_of(&Span::current())
}

/// The OpenTelemetry context of a W3C `traceparent` and `tracestate`.
fn extract(parent: &str, state: Option<&str>) -> opentelemetry::Context {
    let mut fields = HashMap::from([("traceparent".to_owned(), parent.to_owned())]);
    if let Some(state) = state {
        fields.insert("tracestate".to_owned(), state.to_owned());
    }
    TraceContextPropagator::new().extract(&fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn no_endpoint_exports_nothing() {
        assert_eq!(export_from(env(&[])), Ok(Export::Off));
        assert_eq!(
            export_from(env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")])),
            Ok(Export::Off)
        );
    }

    #[test]
    fn an_endpoint_exports_protobuf_unless_json_is_asked_for() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert_eq!(
            export_from(env(&[endpoint])),
            Ok(Export::Otlp(Protocol::HttpBinary))
        );
        assert_eq!(
            export_from(env(&[
                endpoint,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
            ])),
            Ok(Export::Otlp(Protocol::HttpJson))
        );
        assert_eq!(
            export_from(env(&[
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://c:4318/v1/traces"
                ),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ])),
            Ok(Export::Otlp(Protocol::HttpBinary))
        );
    }

    #[test]
    fn disabled_or_none_exports_nothing() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert_eq!(
            export_from(env(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")])),
            Ok(Export::Off)
        );
        assert_eq!(
            export_from(env(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")])),
            Ok(Export::Off)
        );
    }

    #[test]
    fn grpc_and_other_exporters_are_refused_by_name() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317");
        let grpc = export_from(env(&[endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]));
        assert!(
            grpc.unwrap_err()
                .starts_with("OTEL_EXPORTER_OTLP_PROTOCOL=grpc:")
        );
        let zipkin = export_from(env(&[endpoint, ("OTEL_TRACES_EXPORTER", "zipkin")]));
        assert!(
            zipkin
                .unwrap_err()
                .starts_with("OTEL_TRACES_EXPORTER=zipkin:")
        );
    }
}
