//! [`CallContext`]: the `HostContext` one plugin call is handed. The plugin calls it from its
//! own threads, so it touches no tokio reactor: what it sends goes into one channel, in order,
//! and a request's answer comes back through a oneshot the plugin can poll anywhere.

use std::sync::{
    Arc, Mutex, OnceLock,
    atomic::{AtomicUsize, Ordering},
};

use abi_stable::std_types::{ROption, RResult, RStr, RString, RVec};

use crate::util::lock::lock;
use async_ffi::{FfiFuture, FutureExt};
use axum::http::request::Parts;
use futures::channel::oneshot;
use plugin_abi::{ErrorKind, FfiError, FfiLogEvent, HostContext};
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CustomNotification, CustomRequest,
    ElicitRequestParams, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    Request, RequestNoParam, ServerNotification, ServerRequest,
};
use rmcp::{RoleServer, service::Peer};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{NO_SESSION, level::*, rounds, run::*, session_of};
use crate::serve::{
    generation::availability,
    host_context::rounds::{Missing, Round},
    mcp::subscriptions::Updates,
};
use crate::{
    call::level::LEVELS,
    call::wire::{AVAILABILITY_METHOD, PLUGIN_LOG_METHOD},
    selection::{ActiveSet, Resolution},
};

/// What a tool sends through its context, in order.
pub(super) enum Event {
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
    /// An isolated plugin's child hands its parent one of its plugin's log events
    /// ([`crate::call::wire::PLUGIN_LOG_METHOD`]'s params).
    PluginLogToParent(Value),
    /// An isolated plugin's child tells its parent that its plugin turned a contribution on or
    /// off.
    SetAvailableOnParent {
        kind: String,
        name: String,
        available: bool,
    },
}

/// The sending end of a call's events. They are boxed: a channel allocates its first block of
/// 32 slots when it is made, 256 bytes of pointers rather than 3.3 kB of events, for every call
/// though most send none.
#[derive(Debug, Clone)]
pub(super) struct EventSender(mpsc::UnboundedSender<Box<Event>>);

/// The receiving end of a call's events.
pub(super) type EventReceiver = mpsc::UnboundedReceiver<Box<Event>>;

impl EventSender {
    /// A channel of events.
    pub(super) fn channel() -> (Self, EventReceiver) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self(sender), receiver)
    }

    /// Sends `event`; gives it back once the call has ended.
    pub(super) fn send(&self, event: Event) -> Result<(), Event> {
        self.0.send(Box::new(event)).map_err(|e| *e.0)
    }

    /// Resolves once the call has ended (its events are no longer read).
    fn closed(&self) -> impl Future<Output = ()> + Send + 'static {
        let sender = self.0.clone();
        async move { sender.closed().await }
    }
}

/// A request for the client under its key, and its method (for messages).
pub(super) struct Keyed {
    pub(super) key: String,
    pub(super) method: String,
    pub(super) request: ServerRequest,
}

/// The host's services for one call.
#[derive(Clone)]
pub(crate) struct CallContext {
    pub(super) events: EventSender,
    pub(super) level: SessionLevel,
    pub(super) progress_token: Option<ProgressToken>,
    /// The request's selection, shared with the server's cache: its active set is not copied.
    pub(super) resolution: Arc<Resolution>,
    pub(super) capabilities: Arc<Option<ClientCapabilities>>,
    /// The request's session id; `None` outside a session.
    pub(super) session: Option<Arc<str>>,
    /// The authenticated caller; `None` without authentication.
    pub(super) identity: Option<Arc<crate::auth::Identity>>,
    /// Why requests cannot reach the client, if they cannot.
    pub(super) no_requests: Option<&'static str>,
    /// The first capability a request of the tool needed and the client had not declared.
    pub(super) undeclared: Arc<OnceLock<&'static str>>,
    /// Where "this resource changed" goes: to every subscribed session, not only this one.
    pub(super) updates: Updates,
    /// Whether the call comes from an isolated plugin's parent, which is told what the plugin
    /// turns on or off (it serves the plugin's tools and prompts), and asked for every input
    /// (it checks the client's capabilities, and asks the client or ends the call for input).
    pub(super) tells_parent: bool,
    /// The parent's connection and the runtime to reach it from, when `tells_parent`: what the
    /// plugin tells it after the call has answered (and its events channel closed) goes there.
    pub(super) parent: Option<(Peer<RoleServer>, tokio::runtime::Handle)>,
    /// Under 2026-07-28, the answers this round of the call can use: requests are answered
    /// from them, or end the call with an input-required result.
    pub(super) round: Option<Arc<Round>>,
    /// How many requests the call has made, which numbers their keys (`elicitation-1`, ...).
    pub(super) requests_made: Arc<AtomicUsize>,
    /// Whether the call may become a task (`Context::run_as_task`): the plain phase of an
    /// `input_first` task tool's call.
    pub(super) becomes_task: bool,
    /// Whether the call runs as a task: its requests wait in the task's `inputRequests`.
    pub(super) in_task: bool,
    /// Where the calling plugin turns its tools and prompts on and off, and its name.
    pub(super) availability: Option<(availability::Toggles, Arc<str>)>,
    /// The W3C trace context of the call's span when traces are on, else the request's, as
    /// the JSON object plugins get.
    pub(super) trace: Option<Arc<str>>,
    /// The plugin called, when known: whose log events come through this context (when the
    /// event does not name its plugin).
    pub(super) plugin: Option<Arc<str>>,
    /// The span the call runs in, while it runs: where the plugin's log events are written.
    /// [`CallSpan::end`] lets it go when the call ends, since a plugin may keep its context,
    /// and a span held on would never end (nor be exported).
    pub(super) span: CallSpan,
}

/// The span of a call, held until the call ends; none when there is no span.
#[derive(Debug, Clone, Default)]
pub(super) struct CallSpan(Option<Arc<Mutex<tracing::Span>>>);

impl CallSpan {
    /// The current span, unless there is none.
    fn current() -> Self {
        Self::of(tracing::Span::current())
    }

    /// `span`, unless it is none.
    pub(super) fn of(span: tracing::Span) -> Self {
        Self((!span.is_none()).then(|| Arc::new(Mutex::new(span))))
    }

    /// The span, while the call runs.
    fn get(&self) -> tracing::Span {
        self.0
            .as_ref()
            .map_or_else(tracing::Span::none, |span| lock(span).clone())
    }

    /// Lets the span go: the call ended.
    pub(super) fn end(&self) {
        if let Some(span) = &self.0 {
            *lock(span) = tracing::Span::none();
        }
    }
}

impl CallContext {
    /// The context of the call `request` makes, on the session whose level is `level`, with
    /// the request's selection; and the receiving end [`Call::run`] drains.
    pub(super) fn new(call: Call<'_>) -> (Self, EventReceiver) {
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
        let availability = availability.zip(plugin.clone());
        let round = client.round.clone();
        let (events, receiver) = EventSender::channel();
        let mut session = session_of(request);
        let in_task = task_input(request).is_some();
        let mut resolution = Arc::clone(resolution);
        let mut capabilities = request.client_capabilities();
        let tells_parent = caller.is_some();
        let mut identity = request
            .extensions
            .get::<Parts>()
            .and_then(|p| p.extensions.get::<crate::auth::RequestIdentity>())
            .and_then(|c| c.0.clone());
        if let Some(caller) = caller {
            identity = caller.identity.map(|relayed| {
                Arc::new(crate::auth::Identity {
                    name: relayed.name,
                    scopes: relayed.scopes,
                    proof: crate::auth::Proof::Relayed,
                    bound: crate::auth::Bound::default(),
                    claims: None,
                })
            });
            session = caller.session.map(Arc::from);
            capabilities = caller.capabilities;
            resolution = Arc::new(Resolution {
                active: ActiveSet::from_names(caller.active),
                ..(*resolution).clone()
            });
        }
        let trace = crate::observe::traces::current_context()
            .or_else(|| super::trace::of_request(request))
            .map(|context| Arc::from(serde_json::Value::Object(context).to_string()));
        let context = Self {
            trace,
            plugin,
            span: CallSpan::current(),
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
    pub(super) fn client_request(
        &self,
        method: &str,
        params: &str,
    ) -> Result<ServerRequest, String> {
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
    pub(super) fn next_key(&self, method: &str) -> String {
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
    pub(super) fn send(
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
    pub(super) fn ended(&self) -> impl Future<Output = ()> + Send + 'static {
        self.events.closed()
    }
}

/// A future that fails at once with `message`.
pub(super) fn failed(message: String) -> FfiFuture<RResult<RString, FfiError>> {
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
            if let Err(event) = self.events.send(event)
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
            changes.send(availability::Toggle {
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

    fn abi_version(&self) -> RString {
        RString::from(plugin_abi::VERSION)
    }

    fn trace_context(&self) -> ROption<RString> {
        self.trace.as_deref().map(RString::from).into()
    }

    /// Writes the plugin's event to the host's log in the call's span; in an isolated plugin's
    /// child, hands it to the parent instead, under the call's progress token, so the parent
    /// writes it in its own call's span.
    fn plugin_event(&self, event: FfiLogEvent<'_>) {
        if self.tells_parent {
            let params = crate::call::wire::plugin_log_params(&event, self.progress_token.as_ref());
            let event = Event::PluginLogToParent(params);
            if let Err(event) = self.events.send(event)
                && let Some((peer, runtime)) = self.parent.clone()
            {
                runtime.spawn(async move { notify(&peer, event).await });
            }
            return;
        }
        let plugin = match (event.plugin.as_str(), &self.plugin) {
            ("", Some(called)) => called,
            (own, _) => own,
        };
        let span = self.span.get();
        let _entered = span.enter();
        crate::observe::plugin_logs::emit(plugin, event);
    }
}

/// Sends a log message or a progress report; a client that is gone is not an error here.
pub(super) async fn notify(peer: &Peer<RoleServer>, event: Event) {
    let sent = match event {
        Event::Log(message) => peer.notify_logging_message(message).await,
        Event::Progress(report) => peer.notify_progress(report).await,
        Event::PluginLogToParent(params) => {
            let notification = CustomNotification::new(PLUGIN_LOG_METHOD, Some(params));
            peer.send_notification(ServerNotification::CustomNotification(notification))
                .await
        }
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
