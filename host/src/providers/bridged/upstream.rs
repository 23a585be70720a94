//! The one connection to a bridged server, shared by every session and request.
//!
//! Started (or connected) on first need and again on the next need after the server went away
//! (a child that exited, a closed HTTP session), with a backoff after repeated failures
//! ([`Restarts`]); each start is bounded by the entry's `connect_timeout`. Requests are multiplexed on it by rmcp's client. A stdio child
//! ([`ChildProcess`]) runs in a process group of its own, which is sent SIGTERM when the
//! connection is replaced and when the upstream is dropped, so the processes a command starts
//! in turn (`npx` starting `node`) go too; stopping closes its stdin first and waits for it.
//! Its stderr is logged, its last lines kept for the error when it does not start, and how it
//! ended is named in the error of every call it leaves unanswered. What the server sends
//! during a call (progress, log messages, requests to the client) reaches the request that made
//! it ([`Relay`]).

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::FutureExt as _;
use plugin_abi::{ErrorKind, FfiError, HostContextBox};
use rmcp::{
    RoleClient, ServiceExt as _,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
        ClientRequest, CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams,
        GetPromptResult, GetSkillRequestParams, JsonObject, PaginatedRequestParams, PingRequest,
        ReadResourceRequestParams, ReadResourceResult, RequestId, RequestMetaObject,
        ServerCapabilities, ServerResult, Skill, SubscribeRequestParams, UnsubscribeRequestParams,
    },
    service::{Peer, PeerRequestOptions, RunningService, ServiceError},
    transport::IntoTransport,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tracing::Instrument as _;

use super::{
    lane::Lane,
    process::{ChildProcess, StderrLines, describe},
    relay::{Relay, Tagged},
    restarts::Restarts,
};
use crate::observe::{metrics, traces};
use crate::{
    call::{
        Process, ProcessStatus, ResourceUpdates,
        process::{ProcessFuture, SkillFuture},
    },
    discovery::servers::{
        cache::Listing,
        config::{ServerEntry, Transport},
        skills::served_skills,
    },
    util::lock::lock,
};

/// A connection to the server: rmcp's client service, and for a stdio server the lane its tool
/// calls take.
#[derive(Debug)]
struct Connection {
    service: RunningService<RoleClient, Relay>,
    lane: Option<Arc<Lane>>,
}

impl Connection {
    /// Whether it is still open both ways.
    fn is_live(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }
}

/// Whether the server behind `peer` answers a ping within [`PING_PATIENCE`].
async fn answers_ping(peer: Option<&Peer<RoleClient>>) -> bool {
    let Some(peer) = peer else {
        return false;
    };
    let ping = ClientRequest::PingRequest(PingRequest {
        method: Default::default(),
        extensions: Default::default(),
    });
    matches!(
        tokio::time::timeout(PING_PATIENCE, peer.send_request(ping)).await,
        Ok(Ok(_))
    )
}

/// How long after a call timed out an isolated plugin's child is restarted (once no other
/// call is in flight on it, or at once if it does not answer a ping).
const RECYCLE_GRACE: Duration = Duration::from_secs(2);

/// How long a child with calls in flight has to answer a ping before it is taken for frozen.
const PING_PATIENCE: Duration = Duration::from_secs(1);

/// Why a call has no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallError {
    /// The server neither answered nor reported progress for this long (`call_timeout`).
    Silent(Duration),
    /// The server did not start, or failed the call; the message says which and why.
    Failed(String),
}

/// Why a server's listing could not be had; each names the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ListError {
    /// It did not start, or waits before it is started again: the message says which and why.
    #[error("{0}")]
    Start(String),
    /// A list request failed.
    #[error("{server} could not list its {what}")]
    Request {
        /// The server's label.
        server: String,
        /// What it was asked to list.
        what: &'static str,
        /// The client's error.
        #[source]
        source: ServiceError,
    },
    /// A page's cursor came back: the pagination loops.
    #[error(
        "{server} could not list its {what}: the cursor `{cursor}` came back: pagination loops"
    )]
    Loop {
        /// The server's label.
        server: String,
        /// What it was asked to list.
        what: &'static str,
        /// The cursor seen twice.
        cursor: String,
    },
    /// It did not list everything within its `connect_timeout`.
    #[error(
        "{server} did not list its tools, resources and prompts within {} s (connect_timeout)",
        timeout.as_secs_f64()
    )]
    Timeout {
        /// The server's label.
        server: String,
        /// Its `connect_timeout`.
        timeout: Duration,
    },
}

/// Why one paginated list stopped.
#[derive(Debug)]
enum PageError {
    /// A request failed.
    Request(ServiceError),
    /// This cursor came back.
    Loop(String),
}

/// A bridged server's connection, made on first need.
#[derive(Debug)]
pub(crate) struct Upstream {
    server: Arc<ServerEntry>,
    connection: tokio::sync::Mutex<Option<Connection>>,
    relay: Relay,
    stderr: StderrLines,
    /// The current stdio child.
    child: Mutex<Option<Arc<ChildProcess>>>,
    restarts: Mutex<Restarts>,
    /// The URIs subscribed to on the server, made again on each new connection.
    subscribed: Mutex<BTreeSet<String>>,
    /// Held while a subscription is sent or withdrawn, so the server sees them in order.
    subscribing: tokio::sync::Mutex<()>,
    /// The skills it listed last (as served), once it has listed.
    skills: Mutex<Option<Vec<Skill>>>,
}

impl Upstream {
    /// The connection to `server`; nothing is started yet.
    pub(crate) fn new(server: Arc<ServerEntry>) -> Self {
        Self {
            relay: Relay::new(&server.name),
            server,
            connection: tokio::sync::Mutex::default(),
            stderr: StderrLines::default(),
            child: Mutex::default(),
            restarts: Mutex::default(),
            subscribed: Mutex::default(),
            subscribing: tokio::sync::Mutex::default(),
            skills: Mutex::default(),
        }
    }

    /// Subscribes to `uri` on the server (or isolated plugin's child), once per URI, when it
    /// offers subscriptions (the host's own subscription stands either way); its updates then
    /// go to `updates`, with or without a call in flight. Kept until [`Upstream::unsubscribe`],
    /// and made again on each new connection: the host sends on only what its sessions
    /// subscribed to.
    pub(crate) async fn subscribe(&self, uri: &str, updates: ResourceUpdates) {
        self.relay.updates_to(updates);
        let _subscribing = self.subscribing.lock().await;
        match self.peer().await {
            Ok(peer) => {
                if lock(&self.subscribed).insert(uri.to_owned()) {
                    self.subscribe_on(&peer, uri).await;
                }
            }
            Err(reason) => {
                tracing::warn!(server = %self.server.name, "not subscribed to {uri}: {reason}");
            }
        }
    }

    /// Withdraws the subscription to `uri`, if there is one and `unwanted` still says nobody
    /// wants it (asked once the subscriptions are in order): sends `resources/unsubscribe` on
    /// a live connection, bounded by `call_timeout`, and no longer subscribes on new ones.
    #[allow(deprecated)]
    pub(crate) async fn unsubscribe(&self, uri: &str, unwanted: impl Fn() -> bool) {
        let _subscribing = self.subscribing.lock().await;
        if !unwanted() || !lock(&self.subscribed).remove(uri) {
            return;
        }
        let Some(peer) = self.live_peer().await else {
            return;
        };
        let unsubscribing = peer.unsubscribe(UnsubscribeRequestParams::new(uri));
        match tokio::time::timeout(self.server.call_timeout, unsubscribing).await {
            Ok(Ok(())) => {
                tracing::info!(server = %self.server.name, "unsubscribed from {uri}: no session wants it");
            }
            Ok(Err(error)) => {
                tracing::warn!(server = %self.server.name, "refused to unsubscribe from {uri}: {error}");
            }
            Err(_) => {
                tracing::warn!(server = %self.server.name, "no answer to unsubscribing from {uri}");
            }
        }
    }

    /// Sends `resources/subscribe` for `uri` to a server that offers it, bounded by
    /// `call_timeout`; a refusal is logged. (The connection speaks 2025-11-25, where
    /// `resources/subscribe` is how a client subscribes.)
    #[allow(deprecated)]
    async fn subscribe_on(&self, peer: &Peer<RoleClient>, uri: &str) {
        let offered = peer.peer_info().is_some_and(|info| {
            info.capabilities
                .resources
                .as_ref()
                .and_then(|resources| resources.subscribe)
                == Some(true)
        });
        if !offered {
            return;
        }
        let subscribing = peer.subscribe(SubscribeRequestParams::new(uri));
        match tokio::time::timeout(self.server.call_timeout, subscribing).await {
            Ok(Ok(())) => tracing::debug!(server = %self.server.name, "subscribed to {uri}"),
            Ok(Err(error)) => {
                tracing::warn!(server = %self.server.name, "refused the subscription to {uri}: {error}");
            }
            Err(_) => {
                tracing::warn!(server = %self.server.name, "no answer to the subscription to {uri}");
            }
        }
    }

    /// The server's entry.
    pub(crate) fn server(&self) -> &ServerEntry {
        &self.server
    }

    /// Its process or connection as `/healthz` reports it.
    pub(crate) fn status(&self) -> ProcessStatus {
        let restarts = self.restarts();
        let running = lock(&self.child)
            .as_ref()
            .filter(|c| c.is_running())
            .map(|c| c.pid());
        ProcessStatus {
            plugin: self.server.name.clone(),
            kind: if self.server.isolated {
                "isolated_library"
            } else {
                "mcp_server"
            },
            pid: running,
            failures: restarts.failures(),
            parked: restarts.parked(),
            retry_in_s: restarts
                .wait(Instant::now())
                .map(|(wait, _)| wait.as_secs_f64()),
        }
    }

    /// Signalled each time the server says its tool list changed.
    pub(crate) fn tools_changed(&self) -> Arc<tokio::sync::Notify> {
        self.relay.tools_changed()
    }

    /// The current connection if it is live; nothing is started.
    async fn live_peer(&self) -> Option<Peer<RoleClient>> {
        let connection = self.connection.lock().await;
        connection
            .as_ref()
            .filter(|c| c.is_live())
            .map(|c| c.service.peer().clone())
    }

    /// A live connection's peer: the current one's, or a new one's if there is none or it closed.
    pub(crate) async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        self.connected().await.map(|(peer, _)| peer)
    }

    /// A live connection's peer and lane: the current one's, or a new one's if there is none or
    /// it closed.
    async fn connected(&self) -> Result<(Peer<RoleClient>, Option<Arc<Lane>>), String> {
        let mut connection = self.connection.lock().await;
        if let Some(live) = connection.as_ref().filter(|c| c.is_live()) {
            return Ok((live.service.peer().clone(), live.lane.clone()));
        }
        if connection.take().is_some() {
            self.end_group();
            self.note_failure(Restarts::ended);
            tracing::info!(server = %self.server.name, "restarting MCP server: its connection closed");
        }
        let (waiting, parked) = {
            let restarts = self.restarts();
            (restarts.wait(Instant::now()), restarts.parked())
        };
        if let Some((wait, failures)) = waiting {
            let label = self.server.label();
            let wait = wait.as_secs_f64();
            return Err(if parked {
                format!(
                    "{label} is parked after {failures} crashes or failed starts in a row; retry after {wait:.0} s"
                )
            } else {
                format!(
                    "{label} is not started again yet: it went away or failed to start {failures} times in a row; next try in {wait:.1} s"
                )
            });
        }
        let timeout = self.server.connect_timeout;
        let failure = match tokio::time::timeout(timeout, self.connect()).await {
            Ok(Ok(started)) => {
                self.restarts().started(Instant::now());
                self.process_event(metrics::ProcessEvent::Started);
                let peer = started.service.peer().clone();
                log_everything(&peer).await;
                let subscribed: Vec<String> = lock(&self.subscribed).iter().cloned().collect();
                for uri in &subscribed {
                    self.subscribe_on(&peer, uri).await;
                }
                let lane = started.lane.clone();
                *connection = Some(started);
                return Ok((peer, lane));
            }
            Ok(Err(reason)) => {
                self.end_group();
                // Let the stderr reader catch up with a child that just exited.
                tokio::time::sleep(Duration::from_millis(100)).await;
                self.did_not_start(&reason)
            }
            Err(_) => {
                self.end_group();
                self.did_not_start(&format!(
                    "no answer to initialize within {} s (connect_timeout)",
                    timeout.as_secs_f64()
                ))
            }
        };
        self.note_failure(Restarts::failed);
        Err(failure)
    }

    /// Notes in its restarts that its process ended or did not start (`note`, now), and counts
    /// it as crashed, and as parked when this failure parks it.
    fn note_failure(&self, note: fn(&mut Restarts, Instant)) {
        let parked = {
            let mut restarts = self.restarts();
            note(&mut restarts, Instant::now());
            restarts.failures() == super::restarts::PARK_AFTER
        };
        self.process_event(metrics::ProcessEvent::Crashed);
        if parked {
            self.process_event(metrics::ProcessEvent::Parked);
        }
    }

    /// Counts `event` of its process, when metrics are on.
    fn process_event(&self, event: metrics::ProcessEvent) {
        let provider = if self.server.isolated {
            "isolated_library"
        } else {
            "mcp_server"
        };
        metrics::process_event(&self.server.name, provider, event);
    }

    fn restarts(&self) -> std::sync::MutexGuard<'_, Restarts> {
        lock(&self.restarts)
    }

    /// Everything the server lists (its tools, and its resources, resource templates,
    /// prompts and skills when it has those capabilities), following pagination; starting it and listing
    /// are each bounded by `connect_timeout`.
    pub(crate) async fn list(&self) -> Result<Listing, ListError> {
        let peer = self.peer().await.map_err(ListError::Start)?;
        let timeout = self.server.connect_timeout;
        let server = self.server.label();
        let listed = match tokio::time::timeout(timeout, list_all(&peer, &server)).await {
            Ok(listed) => listed,
            Err(_) => Err(ListError::Timeout { server, timeout }),
        };
        if let Ok(listing) = &listed {
            *lock(&self.skills) = Some(served_skills(&self.server, &listing.skills));
        }
        listed
    }

    /// Reads the resource `uri` from the server, for the request that `context` stands for
    /// (what the server asks meanwhile goes to it).
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        context: HostContextBox,
    ) -> Result<ReadResourceResult, FfiError> {
        let what = format!("read `{uri}`");
        let meta = self.caller_meta(&context);
        let _listening = self.relay.listen(context);
        self.ask(&what, |peer| async move {
            let mut params = ReadResourceRequestParams::new(uri);
            params.meta = meta;
            peer.read_resource(params).await
        })
        .await
    }

    /// Gets the server's prompt `name` (its own name) with `arguments`, for the request that
    /// `context` stands for.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: HostContextBox,
    ) -> Result<GetPromptResult, FfiError> {
        let what = format!("get the prompt `{name}`");
        let meta = self.caller_meta(&context);
        let _listening = self.relay.listen(context);
        self.ask(&what, |peer| async move {
            let mut params = GetPromptRequestParams::new(name);
            params.arguments = arguments;
            params.meta = meta;
            peer.get_prompt(params).await
        })
        .await
    }

    /// The `_meta` of a request made for `context`: the W3C trace context of the current span
    /// when traces are on, else the one the request came with (SEP-414), and for an isolated
    /// plugin's child who calls ([`crate::call::wire::CALLER_META`]); none when there is
    /// neither.
    fn caller_meta(&self, context: &HostContextBox) -> Option<RequestMetaObject> {
        let mut meta = RequestMetaObject::new();
        let trace = traces::current_context().or_else(|| {
            let trace = context.trace_context().into_option()?;
            serde_json::from_str(&trace).ok()
        });
        if let Some(trace) = trace {
            for (key, value) in trace {
                meta.insert(key, value);
            }
        }
        if self.server.isolated {
            meta.insert(
                crate::call::wire::CALLER_META.to_owned(),
                crate::call::wire::caller_meta(context),
            );
        }
        (!meta.is_empty()).then_some(meta)
    }

    /// Gets the server's skill `uri` (its own URI), the entry as served.
    pub(crate) async fn get_skill(&self, uri: &str) -> Result<Skill, FfiError> {
        let what = format!("get the skill `{uri}`");
        let got = self
            .ask(&what, |peer| async move {
                peer.get_skill(GetSkillRequestParams::new(uri)).await
            })
            .await?;
        let served = served_skills(&self.server, &[got.skill]).pop();
        served.ok_or_else(|| {
            let message = format!(
                "{} answered a skill not under skill:// for {uri}",
                self.server.label()
            );
            FfiError::new(ErrorKind::Tool, message)
        })
    }

    /// Asks the server to complete an argument.
    pub(crate) async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, FfiError> {
        self.ask("complete an argument", |peer| async move {
            peer.complete(params).await
        })
        .await
    }

    /// Starts the server if needed and asks it one request, bounded by `call_timeout`; errors
    /// say the server could not do `what`, of the kind the server's error code says (a
    /// resource not found, invalid params), else a tool error.
    async fn ask<T, F>(
        &self,
        what: &str,
        request: impl FnOnce(Peer<RoleClient>) -> F,
    ) -> Result<T, FfiError>
    where
        F: Future<Output = Result<T, ServiceError>>,
    {
        let peer = self
            .peer()
            .await
            .map_err(|e| FfiError::new(ErrorKind::Tool, e))?;
        let name = self.server.label();
        let timeout = self.server.call_timeout;
        match tokio::time::timeout(timeout, request(peer)).await {
            Ok(answer) => answer.map_err(|e| {
                let kind = match &e {
                    ServiceError::McpError(error)
                        if error.code == ErrorCode::RESOURCE_NOT_FOUND =>
                    {
                        ErrorKind::NotFound
                    }
                    ServiceError::McpError(error) if error.code == ErrorCode::INVALID_PARAMS => {
                        ErrorKind::InvalidArguments
                    }
                    _ => ErrorKind::Tool,
                };
                let message = match &e {
                    // An isolated plugin's error reads as it would in process.
                    ServiceError::McpError(error) if self.server.isolated => {
                        error.message.to_string()
                    }
                    _ => format!("{name} could not {what}: {e}"),
                };
                FfiError::new(kind, message)
            }),
            Err(_) => Err(FfiError::new(
                ErrorKind::Tool,
                format!(
                    "{name} did not {what} within {} s (call_timeout)",
                    timeout.as_secs_f64()
                ),
            )),
        }
    }

    /// Calls the upstream tool `tool` (its own name) with `arguments`, for the request that
    /// `context` stands for: what the server sends during the call goes to it, and dropping the
    /// future tells the server the call is cancelled. Once the call is sent, it fails with
    /// [`CallError::Silent`] when `call_timeout` passes with neither the answer nor a progress
    /// report (each report restarts it); the server is then told it is cancelled.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        context: HostContextBox,
    ) -> Result<CallToolResult, CallError> {
        let span = self.span("tools/call", tool);
        self.call_in_span(tool, arguments, context)
            .instrument(span)
            .await
    }

    /// The CLIENT span of a `method` request for `target` sent to the server (an isolated
    /// child's or a bridged server's, as `reactor.isolated` says); none when traces are off.
    fn span(&self, method: &str, target: &str) -> tracing::Span {
        let span = traces::child_span(&format!("{method} {target}"), "client", &self.server.name);
        span.record("mcp.method.name", method);
        if method == "tools/call" {
            span.record("gen_ai.tool.name", target);
        }
        span.record("reactor.isolated", self.server.isolated);
        span
    }

    /// [`Upstream::call`], in the span of the call.
    async fn call_in_span(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        context: HostContextBox,
    ) -> Result<CallToolResult, CallError> {
        let (peer, lane) = self.connected().await.map_err(CallError::Failed)?;
        let sent = Instant::now();
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        params.meta = self.caller_meta(&context);
        let listening = self.relay.listen(context);
        let (id, answer) = match lane {
            Some(lane) => {
                let ticket = match lane.ticket() {
                    Ok(ticket) => ticket,
                    Err(e) => return Err(self.call_failed(tool, &e).await),
                };
                let token = ticket.progress_token();
                params
                    .meta
                    .get_or_insert_default()
                    .set_progress_token(token.clone());
                listening.sent_as(token);
                if let Err(e) = ticket.send(params).await {
                    return Err(self.call_failed(tool, &e).await);
                }
                (ticket.id(), ticket.answer().boxed())
            }
            None => {
                // rmcp gives each request its progress token and hands it back once the
                // request is queued; reports that come sooner wait in the relay until `sent_as`
                // names it.
                let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
                let handle = match peer
                    .send_request_with_option(request, PeerRequestOptions::no_options())
                    .await
                {
                    Ok(handle) => handle,
                    Err(e) => return Err(self.call_failed(tool, &e).await),
                };
                listening.sent_as(handle.progress_token.clone());
                let id = handle.id.clone();
                let answer = handle.await_response().map(|answer| match answer {
                    Ok(ServerResult::CallToolResult(result)) => Ok(result),
                    Ok(other) => {
                        tracing::debug!(server = %self.server.name, "unexpected answer to tools/call: {other:?}");
                        Err(ServiceError::UnexpectedResponse)
                    }
                    Err(e) => Err(e),
                });
                (id, answer.boxed())
            }
        };
        let mut abandoned = Abandoned(Some((peer, id)));
        let timeout = self.server.call_timeout;
        let mut answer = answer;
        let answer = loop {
            tokio::select! {
                answer = &mut answer => break answer,
                () = listening.progressed() => {}
                () = tokio::time::sleep(timeout) => {
                    if self.server.isolated {
                        self.recycle_when_idle(abandoned.peer());
                    }
                    return Err(CallError::Silent(timeout));
                }
            }
        };
        abandoned.0 = None;
        if !self.server.isolated {
            metrics::bridged_call(&self.server.name, sent.elapsed());
        }
        match answer {
            Ok(result) => Ok(result),
            Err(e) => Err(self.call_failed(tool, &e).await),
        }
    }

    /// After a call timed out, ends the current child once [`RECYCLE_GRACE`] has passed and no
    /// call is in flight on it, so a tool that ignores its cancellation (a thread that never
    /// returns) is not left running; the next call starts a new child. A child with calls in
    /// flight that does not answer a ping (`peer`'s) within [`PING_PATIENCE`] is frozen: it is
    /// killed then, whatever is queued behind the call, and those calls fail at once.
    fn recycle_when_idle(&self, peer: Option<Peer<RoleClient>>) {
        let Some(child) = lock(&self.child).clone() else {
            return;
        };
        let relay = self.relay.clone();
        let label = self.server.label();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RECYCLE_GRACE).await;
                if child.ended(Duration::ZERO).await.is_some() {
                    return;
                }
                if relay.in_flight() == 0 {
                    tracing::warn!("{label}: restarting its process, in which a call timed out");
                    let _ = tokio::task::spawn_blocking(move || child.stop()).await;
                    return;
                }
                if !answers_ping(peer.as_ref()).await {
                    // A frozen process would not run its stop hook either: it is killed.
                    tracing::warn!(
                        "{label}: killing its process, which timed out a call and does not \
                         answer a ping"
                    );
                    child.kill();
                    return;
                }
            }
        });
    }

    /// "SERVER failed the call of `TOOL`: ERROR", or, when its process ended, how it ended (its
    /// last stderr lines are logged).
    async fn call_failed(&self, tool: &str, error: &ServiceError) -> CallError {
        let label = self.server.label();
        let child = lock(&self.child).clone();
        let ended = match (child, error) {
            (Some(child), ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                child.ended(Duration::from_millis(500)).await
            }
            _ => None,
        };
        let Some(status) = ended else {
            return CallError::Failed(format!("{label} failed the call of `{tool}`: {error}"));
        };
        let how = describe(status);
        let lines = lock(&self.stderr).iter().cloned().collect::<Vec<_>>();
        tracing::error!(
            "{label}: its process {how} during a call of `{tool}`; its last stderr lines:\n{}",
            lines.join("\n")
        );
        CallError::Failed(format!(
            "{label} failed the call of `{tool}`: its process {how}"
        ))
    }

    /// Closes the connection; a stdio child sees its stdin close and gets SIGTERM, and is
    /// waited for (blocking the thread) up to its grace, then killed with its group.
    pub(crate) fn stop(&self) {
        if let Ok(mut connection) = self.connection.try_lock() {
            connection.take();
        }
        if let Some(child) = lock(&self.child).take() {
            child.stop();
        }
    }

    /// Sends SIGTERM to the current child's process group, if there is one.
    fn end_group(&self) {
        if let Some(child) = lock(&self.child).take() {
            child.terminate();
        }
    }

    async fn connect(&self) -> Result<Connection, String> {
        match &self.server.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                let inherited = super::environment::inherited(
                    std::env::vars_os(),
                    self.server.isolated,
                    self.server.sandbox.as_ref().map(|s| s.env.as_slice()),
                );
                cmd.args(args).env_clear().envs(inherited).envs(env);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let (child, stdout, stdin) =
                    ChildProcess::spawn(cmd, &self.server.name, &self.stderr)
                        .map_err(|e| format!("cannot run `{command}`: {e}"))?;
                *lock(&self.child) = Some(Arc::new(child));
                let transport = super::lines::ServerLines::new(
                    stdout,
                    stdin,
                    self.server.max_message_bytes,
                    self.server.label(),
                );
                let lane = self.server.lane.then(|| transport.lane());
                let service = self.start(transport).await?;
                Ok(Connection { service, lane })
            }
            Transport::Http { url, headers } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                for (name, value) in headers {
                    let name = axum::http::HeaderName::try_from(name.as_str())
                        .map_err(|e| format!("header `{name}`: {e}"))?;
                    let value = axum::http::HeaderValue::try_from(value.as_str())
                        .map_err(|e| format!("header `{name}`: {e}"))?;
                    config.custom_headers.insert(name, value);
                }
                crate::util::tls::install_crypto_provider();
                let transport = StreamableHttpClientTransport::from_config(config);
                let service = self.start(transport).await?;
                Ok(Connection {
                    service,
                    lane: None,
                })
            }
        }
    }

    /// Starts the client service on `transport`, outside the current span ([`detached`]).
    async fn start<T, E, A: 'static>(
        &self,
        transport: T,
    ) -> Result<RunningService<RoleClient, Relay>, String>
    where
        Tagged<T>: IntoTransport<RoleClient, E, A> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let serving = self
            .relay
            .clone()
            .serve(Tagged::new(transport, self.relay.clone()));
        detached(serving).await?.map_err(|e| e.to_string())
    }

    /// "server `x` did not start: REASON", with the child's last stderr lines.
    fn did_not_start(&self, reason: &str) -> String {
        let lines = lock(&self.stderr);
        let mut message = format!("{} did not start: {reason}", self.server.label());
        if !lines.is_empty() {
            message.push_str("; its last stderr lines:\n");
            message.push_str(&lines.iter().cloned().collect::<Vec<_>>().join("\n"));
        }
        message
    }
}

/// A call in flight: when dropped before its answer, the server is told it is cancelled.
struct Abandoned(Option<(Peer<RoleClient>, RequestId)>);

impl Abandoned {
    /// The connection the call went out on.
    fn peer(&self) -> Option<Peer<RoleClient>> {
        self.0.as_ref().map(|(peer, _)| peer.clone())
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some((peer, id)) = self.0.take() {
            tokio::spawn(async move {
                let cancelled = CancelledNotificationParam::new(
                    Some(id),
                    Some("the client cancelled the call".to_owned()),
                );
                let _ = peer.notify_cancelled(cancelled).await;
            });
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.end_group();
    }
}

/// Asks a server that logs to send every level: each message goes to the calling session,
/// which keeps those at or above its own level. A refusal leaves the server's default.
#[allow(deprecated)] // logging is deprecated by SEP-2577, still in 2025-11-25
async fn log_everything(peer: &Peer<RoleClient>) {
    use rmcp::model::{LoggingLevel, SetLevelRequestParams};
    let logs = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.logging.is_some());
    if logs {
        let _ = peer
            .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
            .await;
    }
}

/// Everything `peer` (the server labelled `server`) lists that its capabilities announce; the
/// error names what failed.
async fn list_all(peer: &Peer<RoleClient>, server: &str) -> Result<Listing, ListError> {
    let capabilities = peer.peer_info().map(|info| info.capabilities.clone());
    let has =
        |capability: fn(&ServerCapabilities) -> bool| capabilities.as_ref().is_some_and(capability);
    let failed = |what: &'static str| {
        move |error: PageError| match error {
            PageError::Request(source) => ListError::Request {
                server: server.to_owned(),
                what,
                source,
            },
            PageError::Loop(cursor) => ListError::Loop {
                server: server.to_owned(),
                what,
                cursor,
            },
        }
    };
    let mut listing = Listing {
        tools: pages(|p| async { peer.list_tools(p).await.map(|r| (r.tools, r.next_cursor)) })
            .await
            .map_err(failed("tools"))?,
        completions: has(|c| c.completions.is_some()),
        ..Listing::default()
    };
    if has(|c| c.resources.is_some()) {
        listing.resources = pages(|p| async {
            let r = peer.list_resources(p).await?;
            Ok((r.resources, r.next_cursor))
        })
        .await
        .map_err(failed("resources"))?;
        listing.resource_templates = pages(|p| async {
            let r = peer.list_resource_templates(p).await?;
            Ok((r.resource_templates, r.next_cursor))
        })
        .await
        .map_err(failed("resource templates"))?;
    }
    if has(|c| c.prompts.is_some()) {
        listing.prompts = pages(|p| async {
            let r = peer.list_prompts(p).await?;
            Ok((r.prompts, r.next_cursor))
        })
        .await
        .map_err(failed("prompts"))?;
    }
    if has(ServerCapabilities::supports_skills) {
        listing.skills = pages(|p| async {
            let r = peer.list_skills(p).await?;
            Ok((r.skills, r.next_cursor))
        })
        .await
        .map_err(failed("skills"))?;
    }
    Ok(listing)
}

/// Every item of a paginated list, page after page; a cursor seen before is an error.
async fn pages<T, F>(
    mut page: impl FnMut(Option<PaginatedRequestParams>) -> F,
) -> Result<Vec<T>, PageError>
where
    F: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut items = Vec::new();
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let (more, next) = page(Some(
            PaginatedRequestParams::default().with_cursor(cursor.clone()),
        ))
        .await
        .map_err(PageError::Request)?;
        items.extend(more);
        match next {
            None => return Ok(items),
            Some(next) if seen.contains(&next) => return Err(PageError::Loop(next)),
            Some(next) => {
                seen.push(next.clone());
                cursor = Some(next);
            }
        }
    }
}

impl Process for Upstream {
    fn status(&self) -> ProcessStatus {
        Upstream::status(self)
    }

    fn subscribe<'a>(&'a self, uri: &'a str, updates: ResourceUpdates) -> ProcessFuture<'a> {
        Box::pin(Upstream::subscribe(self, uri, updates))
    }

    fn unsubscribe<'a>(
        &'a self,
        uri: &'a str,
        unwanted: Box<dyn Fn() -> bool + Send + 'a>,
    ) -> ProcessFuture<'a> {
        Box::pin(Upstream::unsubscribe(self, uri, unwanted))
    }

    fn skills(&self) -> Option<Vec<Skill>> {
        lock(&self.skills).clone()
    }

    fn get_skill<'a>(&'a self, uri: &'a str) -> SkillFuture<'a> {
        Box::pin(Upstream::get_skill(self, uri))
    }
}

/// Runs `start`, a client service's start, in a task of its own when traces are on: rmcp's
/// service loop keeps the span current at its start for as long as the connection lives, and
/// a request's span kept open would never be exported.
async fn detached<F>(start: F) -> Result<F::Output, String>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    if !traces::on() {
        return Ok(start.await);
    }
    tokio::spawn(start)
        .await
        .map_err(|e| format!("the connection's start failed: {e}"))
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;
    use crate::discovery::servers::cache::tests::server;

    #[tokio::test]
    async fn an_https_url_is_spoken_to_in_tls() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}/mcp", listener.local_addr().unwrap());
        let first_byte = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut first = [0_u8; 1];
            stream.read_exact(&mut first).await.unwrap();
            first[0]
        });
        let upstream = Upstream::new(Arc::new(server("secure", &url)));
        let error = upstream.peer().await.unwrap_err();
        assert!(
            error.starts_with("server `secure` did not start: "),
            "{error}"
        );
        assert_eq!(
            first_byte.await.unwrap(),
            0x16,
            "the connection opens with a TLS handshake record"
        );
    }
}
