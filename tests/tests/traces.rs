//! Traces end to end: the real host exports its spans with OTLP over HTTP to a receiver in this
//! test, which decodes them with the OpenTelemetry project's protobuf types; the spans carry
//! the conventions' names and attributes, and the parent the client sent in `_meta`, on
//! through an extension's wrap, an isolated plugin (whose child exports its own spans, with
//! the `OTEL_*` variables it inherits) and a bridged server. A JSON log line carries the
//! request's trace id.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Router, body::Bytes, extract::State, routing::post};
use e2e::{HostProcess, PluginDir, mcp::RawSession, workspace_root};
use opentelemetry_proto::tonic::{
    collector::trace::v1::ExportTraceServiceRequest,
    common::v1::{AnyValue, any_value},
    trace::v1::{Span, span::SpanKind},
};
use prost::Message as _;
use serde_json::{Value, json};

/// The trace the client's calls belong to, and the span of the client's that is their parent.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// Every span the receiver got.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Span>>>);

impl Received {
    fn all(&self) -> Vec<Span> {
        self.0.lock().unwrap().clone()
    }
}

/// Receives OTLP/HTTP protobuf exports on a loopback port.
async fn receiver() -> (SocketAddr, Received) {
    let received = Received::default();
    let app = Router::new()
        .route("/v1/traces", post(export))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, received)
}

async fn export(State(received): State<Received>, body: Bytes) -> Vec<u8> {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
    let spans = request
        .resource_spans
        .into_iter()
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans);
    received.0.lock().unwrap().extend(spans);
    Vec::new()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The span's attribute `key` as JSON (strings, integers and booleans).
fn attribute(span: &Span, key: &str) -> Value {
    let value = span.attributes.iter().find(|a| a.key == key);
    match value
        .and_then(|a| a.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
    {
        Some(any_value::Value::StringValue(s)) => json!(s),
        Some(any_value::Value::IntValue(i)) => json!(i),
        Some(any_value::Value::BoolValue(b)) => json!(b),
        Some(other) => json!(format!("{other:?}")),
        None => Value::Null,
    }
}

/// Waits for a span named `name` whose parent is `parent` (`None`: any).
async fn span(received: &Received, name: &str, parent: Option<&[u8]>) -> Span {
    let start = std::time::Instant::now();
    loop {
        let found = received
            .all()
            .into_iter()
            .find(|s| s.name == name && parent.is_none_or(|p| s.parent_span_id == p));
        if let Some(found) = found {
            return found;
        }
        let names: Vec<String> = received.all().iter().map(|s| s.name.clone()).collect();
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no span `{name}` (with the parent asked for) among {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Calls `tool` with `arguments` in `session`, in the client's trace.
async fn traced_call(session: &RawSession, id: u64, tool: &str, arguments: Value) -> Value {
    let traceparent = format!("00-{TRACE_ID}-{CLIENT_SPAN}-01");
    let (_, answer) = session
        .request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments, "_meta": {"traceparent": traceparent}}),
        )
        .await;
    answer["result"].clone()
}

/// A host serving `base` wrapped by `ext-a`, `compat` isolated and the tiny server bridged,
/// exporting to a receiver; with `--log-format json`.
async fn traced_host() -> (HostProcess, Received, PluginDir) {
    let (addr, received) = receiver().await;
    let dir = PluginDir::with(&["fixture-base", "fixture-ext-a", "fixture-compat"]);
    let tiny = workspace_root().join("tests/servers/tiny_mcp.py");
    std::fs::write(
        dir.file("mcp.json"),
        json!({"mcpServers": {"tiny": {"command": "python3", "args": [tiny]}}}).to_string(),
    )
    .unwrap();
    let endpoint = format!("http://{addr}");
    let host = HostProcess::serve_with_env(
        &dir,
        &["--isolate", "compat", "--log-format", "json"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_SERVICE_NAME", "traced-host"),
            ("RUST_LOG", "info,audit=info"),
        ],
    );
    (host, received, dir)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_is_a_server_span_under_the_clients_with_the_conventions_attributes() {
    let (host, received, _dir) = traced_host().await;
    let session = RawSession::open(&format!("{}/mcp?toolsets=base", host.base_url())).await;
    let result = traced_call(&session, 7, "trace", json!({"path": []})).await;
    assert_eq!(
        result["content"][0]["text"],
        json!(["in:ext-a/0", "base", "out:ext-a/0"]).to_string(),
        "{result}"
    );

    let client = hex_bytes(CLIENT_SPAN);
    let server = span(&received, "tools/call trace", Some(&client)).await;
    assert_eq!(hex(&server.trace_id), TRACE_ID);
    assert_eq!(server.kind, SpanKind::Server as i32);
    assert_eq!(attribute(&server, "mcp.method.name"), "tools/call");
    assert_eq!(attribute(&server, "gen_ai.tool.name"), "trace");
    assert_eq!(attribute(&server, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attribute(&server, "jsonrpc.request.id"), "7");
    assert_eq!(attribute(&server, "mcp.session.id"), session.id.as_str());
    assert_eq!(attribute(&server, "network.transport"), "tcp");
    assert_eq!(attribute(&server, "mcp.protocol.version"), "2025-06-18");
    assert_eq!(attribute(&server, "error.type"), Value::Null);

    let wrap = span(&received, "trace wrapped by ext-a", Some(&server.span_id)).await;
    assert_eq!(hex(&wrap.trace_id), TRACE_ID);
    assert_eq!(attribute(&wrap, "reactor.plugin"), "ext-a");

    let unknown = traced_call(&session, 8, "no_such_tool", json!({})).await;
    assert_eq!(unknown, Value::Null, "an unknown tool is a JSON-RPC error");
    let refused = span(&received, "tools/call no_such_tool", Some(&client)).await;
    assert_eq!(attribute(&refused, "error.type"), "-32602");
    assert_eq!(attribute(&refused, "rpc.response.status_code"), -32602);

    let log = host.stderr_so_far();
    let audit = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["target"] == "audit" && line["fields"]["tool"] == "trace")
        .unwrap_or_else(|| panic!("no audit line: {log}"));
    assert_eq!(audit["span"]["trace_id"], TRACE_ID, "{audit}");
    assert_eq!(audit["span"]["span_id"], hex(&server.span_id), "{audit}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_trace_goes_on_to_an_isolated_plugin_and_a_bridged_server() {
    let (host, received, _dir) = traced_host().await;
    let url = format!("{}/mcp?toolsets=compat,tiny", host.base_url());
    let session = RawSession::open(&url).await;
    let client = hex_bytes(CLIENT_SPAN);

    let seen = traced_call(&session, 2, "host_services", json!({})).await;
    let server = span(&received, "tools/call host_services", Some(&client)).await;
    let child = span(&received, "tools/call host_services", Some(&server.span_id)).await;
    assert_eq!(child.kind, SpanKind::Client as i32);
    assert_eq!(attribute(&child, "reactor.isolated"), true);
    let in_child = span(&received, "tools/call host_services", Some(&child.span_id)).await;
    assert_eq!(
        in_child.kind,
        SpanKind::Server as i32,
        "the child's own span"
    );
    let parent = seen["structuredContent"]["trace_context"]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("no trace context: {seen}"))
        .to_owned();
    assert_eq!(
        parent,
        format!("00-{TRACE_ID}-{}-01", hex(&in_child.span_id)),
        "the plugin traces under its child's span of the call"
    );

    let echoed = traced_call(
        &session,
        3,
        "tiny__echo",
        json!({"text": "x", "meta": true}),
    )
    .await;
    let server = span(&received, "tools/call tiny__echo", Some(&client)).await;
    let child = span(&received, "tools/call echo", Some(&server.span_id)).await;
    assert_eq!(child.kind, SpanKind::Client as i32);
    assert_eq!(attribute(&child, "reactor.plugin"), "tiny");
    assert_eq!(attribute(&child, "reactor.isolated"), false);
    let meta: Value = serde_json::from_str(echoed["content"][0]["text"].as_str().unwrap_or("{}"))
        .unwrap_or_default();
    assert_eq!(
        meta["traceparent"],
        format!("00-{TRACE_ID}-{}-01", hex(&child.span_id)),
        "{echoed}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_an_endpoint_nothing_is_traced_and_the_clients_context_goes_on() {
    let dir = PluginDir::with(&["fixture-compat"]);
    let host = HostProcess::serve(&dir, &["--log-format", "json"]);
    let session = RawSession::open(&format!("{}/mcp", host.base_url())).await;
    let seen = traced_call(&session, 2, "host_services", json!({})).await;
    assert_eq!(
        seen["structuredContent"]["trace_context"]["traceparent"],
        format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"),
        "{seen}"
    );
    let log = host.stderr_so_far();
    assert!(!log.contains("\"spans\""), "no spans are made: {log}");
}

fn hex_bytes(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}
