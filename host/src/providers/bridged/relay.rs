//! The client side of a bridged server's connection: what the server sends during a call
//! reaches the request that made the call.
//!
//! Progress reports carry the token rmcp gave the call, so they go to that call exactly (and
//! restart its `call_timeout`, see [`Listening::progressed`]); those that come before the
//! token is known wait for it. Log
//! messages (`notifications/message`) and requests to the client (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`) carry nothing naming the call they belong to (neither
//! over stdio nor over one shared HTTP session), so they go to the calling session when that
//! is certain: when every call in flight on the connection comes from one session (or only one
//! call is in flight). Otherwise a log message stays in the host's log and a request is refused
//! with a message saying why, so no client ever gets another's. All this happens as each
//! message is read, in order with the answers ([`Tagged`]): rmcp runs its handlers in tasks of
//! their own, which may run after the call's answer has ended the call. The upstream is told the
//! client has `sampling`, `elicitation` and `roots`; whether the calling client does is checked
//! when the request is forwarded, as for a plugin's request.

// Logging, sampling and roots are deprecated by SEP-2577 (protocol 2026-07-28), and still part
// of 2025-11-25, which clients speak.
#![allow(deprecated)]

use crate::{call::ResourceUpdates, util::lock::lock};
use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use abi_stable::std_types::{ROption, RResult, RString};
use plugin_abi::HostContextBox;
use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientCapabilities, ClientInfo, CreateMessageRequestParams, CreateMessageResult,
        CustomRequest, CustomResult, ElicitRequestParams, ElicitResult, Extensions,
        GetExtensions as _, JsonRpcMessage, ListRootsResult, LoggingMessageNotificationParam,
        ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerNotification,
    },
    service::{NotificationContext, RequestContext, RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde::{Serialize, de::DeserializeOwned};
use tokio::sync::Notify;

use crate::call::level::level_number;

/// The calls in flight on one connection, shared by the relay and each call's [`Listening`].
type Calls = Arc<Mutex<InFlight>>;

/// How many progress reports are kept for calls whose token is not known yet.
const EARLY_REPORTS: usize = 64;

/// The calls in flight, each under a number of its own, and the progress reports that came
/// before their call's token was known: rmcp hands a request's token back only once the
/// request is queued, and a quick server reports before that.
#[derive(Default)]
struct InFlight {
    calls: HashMap<u64, Call>,
    early: Vec<ProgressNotificationParam>,
}

impl InFlight {
    /// The call that made the report under `token`, told it came.
    fn progressed(&self, token: &ProgressToken) -> Option<&Call> {
        let call = self
            .calls
            .values()
            .find(|c| c.token.as_ref() == Some(token))?;
        call.progressed.notify_one();
        Some(call)
    }
}

/// A call in flight: its request's context, its progress token once sent, and a signal each
/// progress report gives.
struct Call {
    context: HostContextBox,
    token: Option<ProgressToken>,
    progressed: Arc<Notify>,
}

/// Hands what a bridged server sends during a call to the request that made it.
#[derive(Clone)]
pub(super) struct Relay {
    server: Arc<str>,
    calls: Calls,
    next: Arc<AtomicU64>,
    /// Signalled at each `notifications/tools/list_changed`.
    tools_changed: Arc<Notify>,
    /// Set at the first subscription ([`Relay::updates_to`]).
    updates: Arc<Mutex<Option<ResourceUpdates>>>,
    /// The context of the latest call: what an isolated plugin turns on or off is the plugin's,
    /// not a call's, so a change it makes after its call answered goes through this one.
    latest: Arc<Mutex<Option<HostContextBox>>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// A call in flight, forgotten when dropped.
pub(super) struct Listening {
    key: u64,
    calls: Calls,
    progressed: Arc<Notify>,
}

impl Listening {
    /// Says the call was sent under `token`: its progress reports are those under it, those
    /// that came before included.
    pub(super) fn sent_as(&self, token: ProgressToken) {
        let mut in_flight = lock(&self.calls);
        let Some(call) = in_flight.calls.get_mut(&self.key) else {
            return;
        };
        call.token = Some(token.clone());
        let (came, early) = std::mem::take(&mut in_flight.early)
            .into_iter()
            .partition(|report| report.progress_token == token);
        in_flight.early = early;
        for report in came {
            if let Some(call) = in_flight.progressed(&token) {
                deliver(&call.context, &report);
            }
        }
    }

    /// Resolves at the call's next progress report (at once if one came since the last).
    pub(super) async fn progressed(&self) {
        self.progressed.notified().await;
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let mut in_flight = lock(&self.calls);
        in_flight.calls.remove(&self.key);
        if in_flight.calls.values().all(|c| c.token.is_some()) {
            in_flight.early.clear();
        }
    }
}

impl Relay {
    /// The relay of server `server`'s connection.
    pub(super) fn new(server: &str) -> Self {
        Self {
            server: server.into(),
            calls: Calls::default(),
            next: Arc::default(),
            tools_changed: Arc::default(),
            updates: Arc::default(),
            latest: Arc::default(),
        }
    }

    /// Sends the server's resource updates to `updates` from now on, whether a call is in
    /// flight or not.
    pub(super) fn updates_to(&self, updates: ResourceUpdates) {
        *lock(&self.updates) = Some(updates);
    }

    /// Signalled each time the server says its tool list changed.
    pub(super) fn tools_changed(&self) -> Arc<Notify> {
        Arc::clone(&self.tools_changed)
    }

    /// How many calls are in flight.
    pub(super) fn in_flight(&self) -> usize {
        lock(&self.calls).calls.len()
    }

    /// Counts a call of `context` as in flight until the guard is dropped; from before it is
    /// sent, so what the server sends at once is not missed.
    pub(super) fn listen(&self, context: HostContextBox) -> Listening {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let progressed = Arc::new(Notify::new());
        *lock(&self.latest) = Some(context.clone());
        lock(&self.calls).calls.insert(
            key,
            Call {
                context,
                token: None,
                progressed: Arc::clone(&progressed),
            },
        );
        Listening {
            key,
            calls: Arc::clone(&self.calls),
            progressed,
        }
    }

    /// A context of the calling session, when the calls in flight leave no doubt which it is;
    /// otherwise why not.
    fn caller(&self) -> Result<HostContextBox, String> {
        let calls = &lock(&self.calls).calls;
        let mut contexts = calls.values().map(|c| &c.context);
        let Some(first) = contexts.next() else {
            return Err(format!(
                "server `{}` sent it while no call was in flight",
                self.server
            ));
        };
        let session = first.session().into_option();
        if calls.len() == 1
            || session.is_some() && contexts.all(|c| c.session().into_option() == session)
        {
            return Ok(first.clone());
        }
        Err(format!(
            "server `{}` sent it while {} calls from different sessions were in flight, and \
             nothing in it says which one it belongs to",
            self.server,
            calls.len()
        ))
    }

    /// Hands a progress report to the call whose token it carries, or keeps it until that
    /// call's token is known ([`Listening::sent_as`]) while a call's is not.
    fn deliver_progress(&self, params: &ProgressNotificationParam) {
        let mut in_flight = lock(&self.calls);
        if let Some(call) = in_flight.progressed(&params.progress_token) {
            deliver(&call.context, params);
        } else if in_flight.calls.values().any(|c| c.token.is_none())
            && in_flight.early.len() < EARLY_REPORTS
        {
            in_flight.early.push(params.clone());
        }
    }

    /// Hands a log message to the calling session, or keeps it in the host's log.
    fn deliver_log(&self, params: &LoggingMessageNotificationParam) {
        match self.caller() {
            Ok(context) => context.log(
                level_number(params.level),
                params
                    .logger
                    .as_ref()
                    .map_or(ROption::RNone, |l| ROption::RSome(l.as_str().into())),
                params.data.to_string().into(),
            ),
            Err(reason) => {
                tracing::info!(server = %self.server, "log message kept here ({reason}): {}", params.data);
            }
        }
    }

    /// Writes an isolated plugin's log event to the host's log under the plugin's name: in the
    /// span of the call whose progress token it carries (or of the only call in flight, when
    /// the token is not known yet), through that call's context; outside any call's span when
    /// it carries none (the plugin logged outside a call).
    fn deliver_plugin_log(&self, params: &serde_json::Value) {
        let Some(log) = crate::call::wire::plugin_log_of(params) else {
            tracing::debug!(server = %self.server, "a plugin log event that does not read: {params}");
            return;
        };
        let context = log.token.as_ref().and_then(|token| {
            let in_flight = lock(&self.calls);
            let by_token = in_flight
                .calls
                .values()
                .find(|c| c.token.as_ref() == Some(token));
            // A call's event that came before its token was known: the only call is its.
            let only = || {
                let mut calls = in_flight.calls.values();
                calls.next().filter(|_| calls.next().is_none())
            };
            by_token.or_else(only).map(|call| call.context.clone())
        });
        let event = log.event(&self.server);
        match context {
            Some(context) => context.plugin_event(event),
            None => crate::observe::plugin_logs::emit(&self.server, event),
        }
    }

    /// Tells the host's subscribers that `uri` changed: where [`Relay::updates_to`] said, else
    /// through the context of a call in flight (the host's updates are shared by every
    /// session); with neither, the change stays in the log.
    fn deliver_resource_updated(&self, uri: &str) {
        if let Some(updates) = lock(&self.updates).clone() {
            updates(uri.to_owned());
            return;
        }
        let context = lock(&self.calls)
            .calls
            .values()
            .next()
            .map(|call| call.context.clone());
        match context {
            Some(context) => context.resource_updated(uri.into()),
            None => {
                tracing::info!(server = %self.server, "resource {uri} changed while no call was in flight: not told");
            }
        }
    }

    /// The calling request's context that `extensions` were tagged with as the message was
    /// read, or why there is none.
    fn tagged(&self, extensions: &Extensions) -> Result<HostContextBox, String> {
        match extensions.get::<CallingContext>() {
            Some(CallingContext(Ok(context))) => Ok(context.clone()),
            Some(CallingContext(Err(reason))) => Err(reason.to_string()),
            None => self.caller(),
        }
    }

    /// Sends the request `method` with `params` to the calling client (the one `extensions`
    /// name) and reads its answer.
    async fn ask<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
        extensions: &Extensions,
    ) -> Result<T, ErrorData> {
        let refused = |reason: String| {
            ErrorData::internal_error(format!("cannot forward {method}: {reason}"), None)
        };
        let context = self.tagged(extensions).map_err(refused)?;
        let params = serde_json::to_string(params).map_err(|e| refused(e.to_string()))?;
        match context.request(method.into(), params.into()).await {
            RResult::ROk(answer) => serde_json::from_str(&answer)
                .map_err(|e| refused(format!("the client's answer does not read as one: {e}"))),
            RResult::RErr(error) => Err(refused(error.message.into_string())),
        }
    }
}

impl ClientHandler for Relay {
    fn get_info(&self) -> ClientInfo {
        let mut info = ClientInfo::default();
        // Under 2026-07-28 a server asks for input with results rather than requests, which
        // the relay does not carry: speak the version whose requests it does.
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info.capabilities = ClientCapabilities::builder()
            .enable_roots()
            .enable_sampling()
            .enable_elicitation()
            .build();
        info
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.ask("sampling/createMessage", &params, &context.extensions)
            .await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.ask("elicitation/create", &params, &context.extensions)
            .await
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.ask("roots/list", &serde_json::json!({}), &context.extensions)
            .await
    }

    /// An isolated plugin's child asking for several inputs at once
    /// ([`crate::call::wire::ASK_METHOD`]): asked of the calling request as one; that its
    /// call become a task ([`crate::call::wire::TASK_METHOD`]); or that its plugin turned
    /// a contribution on or off ([`crate::call::wire::AVAILABILITY_METHOD`]).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, ErrorData> {
        use crate::call::wire::{ASK_METHOD, AVAILABILITY_METHOD, TASK_METHOD};
        if ![ASK_METHOD, TASK_METHOD, AVAILABILITY_METHOD].contains(&request.method.as_str()) {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("a server may not send `{}` to this host", request.method),
                None,
            ));
        }
        let refused = |reason: String| {
            ErrorData::internal_error(format!("cannot ask for input: {reason}"), None)
        };
        let tagged = self.tagged(&context.extensions);
        if request.method == AVAILABILITY_METHOD {
            let caller = tagged
                .or_else(|reason| lock(&self.latest).clone().ok_or(reason))
                .map_err(refused)?;
            let params = request.params.unwrap_or_default();
            let kind = params["kind"].as_str().unwrap_or_default();
            let name = params["name"].as_str().unwrap_or_default();
            let available = params["available"].as_bool().unwrap_or(true);
            caller.set_available(kind.into(), name.into(), available);
            return Ok(CustomResult(serde_json::json!({})));
        }
        let caller = tagged.map_err(refused)?;
        if request.method == TASK_METHOD {
            // Resolves at once unless the call becomes a task, which ends it (and the child's).
            caller.run_as_task().await;
            return Ok(CustomResult(serde_json::json!({})));
        }
        let requests = request.params.unwrap_or_default().to_string();
        match caller.ask(requests.into()).await {
            RResult::ROk(answers) => serde_json::from_str(&answers)
                .map(CustomResult)
                .map_err(|e| refused(format!("the answers do not read as JSON: {e}"))),
            RResult::RErr(error) => Err(refused(error.message.into_string())),
        }
    }
}

/// Hands the progress report `params` to the call of `context`.
fn deliver(context: &HostContextBox, params: &ProgressNotificationParam) {
    context.progress(
        params.progress,
        params.total.into(),
        params.message.clone().map(RString::from).into(),
    );
}

/// The calling request a message from the server belongs to, or why none is known; put in the
/// message's extensions as it is read.
#[derive(Clone)]
struct CallingContext(Result<HostContextBox, Arc<str>>);

/// A transport that hands the server's progress reports and log messages to the calling
/// request as they are read (before the call's answer, which may end the call, is read), and
/// tags each request from the server with its [`CallingContext`].
pub(super) struct Tagged<T> {
    inner: T,
    relay: Relay,
}

impl<T> Tagged<T> {
    /// `inner`, tagged by `relay`.
    pub(super) fn new(inner: T, relay: Relay) -> Self {
        Self { inner, relay }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Tagged<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut message = self.inner.receive().await?;
        match &mut message {
            JsonRpcMessage::Request(request) => {
                let caller = CallingContext(self.relay.caller().map_err(Arc::from));
                request.request.extensions_mut().insert(caller);
            }
            JsonRpcMessage::Notification(n) => match &n.notification {
                ServerNotification::ProgressNotification(p) => {
                    self.relay.deliver_progress(&p.params);
                }
                ServerNotification::LoggingMessageNotification(l) => {
                    self.relay.deliver_log(&l.params);
                }
                ServerNotification::ResourceUpdatedNotification(u) => {
                    self.relay.deliver_resource_updated(&u.params.uri);
                }
                ServerNotification::CustomNotification(c)
                    if c.method == crate::call::wire::PLUGIN_LOG_METHOD =>
                {
                    self.relay
                        .deliver_plugin_log(c.params.as_ref().unwrap_or(&serde_json::Value::Null));
                }
                _ => {}
            },
            _ => {}
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi_stable::{
        sabi_trait::TD_Opaque,
        std_types::{RArc, RStr, RVec},
    };
    use async_ffi::{FfiFuture, FutureExt as _};
    use plugin_abi::{ErrorKind, FfiError, HostContext};

    /// A call's context that keeps the progress it is told of.
    #[derive(Clone, Default)]
    struct Progress(Arc<Mutex<Vec<f64>>>);

    impl HostContext for Progress {
        fn log(&self, _level: u8, _logger: ROption<RString>, _data_json: RString) {}

        fn progress(&self, progress: f64, _total: ROption<f64>, _message: ROption<RString>) {
            lock(&self.0).push(progress);
        }

        fn request(
            &self,
            method: RStr<'_>,
            _params_json: RString,
        ) -> FfiFuture<RResult<RString, FfiError>> {
            let error = FfiError::new(ErrorKind::Tool, format!("no client for {method}"));
            async move { RResult::RErr(error) }.into_ffi()
        }

        fn active_toolsets(&self) -> RVec<RString> {
            RVec::new()
        }

        fn client_capabilities(&self) -> RString {
            "{}".into()
        }
    }

    fn context(progress: &Progress) -> HostContextBox {
        HostContextBox::from_ptr(RArc::new(progress.clone()), TD_Opaque)
    }

    fn token(token: i64) -> ProgressToken {
        ProgressToken(rmcp::model::NumberOrString::Number(token))
    }

    fn report(under: i64, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(token(under), progress)
    }

    #[test]
    fn reports_that_come_before_the_token_is_known_reach_their_call_in_order() {
        let relay = Relay::new("quick");
        let (first, second) = (Progress::default(), Progress::default());
        let one = relay.listen(context(&first));
        let two = relay.listen(context(&second));
        relay.deliver_progress(&report(1, 0.0));
        relay.deliver_progress(&report(2, 10.0));
        relay.deliver_progress(&report(1, 50.0));
        assert!(lock(&first.0).is_empty(), "no token known yet");

        one.sent_as(token(1));
        relay.deliver_progress(&report(1, 100.0));
        assert_eq!(*lock(&first.0), [0.0, 50.0, 100.0]);
        assert!(lock(&second.0).is_empty());

        two.sent_as(token(2));
        assert_eq!(*lock(&second.0), [10.0]);
    }

    #[test]
    fn unclaimed_reports_are_dropped_once_every_call_has_its_token() {
        let relay = Relay::new("quick");
        let progress = Progress::default();
        let call = relay.listen(context(&progress));
        relay.deliver_progress(&report(9, 1.0));
        call.sent_as(token(1));
        drop(call);
        assert!(lock(&relay.calls).early.is_empty());

        let call = relay.listen(context(&progress));
        relay.deliver_progress(&report(9, 2.0));
        call.sent_as(token(9));
        assert_eq!(
            *lock(&progress.0),
            [2.0],
            "the report of the call before is gone"
        );
    }

    #[test]
    fn reports_are_not_kept_while_every_call_has_its_token() {
        let relay = Relay::new("quick");
        let call = relay.listen(context(&Progress::default()));
        call.sent_as(token(1));
        relay.deliver_progress(&report(2, 1.0));
        assert!(lock(&relay.calls).early.is_empty());
    }
}
