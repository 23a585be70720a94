//! The hot methods answered by the host itself: `tools/call`, `tools/list` and `ping`, read
//! with typed serde straight from the body and served in the task that read it, without
//! rmcp's per-request machinery (its parse of every request shape, a session worker's
//! channels, a spawned service per stateless request, the event-stream framing of a lone
//! answer).
//!
//! [`Hot::answer`] takes a request only when rmcp would serve it the same way, and hands
//! anything else back untouched, for rmcp:
//!
//! - **in a 2025-11-25 session**: the session is open, recorded at its `initialize`
//!   ([`DirectSessions`]); no `MCP-Protocol-Version` header of 2026-07-28 or an unknown one,
//!   no protocol version in `_meta`; the client declared none of `sampling`, `elicitation` and
//!   `roots` (a tool's requests to the client ride the request's own stream in rmcp, which
//!   only rmcp's session worker can route answers from);
//! - **without a session, 2026-07-28**: the `_meta` holds every required field, and its
//!   version is the header's; `Mcp-Method` (and, for `tools/call`, a plain `Mcp-Name`) match
//!   the body, and the tool mirrors no argument into a header;
//! - **without a session, earlier versions**: only when the server runs `--stateless`.
//!
//! rmcp's own dispatch serves the request (`Handler::answer_directly`), so its version checks and
//! guards apply. The answer is JSON, or, once the call sends a notification (progress, or
//! without a session a log message) before it, an event stream of those and then the answer,
//! as rmcp sends it. A request of a session counts as a stream of it while it runs, so an
//! idle timeout never closes a session with a call in flight, and the client can cancel it.

use std::{
    collections::VecDeque,
    pin::Pin,
    sync::{Arc, OnceLock},
};

use axum::{
    body::{Body, Bytes},
    extract::Request,
    http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts},
    response::Response,
};
use futures::{FutureExt as _, Stream};
use rmcp::{
    Peer, RoleServer, ServerHandler as _,
    model::{
        ClientRequest, ErrorCode, ProtocolVersion, RequestId, RequestMetaObject,
        ServerJsonRpcMessage,
    },
    service::RequestContext,
};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::serve::{
    ServeState,
    edge::sessions::{SESSION_ID, Sessions},
    host_context::Outlet,
    mcp::{
        Handler,
        direct::{DirectSessions, ListedJson, detached_peer, read, serialise},
    },
};

/// The header naming the request's protocol version.
const PROTOCOL_VERSION: &str = "mcp-protocol-version";

/// How many protocol versions rmcp knows.
const VERSIONS: usize = ProtocolVersion::KNOWN_VERSIONS.len();

/// What answers the hot methods.
#[derive(Debug)]
pub(crate) struct Hot {
    /// The sessions whose requests may be answered here; none when the server runs
    /// `--stateless` (then requests of earlier versions without a session are taken too).
    sessions: Option<(Arc<Sessions>, Arc<DirectSessions>)>,
    /// Serves the requests without a session; they share nothing a handler holds.
    stateless: Handler,
    /// A peer for requests without a session, per known protocol version, made on first use.
    peers: [OnceLock<Peer<RoleServer>>; VERSIONS],
}

/// Whom a request is served by, and how.
struct Route {
    handler: Handler,
    peer: Peer<RoleServer>,
    /// Whether the client is told the HTTP status of a 2026-07-28 error.
    per_request: bool,
    /// Whether log messages go into the answer (no session to send them on).
    logs_in_answer: bool,
    /// The session's use while the request runs.
    hold: Option<Box<dyn Send + Sync>>,
}

impl Hot {
    /// The hot path over `state`; `sessions` when sessions are on.
    pub(crate) fn new(
        state: &Arc<ServeState>,
        sessions: Option<(Arc<Sessions>, Arc<DirectSessions>)>,
    ) -> Self {
        Self {
            sessions,
            stateless: Handler::new(Arc::clone(state)),
            peers: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The answer to `request`, a POST to the MCP endpoint whose body was read whole, when it
    /// is one of the hot methods this path takes; otherwise `request` back, untouched.
    pub(crate) async fn answer(&self, request: Request) -> Result<Response, Request> {
        if !accepts_both(request.headers()) {
            return Err(request);
        }
        let (parts, body) = request.into_parts();
        // The body check read it whole: this takes it back without waiting or copying.
        let bytes = axum::body::to_bytes(body, usize::MAX)
            .now_or_never()
            .and_then(Result::ok)
            .unwrap_or_default();
        match self.prepare(&bytes, &parts.headers) {
            Some(prepared) => Ok(serve(prepared, parts).await),
            None => Err(Request::from_parts(parts, Body::from(bytes))),
        }
    }

    /// The request, typed and routed, when this path serves it.
    fn prepare(&self, bytes: &[u8], headers: &HeaderMap) -> Option<Prepared> {
        let (id, request, meta) = read(bytes)?;
        let route = self.route(headers, &request, &meta)?;
        Some(Prepared {
            id,
            request,
            meta,
            route,
        })
    }

    /// Who serves `request`, if this path does.
    fn route(
        &self,
        headers: &HeaderMap,
        request: &ClientRequest,
        meta: &RequestMetaObject,
    ) -> Option<Route> {
        let header = single(headers, PROTOCOL_VERSION)?;
        // The header's version, as its place among the known ones; an unknown one is rmcp's.
        let known = match header {
            Some(v) => Some(
                ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .position(|k| k.as_str() == v)?,
            ),
            None => None,
        };
        let modern = |v: &str| v >= ProtocolVersion::V_2026_07_28.as_str();
        let in_body = meta.protocol_version();
        if let Some(session) = single(headers, SESSION_ID)? {
            if in_body.is_some() || header.is_some_and(modern) {
                return None;
            }
            return self.in_session(session);
        }
        match in_body {
            Some(version) => {
                let per_request = modern(version.as_str())
                    && header == Some(version.as_str())
                    && meta
                        .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                        .is_empty()
                    && self.standard_headers_match(headers, request)?;
                if !per_request {
                    return None;
                }
                self.without_session(known?, true)
            }
            None if self.sessions.is_none() && !header.is_some_and(modern) => {
                // rmcp takes a request without a version for 2025-03-26.
                let v2025_03_26 = ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .position(|k| *k == ProtocolVersion::V_2025_03_26)?;
                self.without_session(known.unwrap_or(v2025_03_26), false)
            }
            None => None,
        }
    }

    /// The route of a request of the open, initialized session `id`, unless its client may be
    /// sent requests.
    fn in_session(&self, id: &str) -> Option<Route> {
        let (sessions, direct) = self.sessions.as_ref()?;
        let session = direct.get(id)?;
        let info = session.peer.peer_info()?;
        let capabilities = &info.capabilities;
        #[allow(deprecated)] // sampling and roots are deprecated by SEP-2577, still in 2025-11-25
        let asks = capabilities.sampling.is_some()
            || capabilities.elicitation.is_some()
            || capabilities.roots.is_some();
        if asks {
            return None;
        }
        let hold = sessions.hold(id)?;
        Some(Route {
            handler: session.handler,
            peer: session.peer,
            per_request: false,
            logs_in_answer: false,
            hold: Some(Box::new(hold)),
        })
    }

    /// The route of a request without a session, of the known protocol version at `version`.
    fn without_session(&self, version: usize, per_request: bool) -> Option<Route> {
        let peer = self
            .peers
            .get(version)?
            .get_or_init(|| detached_peer(ProtocolVersion::KNOWN_VERSIONS[version].clone()));
        Some(Route {
            handler: self.stateless.clone(),
            peer: peer.clone(),
            per_request,
            logs_in_answer: true,
            hold: None,
        })
    }

    /// Whether SEP-2243's headers match the body as rmcp would check them; `None` when rmcp
    /// is to check them (a name in Base64, or a tool mirroring arguments into headers).
    fn standard_headers_match(&self, headers: &HeaderMap, request: &ClientRequest) -> Option<bool> {
        let (method, name) = match request {
            ClientRequest::CallToolRequest(call) => ("tools/call", Some(&*call.params.name)),
            ClientRequest::ListToolsRequest(_) => ("tools/list", None),
            ClientRequest::PingRequest(_) => ("ping", None),
            _ => return None,
        };
        if single(headers, "mcp-method")?? != method {
            return None;
        }
        if let Some(name) = name {
            let header = single(headers, "mcp-name")??;
            if header.starts_with("=?base64?")
                || header != name
                || self.stateless.get_tool(name).is_some()
            {
                return None;
            }
        }
        Some(true)
    }
}

/// A request ready to serve.
struct Prepared {
    id: RequestId,
    request: ClientRequest,
    meta: RequestMetaObject,
    route: Route,
}

/// Serves a prepared request, whose HTTP request had `parts`: JSON when the answer comes
/// first, else an event stream.
async fn serve(prepared: Prepared, parts: Parts) -> Response {
    let Prepared {
        id,
        request,
        meta,
        route,
    } = prepared;
    let Route {
        handler,
        peer,
        per_request,
        logs_in_answer,
        hold,
    } = route;
    let listed = matches!(request, ClientRequest::ListToolsRequest(_)).then(ListedJson::default);
    let mut context = RequestContext::new(id, peer);
    context.meta = meta;
    if let Some(listed) = &listed {
        context.extensions.insert(listed.clone());
    }
    let (outlet, mut notes) = Outlet::new(logs_in_answer);
    context.extensions.insert(outlet);
    context.extensions.insert(parts);
    let ct = context.ct.clone();
    let cancellable = hold.is_some();
    let mut answer = Pending {
        answer: Some(Box::pin(async move {
            handler.answer_directly(request, context, cancellable).await
        })),
        ct,
    };
    if listed.is_some() {
        // A list sends nothing before its answer.
        let message = answer.await;
        drop(hold);
        return json(&message, per_request, listed.as_ref());
    }
    let first = tokio::select! {
        biased;
        message = &mut answer => Ok(message),
        Some(note) = notes.recv() => Err(*note),
    };
    match first {
        Ok(message) => match notes.try_recv().map(|note| *note) {
            Err(_) => {
                drop(hold);
                json(&message, per_request, None)
            }
            Ok(note) => {
                let mut events = Events {
                    ready: VecDeque::from([note]),
                    answer: None,
                    notes,
                    hold,
                };
                events.finish(message);
                event_stream(events)
            }
        },
        Err(note) => event_stream(Events {
            ready: VecDeque::from([note]),
            answer: Some(answer),
            notes,
            hold,
        }),
    }
}

/// The answer as a JSON body, with the tools `listed` left as JSON; under 2026-07-28 with the
/// HTTP status rmcp gives its error.
fn json(
    message: &ServerJsonRpcMessage,
    per_request: bool,
    listed: Option<&ListedJson>,
) -> Response {
    let status = match message {
        ServerJsonRpcMessage::Error(error) if per_request => match error.error.code {
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
            ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            _ => StatusCode::OK,
        },
        _ => StatusCode::OK,
    };
    let body = serialise(message, listed);
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The answer being made. When its client goes away first (the request or its event stream is
/// dropped), the call is cancelled and left to end on its own, so the plugin sees the
/// cancellation and the call is logged and counted, as when rmcp's request is cancelled.
struct Pending {
    answer: Option<Pin<Box<dyn Future<Output = ServerJsonRpcMessage> + Send>>>,
    ct: tokio_util::sync::CancellationToken,
}

impl Future for Pending {
    type Output = ServerJsonRpcMessage;

    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<ServerJsonRpcMessage> {
        let Some(answer) = self.answer.as_mut() else {
            return std::task::Poll::Pending;
        };
        let message = std::task::ready!(answer.as_mut().poll(cx));
        self.answer = None;
        std::task::Poll::Ready(message)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(answer) = self.answer.take() {
            self.ct.cancel();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(answer);
            }
        }
    }
}

/// What an event-stream answer still has to send.
struct Events {
    /// Messages ready to go, in order.
    ready: VecDeque<ServerJsonRpcMessage>,
    /// The answer, until it came.
    answer: Option<Pending>,
    notes: UnboundedReceiver<Box<ServerJsonRpcMessage>>,
    /// The session's use, until the stream ends.
    hold: Option<Box<dyn Send + Sync>>,
}

impl Events {
    /// The answer came: what the call sent before it goes first, then the answer.
    fn finish(&mut self, message: ServerJsonRpcMessage) {
        let notes = &mut self.notes;
        self.ready.extend(std::iter::from_fn(|| {
            notes.try_recv().ok().map(|note| *note)
        }));
        self.ready.push_back(message);
    }
}

impl Stream for Events {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = &mut *self;
        loop {
            if let Some(message) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(event(&message))));
            }
            let Some(answer) = this.answer.as_mut() else {
                this.hold = None;
                return Poll::Ready(None);
            };
            if let Poll::Ready(Some(note)) = this.notes.poll_recv(cx) {
                this.ready.push_back(*note);
                continue;
            }
            match Pin::new(answer).poll(cx) {
                Poll::Ready(message) => {
                    this.answer = None;
                    this.finish(message);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// One server-sent event carrying `message`.
fn event(message: &ServerJsonRpcMessage) -> Bytes {
    let mut frame = b"data: ".to_vec();
    // Serialising a message the server built cannot fail.
    let _ = serde_json::to_writer(&mut frame, message);
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

/// An event-stream answer sending what `events` has.
fn event_stream(events: Events) -> Response {
    let mut response = Response::new(Body::from_stream(events));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The one value of header `name` as text: `Some(None)` when absent, `None` when repeated or
/// not text (rmcp then answers).
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Option<Option<&'a str>> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Some(None);
    };
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok().map(Some)
}

/// Whether the request accepts both JSON and an event stream, plainly (rmcp answers anything
/// else, `406` among them).
fn accepts_both(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok());
    let (mut json, mut sse) = (false, false);
    for value in accept {
        if value.contains("q=") {
            return false;
        }
        json |= value.contains("application/json");
        sse |= value.contains("text/event-stream");
    }
    let content_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    json && sse && content_json
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hot_method_is_read_with_its_meta_apart_and_anything_else_is_left() {
        let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call",
            "params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"p"}}}"#;
        let (id, request, meta) = read(body).unwrap();
        assert_eq!(id, RequestId::Number(7));
        let ClientRequest::CallToolRequest(call) = request else {
            panic!("not a call");
        };
        assert_eq!(call.params.name, "echo");
        assert!(
            call.params.meta.is_none(),
            "the meta is the request's, as rmcp reads it"
        );
        assert!(meta.get_progress_token().is_some());

        let list = br#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#;
        assert!(matches!(
            read(list),
            Some((RequestId::String(_), ClientRequest::ListToolsRequest(_), _))
        ));
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(matches!(
            read(ping),
            Some((_, ClientRequest::PingRequest(_), _))
        ));
        for other in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{}}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            b"not json",
        ] {
            assert!(read(other).is_none(), "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn only_plain_headers_are_taken() {
        let mut headers = HeaderMap::new();
        assert_eq!(single(&headers, "mcp-method"), Some(None));
        headers.insert("mcp-method", HeaderValue::from_static("ping"));
        assert_eq!(single(&headers, "mcp-method"), Some(Some("ping")));
        headers.append("mcp-method", HeaderValue::from_static("ping"));
        assert_eq!(
            single(&headers, "mcp-method"),
            None,
            "repeated: rmcp answers"
        );

        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let accept = |value| {
            let mut headers = headers.clone();
            headers.insert(header::ACCEPT, HeaderValue::from_static(value));
            accepts_both(&headers)
        };
        assert!(accept("application/json, text/event-stream"));
        assert!(!accept("application/json"));
        assert!(!accept("application/json;q=0, text/event-stream"));
    }
}
