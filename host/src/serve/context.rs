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
        atomic::{AtomicU8, AtomicUsize, Ordering},
    },
    time::Duration,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, ROption, RResult, RStr, RString, RVec},
};
use async_ffi::{FfiFuture, FutureExt};
use axum::http::request::Parts;
use futures::{FutureExt as _, StreamExt, channel::oneshot, stream::FuturesUnordered};
use plugin_abi::{ErrorKind, FfiError, HostContext, HostContextBox, LogLevel};
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CustomRequest, ElicitRequestParams,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    Request, RequestNoParam, ServerRequest,
};
use rmcp::{
    RoleServer, ServiceError,
    model::LoggingLevel,
    service::{Peer, PeerRequestOptions, RequestContext},
};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{
    availability,
    rounds::{self, Missing, Round},
    subscriptions::Updates,
};
use crate::{
    call::level::{LEVELS, level_number},
    call::wire::{ASK_METHOD, AVAILABILITY_METHOD, Caller, TASK_METHOD},
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

/// The session `request` belongs to: over HTTP, the one its `Mcp-Session-Id` header names (none
/// when stateless or under 2026-07-28); over stdio (no HTTP parts), the one of the process.
pub(crate) fn session_of(request: &RequestContext<RoleServer>) -> Option<Arc<str>> {
    match request.extensions.get::<Parts>() {
        Some(parts) => parts
            .headers
            .get("mcp-session-id")
            .and_then(|id| id.to_str().ok())
            .map(Arc::from),
        None => Some(Arc::from(STDIO_SESSION)),
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

/// What a tool sends through its context, in order.
enum Event {
    Log(LoggingMessageNotificationParam),
    Progress(ProgressNotificationParam),
    /// Requests for the client, each under its key; the reply is a JSON object of their
    /// results under the same keys, or why they failed.
    Ask {
        requests: Vec<Keyed>,
        reply: oneshot::Sender<Result<String, String>>,
    },
    /// Under 2026-07-28: inputs the call has no answer to; the call ends with an
    /// input-required result.
    InputRequired(Missing),
    /// The tool of an `input_first` task call gathered its input: the call ends, to run again
    /// as a task.
    BecomesTask,
    /// An isolated plugin's child asks its parent to make the call a task.
    AskParentForTask(oneshot::Sender<()>),
    /// An isolated plugin's child tells its parent that its plugin turned a contribution on or
    /// off.
    SetAvailableOnParent {
        kind: String,
        name: String,
        available: bool,
    },
}

/// A request for the client under its key, and its method (for messages).
struct Keyed {
    key: String,
    method: String,
    request: ServerRequest,
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
    /// Whether the call comes from an isolated plugin's parent, which is told what the plugin
    /// turns on or off (it serves the plugin's tools and prompts), and asked for every input
    /// (it checks the client's capabilities, and asks the client or ends the call for input).
    tells_parent: bool,
    /// The parent's connection and the runtime to reach it from, when `tells_parent`: what the
    /// plugin tells it after the call has answered (and its events channel closed) goes there.
    parent: Option<(Peer<RoleServer>, tokio::runtime::Handle)>,
    /// Under 2026-07-28, the answers this round of the call can use: requests are answered
    /// from them, or end the call with an input-required result.
    round: Option<Arc<Round>>,
    /// How many requests the call has made, which numbers their keys (`elicitation-1`, ...).
    requests_made: Arc<AtomicUsize>,
    /// Whether the call may become a task (`Context::run_as_task`): the plain phase of an
    /// `input_first` task tool's call.
    becomes_task: bool,
    /// Whether the call runs as a task: its requests wait in the task's `inputRequests`.
    in_task: bool,
    /// Where the calling plugin turns its tools and prompts on and off, and its name.
    availability: Option<(availability::Changes, Arc<str>)>,
}

impl CallContext {
    /// The context of the call `request` makes, on the session whose level is `level`, with
    /// the request's selection; and the receiving end [`Call::run`] drains.
    fn new(call: Call<'_>) -> (Self, mpsc::UnboundedReceiver<Event>) {
        let Call {
            request,
            level,
            resolution,
            updates,
            client,
            caller,
            availability,
            plugin,
        } = call;
        let availability = availability.zip(plugin);
        let round = client.round.clone();
        let (events, receiver) = mpsc::unbounded_channel();
        let mut session = session_of(request);
        let in_task = task_input(request).is_some();
        let mut resolution = Arc::clone(resolution);
        let mut capabilities = request.client_capabilities();
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
            // Under 2026-07-28 requests are answered by rounds; a task's wait in its
            // `inputRequests`, with or without a session; an isolated plugin's go to its parent,
            // which knows whether it runs a task.
            no_requests: (session.is_none() && round.is_none() && !in_task && !tells_parent)
                .then_some(NO_SESSION),
            undeclared: Arc::default(),
            session,
            updates: updates.clone(),
            tells_parent,
            parent: tells_parent
                .then(|| tokio::runtime::Handle::try_current().ok())
                .flatten()
                .map(|runtime| (request.peer.clone(), runtime)),
            round,
            requests_made: Arc::default(),
            becomes_task: client.becomes_task,
            in_task,
            availability,
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
        if !declared && !self.tells_parent {
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

impl CallContext {
    /// The key of the call's next request for `method`: its method's short name and its
    /// place among the call's requests (`elicitation-1`, `sampling-2`, `roots-3`).
    fn next_key(&self, method: &str) -> String {
        let n = self.requests_made.fetch_add(1, Ordering::Relaxed) + 1;
        let short = match method {
            "sampling/createMessage" => "sampling",
            "elicitation/create" => "elicitation",
            "roots/list" => "roots",
            other => other,
        };
        format!("{short}-{n}")
    }

    /// Sends `requests` (key, method, params JSON) to the client at once and resolves to their
    /// results under their keys. Under 2026-07-28 they are answered from the round, or the call
    /// ends with an input-required result for those it has no answer to (and this never
    /// resolves: the call's future is dropped).
    fn send(
        &self,
        requests: Vec<(String, String, String)>,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        let keyed: Result<Vec<Keyed>, String> = requests
            .into_iter()
            .map(|(key, method, params)| {
                let request = self.client_request(&method, &params)?;
                Ok(Keyed {
                    key,
                    method,
                    request,
                })
            })
            .collect();
        let keyed = match keyed {
            Ok(keyed) => keyed,
            Err(message) => return failed(message),
        };
        if let Some(round) = &self.round {
            let asked: Vec<(String, &str)> = keyed
                .iter()
                .map(|k| (k.key.clone(), k.method.as_str()))
                .collect();
            if let Some(answers) = round.answers(&asked) {
                let answers = Value::Object(answers).to_string();
                return async move { RResult::ROk(answers.into()) }.into_ffi();
            }
        }
        if let Some(round) = self.round.as_ref().filter(|_| !self.in_task) {
            let missing = keyed
                .into_iter()
                .filter(|k| {
                    round
                        .answers(&[(k.key.clone(), k.method.as_str())])
                        .is_none()
                })
                .filter_map(|k| Some((k.key, rounds::input_request(k.request)?)))
                .collect();
            if self.events.send(Event::InputRequired(missing)).is_err() {
                return failed("cannot ask for input: the tool call has ended".to_owned());
            }
            // The call ends with the input-required result; this fails once it has.
            let ended = self.ended();
            return async move {
                ended.await;
                RResult::RErr(FfiError::new(
                    ErrorKind::Cancelled,
                    "the call ended to ask the client for input",
                ))
            }
            .into_ffi();
        }
        let (reply, answer) = oneshot::channel();
        let methods = keyed
            .iter()
            .map(|k| k.method.clone())
            .collect::<Vec<_>>()
            .join(", ");
        let sent = self
            .events
            .send(Event::Ask {
                requests: keyed,
                reply,
            })
            .map_err(|_| format!("cannot send {methods}: the tool call has ended"));
        async move {
            let outcome = match sent {
                Err(message) => Err(message),
                Ok(()) => answer.await.unwrap_or_else(|_| {
                    Err(format!("{methods} was abandoned: the tool call has ended"))
                }),
            };
            match outcome {
                Ok(json) => RResult::ROk(RString::from(json)),
                Err(message) => RResult::RErr(FfiError::new(ErrorKind::Tool, message)),
            }
        }
        .into_ffi()
    }
}

impl CallContext {
    /// Resolves once the call has ended (its events are no longer read).
    fn ended(&self) -> impl Future<Output = ()> + Send + 'static {
        let events = self.events.clone();
        async move { events.closed().await }
    }
}

/// A future that fails at once with `message`.
fn failed(message: String) -> FfiFuture<RResult<RString, FfiError>> {
    async move { RResult::RErr(FfiError::new(ErrorKind::Tool, message)) }.into_ffi()
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
        let method = method.as_str();
        let key = self.next_key(method);
        let answers = self.send(vec![(key.clone(), method.to_owned(), params_json.into())]);
        async move {
            match answers.await {
                RResult::ROk(answers) => {
                    let mut answers: serde_json::Map<String, Value> =
                        serde_json::from_str(&answers).unwrap_or_default();
                    let answer = answers.remove(&key).unwrap_or_default();
                    RResult::ROk(answer.to_string().into())
                }
                RResult::RErr(error) => RResult::RErr(error),
            }
        }
        .into_ffi()
    }

    fn set_available(&self, kind: RStr<'_>, name: RStr<'_>, available: bool) {
        if self.tells_parent {
            // The parent serves the plugin's tools and prompts: it turns them on and off. In
            // order with the call's other events while it runs; straight to the parent after.
            let event = Event::SetAvailableOnParent {
                kind: kind.as_str().to_owned(),
                name: name.as_str().to_owned(),
                available,
            };
            if let Err(mpsc::error::SendError(event)) = self.events.send(event)
                && let Some((peer, runtime)) = self.parent.clone()
            {
                runtime.spawn(async move { notify(&peer, event).await });
            }
            return;
        }
        let Some(kind) = availability::Kind::from_name(kind.as_str()) else {
            tracing::warn!(
                "a plugin cannot turn a `{kind}` on or off: only a tool, a prompt, a resource or \
                 a resource_template"
            );
            return;
        };
        if let Some((changes, plugin)) = &self.availability {
            changes.send(availability::Change {
                plugin: plugin.to_string(),
                kind,
                name: name.as_str().to_owned(),
                available,
            });
        }
    }

    fn run_as_task(&self) -> FfiFuture<()> {
        if self.becomes_task {
            // The call ends, to run again as a task; this waits until it has.
            if self.events.send(Event::BecomesTask).is_ok() {
                return self.ended().into_ffi();
            }
        } else if self.tells_parent {
            // The parent knows whether the call it made may become a task.
            let (told, done) = oneshot::channel();
            if self.events.send(Event::AskParentForTask(told)).is_ok() {
                return async move {
                    let _ = done.await;
                }
                .into_ffi();
            }
        }
        async {}.into_ffi()
    }

    fn ask(&self, requests_json: RString) -> FfiFuture<RResult<RString, FfiError>> {
        match plugin_abi::keyed_requests(&requests_json) {
            Ok(requests) => self.send(requests),
            Err(message) => failed(message),
        }
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

    /// Tells this server's subscribers that `uri` changed, from any thread, during the call or
    /// after it. An isolated plugin's parent is one of them when its own sessions subscribed
    /// ([`crate::providers::bridged::upstream::Upstream::subscribe`]).
    fn resource_updated(&self, uri: RString) {
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

/// Why a call ended before the plugin answered.
#[derive(Debug)]
pub(crate) enum Interrupted {
    /// Under 2026-07-28, the tool asked for these inputs, which the request did not carry.
    NeedsInput(Missing),
    /// The tool of an `input_first` task call gathered its input: it runs again as a task.
    BecomesTask,
}

/// A finished call.
#[derive(Debug)]
pub(crate) struct Finished<T> {
    /// What the plugin answered; under 2026-07-28, or the inputs it needs first.
    pub(crate) outcome: Result<T, Interrupted>,
    /// The first client capability the tool asked for (sampling, elicitation, roots) that the
    /// client had not declared.
    pub(crate) undeclared: Option<&'static str>,
}

/// What one call of a plugin (a tool call, a prompt got, a resource read) is served with.
pub(crate) struct Call<'a> {
    /// The request it serves.
    pub(crate) request: &'a RequestContext<RoleServer>,
    /// The session's log level.
    pub(crate) level: &'a SessionLevel,
    /// The request's selection.
    pub(crate) resolution: &'a Arc<Resolution>,
    /// Where resource changes go.
    pub(crate) updates: &'a Updates,
    /// How its requests to the client are served.
    pub(crate) client: ClientRequests,
    /// The request an isolated plugin's parent made, when the call comes from one.
    pub(crate) caller: Option<Caller>,
    /// Where plugins turn their tools and prompts on and off.
    pub(crate) availability: Option<availability::Changes>,
    /// The plugin called, once known.
    pub(crate) plugin: Option<Arc<str>>,
}

impl Call<'_> {
    /// Runs the call: `call` starts it with its context; the future resolves to its outcome,
    /// or to `None` as soon as the request is cancelled (the plugin's future is then dropped,
    /// which cancels it). Requests to the client wait at most the client timeout.
    pub(crate) async fn run<F: Future>(
        self,
        call: impl FnOnce(HostContextBox) -> F,
    ) -> Option<Finished<F::Output>> {
        let (request, timeout) = (self.request, self.client.timeout);
        let (round, gathered) = (self.client.round.clone(), self.client.gathered.clone());
        let (context, mut events) = CallContext::new(self);
        let undeclared = Arc::clone(&context.undeclared);
        let route = match task_input(request) {
            Some(task) => Route::Task(task, round.as_deref()),
            None if context.tells_parent => Route::Parent,
            None => Route::Client,
        };
        let peer = &request.peer;
        let mut plugin = pin!(call(HostContextBox::from_ptr(
            RArc::new(context),
            TD_Opaque
        )));
        let mut asked = FuturesUnordered::new();
        let outcome = loop {
            tokio::select! {
                biased;
                () = request.ct.cancelled() => return None,
                outcome = &mut plugin => break Ok(outcome),
                Some(event) = events.recv() => match event {
                    Event::Ask { requests, reply } => {
                        let gathered = gathered.as_deref();
                        let asked_all = ask_all(peer, requests, timeout, reply, route, gathered);
                        asked.push(asked_all.boxed());
                    }
                    Event::InputRequired(missing) => break Err(Interrupted::NeedsInput(missing)),
                    Event::BecomesTask => break Err(Interrupted::BecomesTask),
                    Event::AskParentForTask(told) => {
                        asked.push(ask_parent_for_task(peer, timeout, told).boxed());
                    }
                    other => notify(peer, other).await,
                },
                Some(()) = asked.next(), if !asked.is_empty() => {}
            }
        };
        // What the tool sent before it finished goes out before its answer; later sends fail.
        events.close();
        while let Ok(event) = events.try_recv() {
            if matches!(
                event,
                Event::Log(_) | Event::Progress(_) | Event::SetAvailableOnParent { .. }
            ) {
                notify(peer, event).await;
            }
        }
        Some(Finished {
            outcome,
            undeclared: undeclared.get().copied(),
        })
    }
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
        Event::SetAvailableOnParent {
            kind,
            name,
            available,
        } => {
            let params = serde_json::json!({"kind": kind, "name": name, "available": available});
            let request = CustomRequest::new(AVAILABILITY_METHOD, Some(params));
            peer.send_request(ServerRequest::CustomRequest(request))
                .await
                .map(drop)
        }
        Event::Ask { .. }
        | Event::InputRequired(_)
        | Event::BecomesTask
        | Event::AskParentForTask(_) => Ok(()),
    };
    if let Err(error) = sent {
        tracing::debug!("a notification to the client was not sent: {error}");
    }
}

/// How a call's requests to the client are served.
pub(crate) struct ClientRequests {
    /// How long the client has to answer one (over a session).
    pub(crate) timeout: Duration,
    /// Under 2026-07-28, the answers of this round of the call.
    pub(crate) round: Option<Arc<Round>>,
    /// Whether the call may become a task (the plain phase of an `input_first` task call).
    pub(crate) becomes_task: bool,
    /// Where the answers a client gives on its session are kept, for the task the call may
    /// become.
    pub(crate) gathered: Option<Arc<Round>>,
}

/// Sends `requests` to the client at once (to the parent in one request, when it
/// `tells_parent`) and replies with their results under their keys as a JSON object, or why the
/// first that failed did.
async fn ask_all(
    peer: &Peer<RoleServer>,
    requests: Vec<Keyed>,
    timeout: Duration,
    reply: oneshot::Sender<Result<String, String>>,
    route: Route<'_>,
    gathered: Option<&Round>,
) {
    match route {
        Route::Client => {}
        Route::Parent => return ask_parent(peer, requests, timeout, reply).await,
        Route::Task(task, round) => return ask_task(task, round, requests, reply).await,
    }
    let answers = futures::future::join_all(requests.into_iter().map(|keyed| async move {
        (
            keyed.key,
            ask(peer, keyed.request, &keyed.method, timeout).await,
        )
    }))
    .await;
    let answers: Result<serde_json::Map<String, Value>, String> = answers
        .into_iter()
        .map(|(key, answer)| answer.map(|answer| (key, answer)))
        .collect();
    if let (Ok(answers), Some(gathered)) = (&answers, gathered) {
        gathered.record(answers);
    }
    let _ = reply.send(answers.map(|answers| Value::Object(answers).to_string()));
}

/// Where a call's requests for the client go.
#[derive(Clone, Copy)]
enum Route<'a> {
    /// To the client, over the request's session.
    Client,
    /// To an isolated plugin's parent, which asks its own client.
    Parent,
    /// Into the `inputRequests` of the task the call runs as, answered by `tasks/update`,
    /// unless the round the task started from has the answer.
    Task(&'a super::tasks::Input, Option<&'a Round>),
}

/// Parks the task on `requests` until the client answers each with `tasks/update`, and replies
/// with the answers under their keys, or why the first that failed did.
async fn ask_task(
    task: &super::tasks::Input,
    round: Option<&Round>,
    requests: Vec<Keyed>,
    reply: oneshot::Sender<Result<String, String>>,
) {
    let answers = futures::future::join_all(requests.into_iter().map(|keyed| async move {
        let gathered = round.and_then(|r| r.answers(&[(keyed.key.clone(), keyed.method.as_str())]));
        if let Some(mut gathered) = gathered {
            return Ok((
                keyed.key.clone(),
                gathered.remove(&keyed.key).unwrap_or_default(),
            ));
        }
        let Some(request) = rounds::input_request(keyed.request) else {
            return Err(format!("{} cannot be asked within a task", keyed.method));
        };
        let answer = task.ask(keyed.key.clone(), request, &keyed.method).await?;
        Ok((keyed.key, answer))
    }))
    .await;
    let answers: Result<serde_json::Map<String, Value>, String> = answers.into_iter().collect();
    let _ = reply.send(answers.map(|answers| Value::Object(answers).to_string()));
}

/// Asks an isolated plugin's parent whether the call becomes a task ([`TASK_METHOD`]): when
/// it does, the parent ends the call it made (and this one with it); otherwise it answers.
async fn ask_parent_for_task(
    peer: &Peer<RoleServer>,
    timeout: Duration,
    told: oneshot::Sender<()>,
) {
    let request = CustomRequest::new(TASK_METHOD, None);
    let _ = ask(
        peer,
        ServerRequest::CustomRequest(request),
        TASK_METHOD,
        timeout,
    )
    .await;
    let _ = told.send(());
}

/// Sends `requests` to an isolated plugin's parent in one request ([`ASK_METHOD`]), which asks
/// its own client for them, and replies with their results under their keys.
async fn ask_parent(
    peer: &Peer<RoleServer>,
    requests: Vec<Keyed>,
    timeout: Duration,
    reply: oneshot::Sender<Result<String, String>>,
) {
    let requests: serde_json::Map<String, Value> = requests
        .into_iter()
        .filter_map(|k| {
            let request = serde_json::to_value(rounds::input_request(k.request)?).ok()?;
            Some((k.key, request))
        })
        .collect();
    let request = CustomRequest::new(ASK_METHOD, Some(Value::Object(requests)));
    let answer = ask(
        peer,
        ServerRequest::CustomRequest(request),
        ASK_METHOD,
        timeout,
    )
    .await;
    let _ = reply.send(answer.map(|answers| answers.to_string()));
}

/// Sends `request` to the client and resolves to its result, or why it failed; gives up (and
/// tells the client it was cancelled) after `timeout`.
async fn ask(
    peer: &Peer<RoleServer>,
    request: ServerRequest,
    method: &str,
    timeout: Duration,
) -> Result<Value, String> {
    let answered = match peer
        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
        .await
    {
        Ok(handle) => handle.await_response().await,
        Err(error) => Err(error),
    };
    match answered {
        Ok(result) => serde_json::to_value(&result)
            .map_err(|e| format!("the client's answer to {method} could not be read: {e}")),
        Err(ServiceError::McpError(error)) => Err(format!(
            "the client answered {method} with an error: {} (code {})",
            error.message, error.code.0
        )),
        Err(ServiceError::Timeout { timeout }) => Err(unanswered(method, timeout)),
        Err(error) => Err(format!("{method} failed: {error}")),
    }
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
            parent: None,
            round: None,
            requests_made: Arc::default(),
            becomes_task: false,
            in_task: false,
            availability: None,
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
        let Ok(Event::Ask { requests, reply }) = events.try_recv() else {
            panic!("no request was queued")
        };
        assert_eq!(requests[0].method, "elicitation/create");
        assert_eq!(requests[0].key, "elicitation-1");
        reply
            .send(Ok(r#"{"elicitation-1":{"action":"decline"}}"#.to_owned()))
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
    fn in_a_round_requests_are_answered_from_it_or_end_the_call_asking_for_what_is_missing() {
        let (mut context, mut events) =
            call_context(false, json!({"elicitation": {}, "roots": {}}), false);
        let sealer = rounds::Sealer::random();
        let binding = rounds::Binding::new("tools/call", "t", &json!({}), None);
        let answers = std::collections::BTreeMap::from([(
            "name".to_owned(),
            json!({"action": "accept", "content": {"name": "Ada"}}),
        )]);
        context.round = Some(Round::open(&sealer, &binding, None, Some(answers)).unwrap());
        context.no_requests = None;
        let name =
            json!({"message": "name?", "requestedSchema": {"type": "object", "properties": {}}});
        let answered = context.ask(
            json!({"name": {"method": "elicitation/create", "params": name}})
                .to_string()
                .into(),
        );
        let answered: Value = serde_json::from_str(&block_on(answered).unwrap()).unwrap();
        assert_eq!(answered["name"]["content"]["name"], "Ada");
        assert!(events.try_recv().is_err(), "nothing went to the client");

        let both = json!({
            "name": {"method": "elicitation/create", "params": name},
            "roots": {"method": "roots/list", "params": {}}
        });
        let _pending = context.ask(both.to_string().into());
        let Ok(Event::InputRequired(missing)) = events.try_recv() else {
            panic!("the call was not ended for its missing input")
        };
        assert_eq!(missing.keys().collect::<Vec<_>>(), ["roots"]);
        // A single request is keyed by its method and its place among the call's requests.
        let _pending = context.request("roots/list".into(), "{}".into());
        let Ok(Event::InputRequired(missing)) = events.try_recv() else {
            panic!("the call was not ended for its missing input")
        };
        assert_eq!(missing.keys().collect::<Vec<_>>(), ["roots-1"]);
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
        let (mut context, call) = call_context(false, json!({}), false);
        context.updates = updates;
        let host = HostContextBox::from_ptr(RArc::new(context), TD_Opaque);
        drop(call);
        // From a plugin's thread, no runtime anywhere.
        std::thread::spawn(move || host.resource_updated("library://note".into()))
            .join()
            .unwrap();
        assert_eq!(server.try_recv().unwrap(), "library://note");
    }
}
