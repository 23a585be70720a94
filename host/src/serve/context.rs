//! The request context of a plugin tool call: the host's side of `plugin_api::Context`.
//!
//! Each `tools/call` gets a [`CallContext`], handed to the plugin as a `HostContextBox`. The
//! plugin calls it from its own threads, so it touches no tokio reactor: log messages, progress
//! reports and requests to the client go into one unbounded channel (in the order they are
//! made), and a request's answer comes back through a `futures` oneshot the plugin can poll
//! anywhere. [`run`] serves the call in the request handler's own task: it polls the plugin's
//! future, sends what comes through the channel to the client, forwards requests to the client
//! (in the handler's task, so rmcp routes them on the request's own stream), and stops at once
//! when the request is cancelled. Before the answer goes out, everything the tool sent is
//! flushed, so a client sees a tool's logs and progress before its result.
//!
//! What is sent when:
//! - log messages at or above the session's level (`logging/setLevel`; [`DEFAULT_LOG_LEVEL`]
//!   until the client sets one); under 2026-07-28, which has no sessions, at or above the
//!   request's own `logLevel` (in `_meta`), and none when the request names none;
//! - progress only when the request carries a `progressToken`;
//! - requests to the client only when it declared the capability (`sampling`, `elicitation`,
//!   `roots`) and the request belongs to a session (a stateless request has no channel back to
//!   the client): otherwise the tool gets an error at once, naming the reason. A request the
//!   client leaves unanswered fails after the `--client-request-timeout` (the client is told it
//!   was cancelled), with a message naming the method and the timeout; the tool decides what
//!   then. Cancelling the call ends its requests at once.
//!
//! The call's session, which a plugin reads to keep its clients' state apart, is the
//! `mcp-session-id` header of the request: rmcp answers 404 to a request naming a session that
//! does not exist, so it is the caller's own session (or one whose id it holds, which is the
//! same capability). A stateless request carries none.

// Logging, sampling and roots are deprecated by SEP-2577 (protocol 2026-07-28), and still part
// of 2025-11-25, which clients speak.
#![allow(deprecated)]

use std::{
    pin::pin,
    sync::{
        Arc, OnceLock,
        atomic::{AtomicU8, Ordering},
    },
    time::Duration,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, ROption, RResult, RStr, RString, RVec},
};
use async_ffi::{FfiFuture, FutureExt};
use axum::http::request::Parts;
use futures::{StreamExt, channel::oneshot, stream::FuturesUnordered};
use plugin_abi::{ErrorKind, FfiError, HostContext, HostContextBox, LogLevel};
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, ElicitRequestParams,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    Request, RequestNoParam, ResourceUpdatedNotificationParam, ServerRequest,
};
use rmcp::{
    RoleServer, ServiceError,
    model::LoggingLevel,
    service::{Peer, PeerRequestOptions, RequestContext},
};
use serde_json::Value;
use tokio::sync::mpsc;

use super::subscriptions::Updates;
use crate::{
    isolation::wire::Caller,
    selection::{ActiveSet, Resolution},
};

/// The level below which log messages are dropped until the client sends `logging/setLevel`.
///
/// The specification leaves it to the server; `info` keeps debug chatter off the wire unless a
/// client asks for it.
pub(crate) const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Info;

/// The session id a stdio request belongs to (the one session of the process).
const STDIO_SESSION: &str = "stdio";

/// Why a request outside a session cannot reach the client.
const NO_SESSION: &str = "this request is not part of a session (the server runs --stateless, or \
     the client speaks a protocol without sessions), so the server cannot send it requests";

/// A session's logging level, shared by its handler and every call's context.
#[derive(Debug, Clone)]
pub(crate) struct SessionLevel(Arc<AtomicU8>);

impl Default for SessionLevel {
    fn default() -> Self {
        Self(Arc::new(AtomicU8::new(DEFAULT_LOG_LEVEL.to_u8())))
    }
}

impl SessionLevel {
    /// Sets the level (`logging/setLevel`).
    pub(crate) fn set(&self, level: LoggingLevel) {
        self.0.store(level_number(level), Ordering::Relaxed);
    }

    /// The level that applies to `request`: the session's, or, for a request of 2026-07-28 or
    /// later, the request's own `logLevel`, with nothing sent when it names none.
    fn for_request(&self, request: &RequestContext<RoleServer>) -> Self {
        self.for_version(request.protocol_version(), request.meta.log_level())
    }
}

/// Whether `request` speaks 2026-07-28 or later: no sessions, every request on its own.
pub(crate) fn speaks_2026(request: &RequestContext<RoleServer>) -> bool {
    is_2026(request.protocol_version().as_ref())
}

fn is_2026(version: Option<&ProtocolVersion>) -> bool {
    // ISO dates compare as strings, as rmcp compares them.
    version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

impl SessionLevel {
    /// The level for a request of `version` that asks for `asked`.
    fn for_version(&self, version: Option<ProtocolVersion>, asked: Option<LoggingLevel>) -> Self {
        if !is_2026(version.as_ref()) {
            return self.clone();
        }
        let level = asked.map_or(SILENT, level_number);
        Self(Arc::new(AtomicU8::new(level)))
    }

    /// Whether a message at `level` (0 = debug ... 7 = emergency) is sent.
    fn lets_through(&self, level: u8) -> bool {
        level >= self.0.load(Ordering::Relaxed)
    }
}

/// A level above every message's: nothing is sent.
const SILENT: u8 = 8;

/// rmcp's levels, in the order of `plugin_api::LogLevel`.
const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

/// The number of `level` in `plugin_api::LogLevel`'s order, 0 = debug.
pub(crate) fn level_number(level: LoggingLevel) -> u8 {
    LEVELS
        .iter()
        .position(|l| *l == level)
        .and_then(|n| u8::try_from(n).ok())
        .unwrap_or(0)
}

/// What a tool sends through its context, in order.
enum Event {
    Log(LoggingMessageNotificationParam),
    Progress(ProgressNotificationParam),
    /// A resource changed, told to the parent of an isolated plugin's child.
    ResourceUpdated(String),
    Request {
        request: ServerRequest,
        method: String,
        reply: oneshot::Sender<Result<String, String>>,
    },
}

/// The host's services for one call.
#[derive(Clone)]
pub(crate) struct CallContext {
    events: mpsc::UnboundedSender<Event>,
    level: SessionLevel,
    progress_token: Option<ProgressToken>,
    /// The request's selection, shared with the server's cache: its active set is not copied.
    resolution: Arc<Resolution>,
    capabilities: Arc<Option<ClientCapabilities>>,
    /// The request's session id; `None` outside a session.
    session: Option<Arc<str>>,
    /// The authenticated caller; `None` without authentication.
    identity: Option<Arc<crate::auth::Identity>>,
    /// Why requests cannot reach the client, if they cannot.
    no_requests: Option<&'static str>,
    /// The first capability a request of the tool needed and the client had not declared.
    undeclared: Arc<OnceLock<&'static str>>,
    /// Where "this resource changed" goes: to every subscribed session, not only this one.
    updates: Updates,
    /// Whether the call comes from an isolated plugin's parent, which is told of every
    /// resource change too (it tells its own subscribers).
    tells_parent: bool,
}

impl CallContext {
    /// The context of the call `request` makes, on the session whose level is `level`, with
    /// the request's selection; and the receiving end [`run`] drains.
    fn new(
        request: &RequestContext<RoleServer>,
        level: &SessionLevel,
        resolution: &Arc<Resolution>,
        updates: &Updates,
        caller: Option<Caller>,
    ) -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (events, receiver) = mpsc::unbounded_channel();
        // Over HTTP, the session the `Mcp-Session-Id` header names (none when stateless); over
        // stdio (no HTTP parts), the one session of the process.
        let session: Option<Arc<str>> = match request.extensions.get::<Parts>() {
            Some(parts) => parts
                .headers
                .get("mcp-session-id")
                .and_then(|id| id.to_str().ok())
                .map(Arc::from),
            None => Some(Arc::from(STDIO_SESSION)),
        };
        let mut resolution = Arc::clone(resolution);
        let mut capabilities = request.client_capabilities();
        let mut session = session;
        let tells_parent = caller.is_some();
        let mut identity = request
            .extensions
            .get::<Parts>()
            .and_then(|p| p.extensions.get::<crate::auth::Caller>())
            .and_then(|c| c.0.clone());
        if let Some(caller) = caller {
            identity = caller.identity.map(|relayed| {
                Arc::new(crate::auth::Identity {
                    name: relayed.name,
                    scopes: relayed.scopes,
                    proof: crate::auth::Proof::Relayed,
                    bound: crate::auth::Bound::default(),
                })
            });
            session = caller.session.map(Arc::from);
            capabilities = caller.capabilities;
            resolution = Arc::new(Resolution {
                active: ActiveSet::from_names(caller.active),
                ..(*resolution).clone()
            });
        }
        let context = Self {
            identity,
            events,
            level: level.for_request(request),
            progress_token: request.meta.get_progress_token(),
            resolution,
            capabilities: Arc::new(capabilities),
            // A task's requests wait in its `inputRequests`, with or without a session; an
            // isolated plugin's requests go to its parent, which knows whether it runs a task.
            no_requests: (session.is_none() && task_input(request).is_none() && !tells_parent)
                .then_some(NO_SESSION),
            undeclared: Arc::default(),
            session,
            updates: updates.clone(),
            tells_parent,
        };
        (context, receiver)
    }

    /// The request for `method` with these params, or why it cannot be sent. A capability the
    /// client did not declare is recorded, so the call can answer
    /// `MissingRequiredClientCapability` (2026-07-28).
    fn client_request(&self, method: &str, params: &str) -> Result<ServerRequest, String> {
        let capabilities = self.capabilities.as_ref().as_ref();
        let (capability, declared) = match method {
            "sampling/createMessage" => (
                "sampling",
                capabilities.is_some_and(|c| c.sampling.is_some()),
            ),
            "elicitation/create" => (
                "elicitation",
                capabilities.is_some_and(|c| c.elicitation.is_some()),
            ),
            "roots/list" => ("roots", capabilities.is_some_and(|c| c.roots.is_some())),
            other => {
                return Err(format!(
                    "the server does not send `{other}` to clients; a tool may send \
                     sampling/createMessage, elicitation/create and roots/list"
                ));
            }
        };
        if !declared {
            let _ = self.undeclared.set(capability);
        }
        if let Some(reason) = self.no_requests {
            return Err(format!("cannot send {method} to the client: {reason}"));
        }
        if !declared {
            return Err(format!(
                "cannot send {method}: the client did not declare the `{capability}` capability"
            ));
        }
        let invalid = |e: serde_json::Error| format!("invalid params for {method}: {e}");
        let request = match method {
            "sampling/createMessage" => ServerRequest::CreateMessageRequest(Request::new(
                serde_json::from_str::<CreateMessageRequestParams>(params).map_err(invalid)?,
            )),
            "elicitation/create" => ServerRequest::ElicitRequest(Request::new(
                serde_json::from_str::<ElicitRequestParams>(params).map_err(invalid)?,
            )),
            _ => ServerRequest::ListRootsRequest(RequestNoParam {
                method: Default::default(),
                extensions: Default::default(),
            }),
        };
        Ok(request)
    }
}

impl HostContext for CallContext {
    fn log(&self, level: u8, logger: ROption<RString>, data_json: RString) {
        if !self.level.lets_through(level) {
            return;
        }
        let data =
            serde_json::from_str(&data_json).unwrap_or_else(|_| Value::from(data_json.as_str()));
        let mut message =
            LoggingMessageNotificationParam::new(LEVELS[usize::from(level.min(7))], data);
        if let ROption::RSome(logger) = logger {
            message = message.with_logger(logger.into_string());
        }
        let _ = self.events.send(Event::Log(message));
    }

    fn progress(&self, progress: f64, total: ROption<f64>, message: ROption<RString>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut report = ProgressNotificationParam::new(token.clone(), progress);
        report.total = total.into_option();
        report.message = message.into_option().map(RString::into_string);
        let _ = self.events.send(Event::Progress(report));
    }

    fn request(
        &self,
        method: RStr<'_>,
        params_json: RString,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        let method = method.as_str().to_owned();
        let (reply, answer) = oneshot::channel();
        let sent = self
            .client_request(&method, &params_json)
            .and_then(|request| {
                self.events
                    .send(Event::Request {
                        request,
                        method: method.clone(),
                        reply,
                    })
                    .map_err(|_| format!("cannot send {method}: the tool call has ended"))
            });
        async move {
            let outcome = match sent {
                Err(message) => Err(message),
                Ok(()) => answer.await.unwrap_or_else(|_| {
                    Err(format!("{method} was abandoned: the tool call has ended"))
                }),
            };
            match outcome {
                Ok(json) => RResult::ROk(RString::from(json)),
                Err(message) => RResult::RErr(FfiError::new(ErrorKind::Tool, message)),
            }
        }
        .into_ffi()
    }

    fn active_toolsets(&self) -> RVec<RString> {
        self.resolution
            .active
            .iter()
            .map(|t| RString::from(t.as_str()))
            .collect()
    }

    fn client_capabilities(&self) -> RString {
        self.capabilities
            .as_ref()
            .as_ref()
            .and_then(|c| serde_json::to_string(c).ok())
            .unwrap_or_else(|| "{}".to_owned())
            .into()
    }

    fn resource_updated(&self, uri: RString) {
        if self.tells_parent {
            let _ = self.events.send(Event::ResourceUpdated(uri.to_string()));
        }
        self.updates.send(uri.into_string());
    }

    fn session(&self) -> ROption<RString> {
        self.session.as_deref().map(RString::from).into()
    }

    fn caller_name(&self) -> ROption<RString> {
        self.identity
            .as_ref()
            .map(|c| RString::from(c.name.as_str()))
            .into()
    }

    fn caller_scopes(&self) -> RVec<RString> {
        self.identity
            .iter()
            .flat_map(|c| c.scopes.iter().map(|s| RString::from(s.as_str())))
            .collect()
    }
}

/// A finished call.
#[derive(Debug)]
pub(crate) struct Finished<T> {
    /// What the plugin answered.
    pub(crate) outcome: T,
    /// The first client capability the tool asked for (sampling, elicitation, roots) that the
    /// client had not declared.
    pub(crate) undeclared: Option<&'static str>,
}

/// Runs one tool call for `request`: `call` starts it with its context; the future resolves to
/// its outcome, or to `None` as soon as the request is cancelled (the plugin's future is then
/// dropped, which cancels the tool). Requests the tool sends the client wait at most
/// `client_timeout` for their answers.
pub(crate) async fn run<F: Future>(
    request: &RequestContext<RoleServer>,
    level: &SessionLevel,
    resolution: &Arc<Resolution>,
    updates: &Updates,
    client_timeout: Duration,
    caller: Option<Caller>,
    call: impl FnOnce(HostContextBox) -> F,
) -> Option<Finished<F::Output>> {
    let (context, mut events) = CallContext::new(request, level, resolution, updates, caller);
    let undeclared = Arc::clone(&context.undeclared);
    let peer = &request.peer;
    let mut plugin = pin!(call(HostContextBox::from_ptr(
        RArc::new(context),
        TD_Opaque
    )));
    let input = task_input(request);
    let mut asked = FuturesUnordered::new();
    let outcome = loop {
        tokio::select! {
            biased;
            () = request.ct.cancelled() => return None,
            outcome = &mut plugin => break outcome,
            Some(event) = events.recv() => match event {
                Event::Request { request, method, reply } => match input {
                    Some(task) => asked.push(task.ask(request, method, reply)),
                    None => asked.push(Box::pin(ask(peer, request, method, client_timeout, reply))),
                },
                other => notify(peer, other).await,
            },
            Some(()) = asked.next(), if !asked.is_empty() => {}
        }
    };
    // What the tool sent before it finished goes out before its answer; later sends fail.
    events.close();
    while let Ok(event) = events.try_recv() {
        if !matches!(event, Event::Request { .. }) {
            notify(peer, event).await;
        }
    }
    Some(Finished {
        outcome,
        undeclared: undeclared.get().copied(),
    })
}

/// Where the requests of a call run as a task go ([`super::tasks`]), if it is one.
fn task_input(request: &RequestContext<RoleServer>) -> Option<&super::tasks::Input> {
    request.extensions.get::<super::tasks::Input>()
}

/// Sends a log message or a progress report; a client that is gone is not an error here.
async fn notify(peer: &Peer<RoleServer>, event: Event) {
    let sent = match event {
        Event::Log(message) => peer.notify_logging_message(message).await,
        Event::Progress(report) => peer.notify_progress(report).await,
        Event::ResourceUpdated(uri) => {
            peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
        }
        Event::Request { .. } => Ok(()),
    };
    if let Err(error) = sent {
        tracing::debug!("a notification to the client was not sent: {error}");
    }
}

/// Sends `request` to the client and replies with its result as JSON, or why it failed; gives
/// up (and tells the client it was cancelled) after `timeout`.
async fn ask(
    peer: &Peer<RoleServer>,
    request: ServerRequest,
    method: String,
    timeout: Duration,
    reply: oneshot::Sender<Result<String, String>>,
) {
    let answered = match peer
        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
        .await
    {
        Ok(handle) => handle.await_response().await,
        Err(error) => Err(error),
    };
    let answer = match answered {
        Ok(result) => serde_json::to_string(&result)
            .map_err(|e| format!("the client's answer to {method} could not be read: {e}")),
        Err(ServiceError::McpError(error)) => Err(format!(
            "the client answered {method} with an error: {} (code {})",
            error.message, error.code.0
        )),
        Err(ServiceError::Timeout { timeout }) => Err(unanswered(&method, timeout)),
        Err(error) => Err(format!("{method} failed: {error}")),
    };
    let _ = reply.send(answer);
}

/// What a tool is told of a request the client did not answer in time.
fn unanswered(method: &str, timeout: Duration) -> String {
    format!(
        "the client did not answer {method} within {} s (--client-request-timeout); the request \
         was cancelled",
        timeout.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    //! The context as a plugin sees it: every call is polled with `futures`' executor, no tokio
    //! runtime anywhere, as a plugin's threads would.

    use futures::executor::block_on;
    use rmcp::model::NumberOrString;
    use serde_json::json;

    use super::*;
    use crate::selection::ActiveSet;

    /// A context in a session (or not), with these client capabilities and, if `token`, a
    /// progress token; and the receiving end of its events.
    fn context(
        in_session: bool,
        capabilities: Value,
        token: bool,
    ) -> (HostContextBox, mpsc::UnboundedReceiver<Event>) {
        let (context, receiver) = call_context(in_session, capabilities, token);
        (
            HostContextBox::from_ptr(RArc::new(context), TD_Opaque),
            receiver,
        )
    }

    fn call_context(
        in_session: bool,
        capabilities: Value,
        token: bool,
    ) -> (CallContext, mpsc::UnboundedReceiver<Event>) {
        let (events, receiver) = mpsc::unbounded_channel();
        let context = CallContext {
            events,
            level: SessionLevel::default(),
            progress_token: token.then(|| ProgressToken(NumberOrString::String("t".into()))),
            resolution: Arc::new(Resolution {
                active: ActiveSet::from_names(["a", "b"]),
                ..Resolution::default()
            }),
            capabilities: Arc::new(serde_json::from_value(capabilities).ok()),
            session: in_session.then(|| Arc::from("session-1")),
            identity: None,
            no_requests: (!in_session).then_some(NO_SESSION),
            undeclared: Arc::default(),
            updates: Updates::channel().0,
            tells_parent: false,
        };
        (context, receiver)
    }

    #[test]
    fn the_first_undeclared_capability_is_recorded_even_without_a_session() {
        let (context, _events) = call_context(false, json!({"elicitation": {}}), false);
        assert!(context.client_request("elicitation/create", "{}").is_err());
        assert_eq!(context.undeclared.get(), None, "declared: only no session");
        assert!(context.client_request("roots/list", "{}").is_err());
        assert!(
            context
                .client_request("sampling/createMessage", "{}")
                .is_err()
        );
        assert_eq!(context.undeclared.get(), Some(&"roots"));
    }

    fn request_error(context: &HostContextBox, method: &str, params: Value) -> String {
        match block_on(context.request(method.into(), params.to_string().into())) {
            RResult::RErr(error) => error.message.into_string(),
            RResult::ROk(answer) => panic!("{method} was answered: {answer}"),
        }
    }

    fn sampling_params() -> Value {
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5})
    }

    #[test]
    fn levels_map_in_order() {
        for (n, level) in LEVELS.into_iter().enumerate() {
            assert_eq!(usize::from(level_number(level)), n);
            assert_eq!(
                serde_json::to_value(level).unwrap(),
                LogLevel::from_u8(level_number(level)).as_str()
            );
        }
    }

    #[test]
    fn the_session_level_filters_below_it() {
        let level = SessionLevel::default();
        assert!(!level.lets_through(LogLevel::Debug.to_u8()));
        assert!(level.lets_through(LogLevel::Info.to_u8()));
        level.set(LoggingLevel::Warning);
        assert!(!level.lets_through(LogLevel::Notice.to_u8()));
        assert!(level.lets_through(LogLevel::Warning.to_u8()));
        assert!(level.lets_through(LogLevel::Emergency.to_u8()));
    }

    #[test]
    fn a_2026_request_logs_at_its_own_level_and_only_when_it_asks() {
        let session = SessionLevel::default();
        session.set(LoggingLevel::Debug);
        let legacy = session.for_version(Some(ProtocolVersion::V_2025_11_25), None);
        assert!(legacy.lets_through(LogLevel::Debug.to_u8()));
        let current = Some(ProtocolVersion::V_2026_07_28);
        let silent = session.for_version(current.clone(), None);
        assert!(!silent.lets_through(LogLevel::Emergency.to_u8()));
        let asked = session.for_version(current, Some(LoggingLevel::Warning));
        assert!(!asked.lets_through(LogLevel::Notice.to_u8()));
        assert!(asked.lets_through(LogLevel::Warning.to_u8()));
    }

    #[test]
    fn a_request_the_client_cannot_take_fails_at_once_naming_why() {
        let (plain, _events) = context(true, json!({}), false);
        assert_eq!(
            request_error(&plain, "sampling/createMessage", sampling_params()),
            "cannot send sampling/createMessage: the client did not declare the `sampling` capability"
        );
        assert_eq!(
            request_error(&plain, "elicitation/create", json!({})),
            "cannot send elicitation/create: the client did not declare the `elicitation` capability"
        );
        assert_eq!(
            request_error(&plain, "roots/list", json!({})),
            "cannot send roots/list: the client did not declare the `roots` capability"
        );
        assert!(
            request_error(&plain, "ping", json!({}))
                .starts_with("the server does not send `ping` to clients")
        );
        let (stateless, _events) = context(false, json!({"sampling": {}}), false);
        assert_eq!(
            request_error(&stateless, "sampling/createMessage", sampling_params()),
            format!("cannot send sampling/createMessage to the client: {NO_SESSION}")
        );
        let (capable, _events) = context(true, json!({"sampling": {}}), false);
        assert!(
            request_error(&capable, "sampling/createMessage", json!({"maxTokens": 5}))
                .starts_with("invalid params for sampling/createMessage: missing field `messages`")
        );
    }

    #[test]
    fn a_request_goes_through_the_channel_and_its_answer_comes_back() {
        let (capable, mut events) = context(true, json!({"elicitation": {}}), false);
        let asked = capable.request(
            "elicitation/create".into(),
            json!({"message": "name?", "requestedSchema": {"type": "object", "properties": {}}})
                .to_string()
                .into(),
        );
        let Ok(Event::Request { method, reply, .. }) = events.try_recv() else {
            panic!("no request was queued")
        };
        assert_eq!(method, "elicitation/create");
        reply
            .send(Ok(r#"{"action":"decline"}"#.to_owned()))
            .unwrap();
        assert_eq!(block_on(asked).unwrap().as_str(), r#"{"action":"decline"}"#);
        // A request left unanswered when the call ends fails, it does not hang.
        let abandoned = capable.request(
            "elicitation/create".into(),
            "{\"message\":\"x\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}"
                .into(),
        );
        drop(events);
        let RResult::RErr(error) = block_on(abandoned) else {
            panic!("answered")
        };
        assert!(
            error.message.contains("the tool call has ended"),
            "{}",
            error.message
        );
    }

    #[test]
    fn logs_below_the_level_and_progress_without_a_token_are_dropped() {
        let (without_token, mut events) = context(true, json!({}), false);
        without_token.log(0, ROption::RNone, "\"debug\"".into());
        without_token.progress(1.0, ROption::RNone, ROption::RNone);
        assert!(events.try_recv().is_err(), "nothing is sent");
        without_token.log(4, ROption::RSome("p".into()), r#"{"n":1}"#.into());
        let Ok(Event::Log(message)) = events.try_recv() else {
            panic!("an error-level message is sent")
        };
        assert_eq!(
            serde_json::to_value(&message).unwrap(),
            json!({"level": "error", "logger": "p", "data": {"n": 1}})
        );

        let (with_token, mut events) = context(true, json!({}), true);
        with_token.progress(2.0, ROption::RSome(4.0), ROption::RSome("half".into()));
        let Ok(Event::Progress(report)) = events.try_recv() else {
            panic!("progress is sent")
        };
        assert_eq!(
            serde_json::to_value(&report).unwrap(),
            json!({"progressToken": "t", "progress": 2.0, "total": 4.0, "message": "half"})
        );
    }

    #[test]
    fn the_active_toolsets_and_capabilities_are_the_requests() {
        let (context, _events) = context(true, json!({"sampling": {}}), false);
        assert_eq!(
            context
                .active_toolsets()
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(
            serde_json::from_str::<Value>(&context.client_capabilities()).unwrap(),
            json!({"sampling": {}})
        );
    }

    #[test]
    fn the_session_is_the_requests_and_none_outside_one() {
        let (in_session, _events) = context(true, json!({}), false);
        assert_eq!(
            in_session.session().into_option().map(RString::into_string),
            Some("session-1".to_owned())
        );
        let (stateless, _events) = context(false, json!({}), false);
        assert!(stateless.session().is_none());
    }

    #[test]
    fn a_resource_update_goes_to_the_server_even_after_the_call_ended() {
        let (updates, mut server) = Updates::channel();
        let (events, call) = mpsc::unbounded_channel();
        let context = CallContext {
            events,
            level: SessionLevel::default(),
            progress_token: None,
            resolution: Arc::new(Resolution {
                active: ActiveSet::default(),
                ..Resolution::default()
            }),
            capabilities: Arc::new(None),
            session: None,
            identity: None,
            no_requests: None,
            undeclared: Arc::default(),
            updates,
            tells_parent: false,
        };
        let host = HostContextBox::from_ptr(RArc::new(context), TD_Opaque);
        drop(call);
        // From a plugin's thread, no runtime anywhere.
        std::thread::spawn(move || host.resource_updated("library://note".into()))
            .join()
            .unwrap();
        assert_eq!(server.try_recv().unwrap(), "library://note");
    }
}
