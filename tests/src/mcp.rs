//! Small helpers for tests that talk MCP: connecting rmcp's client, listing tools, building a
//! `tools/call`, calling it, reading a result's text; and, for tests that need to see the HTTP
//! side, a hand-driven session ([`RawSession`]) and the JSON-RPC messages of a raw answer.

use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult, ClientConfig, ContentBlock, ProtocolVersion},
    service::{Peer, RunningService},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

/// rmcp's client with the default client side (no capabilities).
pub type Client = RunningService<RoleClient, ClientConfig>;

/// An initialised MCP client of `url` over streamable HTTP, with the default client side.
///
/// # Panics
///
/// If the client cannot connect or initialise.
pub async fn connect(url: &str) -> Client {
    connect_as(url, ClientConfig::default()).await
}

/// An initialised MCP client of `url` over streamable HTTP whose client side is `handler`
/// (a [`ClientConfig`] with another protocol version, or a handler that records what the
/// server sends).
///
/// # Panics
///
/// If the client cannot connect or initialise.
pub async fn connect_as<H: ClientHandler>(url: &str, handler: H) -> RunningService<RoleClient, H> {
    handler
        .serve({
            crate::install_tls();
            StreamableHttpClientTransport::from_uri(url)
        })
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"))
}

/// An initialised MCP client of `url` over streamable HTTP sending `Authorization: Bearer
/// TOKEN` with every request.
///
/// # Panics
///
/// If the client cannot connect or initialise.
pub async fn connect_with_token(url: &str, token: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    ClientConfig::default()
        .serve({
            crate::install_tls();
            StreamableHttpClientTransport::from_config(config)
        })
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url} with a token: {e}"))
}

/// A client of `url` speaking protocol 2026-07-28: no `initialize` and no session, every request
/// carrying its own metadata (`server/discover` first).
///
/// # Panics
///
/// If the client cannot connect.
pub async fn connect_2026<H: ClientHandler>(
    url: &str,
    handler: H,
) -> RunningService<RoleClient, H> {
    connect_2026_with(StreamableHttpClientTransportConfig::with_uri(url), handler).await
}

/// [`connect_2026`] with this transport configuration (an `Authorization` header, ...).
///
/// # Panics
///
/// If the client cannot connect.
pub async fn connect_2026_with<H: ClientHandler>(
    config: StreamableHttpClientTransportConfig,
    handler: H,
) -> RunningService<RoleClient, H> {
    let url = config.uri.to_string();
    handler
        .serve_with_lifecycle(
            {
                crate::install_tls();
                StreamableHttpClientTransport::from_config(config)
            },
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap_or_else(|e| panic!("a 2026-07-28 client cannot connect to {url}: {e}"))
}

/// The names of the tools `tools/list` gives, in its order.
///
/// # Panics
///
/// If `tools/list` fails.
pub async fn tool_names(client: &Peer<RoleClient>) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .expect("tools/list answers")
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect()
}

/// The params of a `tools/call` of `name` with `arguments` (a JSON object).
///
/// # Panics
///
/// If `arguments` is not an object.
pub fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

/// Calls `name` through `client` and returns its result, whatever it is.
///
/// # Panics
///
/// If the request itself fails (a JSON-RPC error, a closed transport).
pub async fn call_tool(client: &Peer<RoleClient>, name: &str, arguments: Value) -> CallToolResult {
    client
        .call_tool(call(name, arguments))
        .await
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"))
}

/// The text blocks of a result, joined by newlines.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The JSON-RPC messages of an HTTP answer's body: one JSON message, or the `data:` lines of
/// an event stream.
pub fn messages(body: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return vec![value];
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// The strings of a JSON array.
///
/// # Panics
///
/// If `value` is not an array of strings.
pub fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| {
            v.as_str()
                .unwrap_or_else(|| panic!("not a string: {v}"))
                .to_owned()
        })
        .collect()
}

/// `GET url`: its status, and its body as JSON (`null` when it is not JSON).
///
/// # Panics
///
/// If the request cannot be sent.
pub async fn get_json(url: &str) -> (u16, Value) {
    let response = crate::http()
        .get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// `GET url` as JSON, which must answer 200.
///
/// # Panics
///
/// If the request cannot be sent or does not answer 200.
pub async fn get_ok_json(url: &str) -> Value {
    let (status, body) = get_json(url).await;
    assert_eq!(status, 200, "GET {url}: {body}");
    body
}

/// Posts a 2026-07-28 request without a session to `url`: `params` with the `_meta` that
/// version requires, the `MCP-Protocol-Version` and `Mcp-Method` headers, and `Mcp-Name` when
/// given; the answer unread.
///
/// # Panics
///
/// If the request cannot be sent.
pub async fn post_2026(
    url: &str,
    id: u64,
    method: &str,
    name: Option<&str>,
    mut params: Value,
) -> reqwest::Response {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = crate::http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    request
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"))
}

/// A hand-driven MCP session over plain HTTP, so the test sees the session id it holds.
#[derive(Debug)]
pub struct RawSession {
    /// The HTTP client it posts with.
    pub http: reqwest::Client,
    /// The MCP endpoint.
    pub url: String,
    /// The session id the server gave.
    pub id: String,
}

impl RawSession {
    /// Initialises a session at `url` (protocol 2025-06-18, no capabilities).
    ///
    /// # Panics
    ///
    /// If the server does not answer with a session.
    pub async fn open(url: &str) -> Self {
        let http = crate::http();
        let response = initialize(&http, url, 1).await;
        assert_eq!(response.status(), 200);
        let id = response
            .headers()
            .get("mcp-session-id")
            .expect("a stateful server gives a session id")
            .to_str()
            .unwrap()
            .to_owned();
        let session = Self {
            http,
            url: url.to_owned(),
            id,
        };
        let initialized = post(
            &session.http,
            url,
            Some(&session.id),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        assert_eq!(initialized.status(), 202);
        session
    }

    /// Sends a request in this session; the HTTP status and the JSON-RPC answer.
    pub async fn request(&self, id: u64, method: &str, params: Value) -> (u16, Value) {
        let (status, messages) = self.exchange(id, method, params).await;
        let answer = messages.iter().find(|m| m["id"] == id).cloned();
        (status, answer.unwrap_or(Value::Array(messages)))
    }

    /// Sends a request in this session; the HTTP status and every JSON-RPC message of the
    /// answer, in order (notifications the server sent on the request's stream, then the
    /// answer).
    pub async fn exchange(&self, id: u64, method: &str, params: Value) -> (u16, Vec<Value>) {
        let response = post(
            &self.http,
            &self.url,
            Some(&self.id),
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await;
        let status = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        (status, messages(&body))
    }
}

/// Posts an `initialize` with JSON-RPC id `id` to `url` (protocol 2025-06-18, no
/// capabilities), without a session, and returns the answer unread.
///
/// # Panics
///
/// If the request cannot be sent.
pub async fn initialize(http: &reqwest::Client, url: &str, id: u64) -> reqwest::Response {
    post(
        http,
        url,
        None,
        json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await
}

/// Posts JSON-RPC `body` to `url`, in session `session` if given, as a 2025-06-18 client.
///
/// # Panics
///
/// If the request cannot be sent.
pub async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> reqwest::Response {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
    }
    request
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"))
}

/// What a test client was sent (log messages, progress, requests), shared with its clones.
#[derive(Debug)]
pub struct Recorded<T>(std::sync::Arc<std::sync::Mutex<Vec<T>>>);

impl<T> Default for Recorded<T> {
    fn default() -> Self {
        Self(std::sync::Arc::default())
    }
}

impl<T> Clone for Recorded<T> {
    fn clone(&self) -> Self {
        Self(std::sync::Arc::clone(&self.0))
    }
}

impl<T: Clone> Recorded<T> {
    fn items(&self) -> std::sync::MutexGuard<'_, Vec<T>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records one more.
    pub fn push(&self, item: T) {
        self.items().push(item);
    }

    /// Everything recorded so far, in order.
    pub fn all(&self) -> Vec<T> {
        self.items().clone()
    }

    /// Forgets what was recorded.
    pub fn clear(&self) {
        self.items().clear();
    }

    /// Everything recorded so far, in order, forgotten in the same step: nothing recorded
    /// meanwhile is lost.
    pub fn take(&self) -> Vec<T> {
        std::mem::take(&mut *self.items())
    }
}

/// The `notifications/progress` among `messages`, checked to be `total` reports under `token`,
/// numbered 1 to `total` in order.
///
/// # Panics
///
/// If they are not.
pub fn assert_progress_in_order(messages: &[Value], token: &str, total: usize) {
    let reports: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(reports.len(), total, "{messages:?}");
    for (i, report) in reports.iter().enumerate() {
        assert_eq!(report["params"]["progressToken"], token);
        assert_eq!(report["params"]["progress"].as_f64(), Some((i + 1) as f64));
        assert_eq!(report["params"]["total"].as_f64(), Some(total as f64));
    }
}

/// What the tests' clients answer a sampling request with: the model `e2e-model` saying
/// "you said: " and the text of the request's first message.
#[allow(deprecated)]
pub fn sampled(
    params: &rmcp::model::CreateMessageRequestParams,
) -> rmcp::model::CreateMessageResult {
    let asked = serde_json::to_value(params).unwrap_or_default();
    let prompt = asked["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    serde_json::from_value(json!({
        "model": "e2e-model",
        "role": "assistant",
        "content": {"type": "text", "text": format!("you said: {prompt}")},
        "stopReason": "endTurn"
    }))
    .expect("a sampling result")
}
