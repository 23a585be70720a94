//! Sessions: how many may be open, when an idle one is closed, and what each may hold.
//!
//! [`Sessions`] is the session manager rmcp's streamable-HTTP service runs on: it wraps rmcp's
//! `LocalSessionManager` (which keeps each session's worker, its streams and their buffers) and
//! adds what rmcp leaves out:
//!
//! - **A cap.** At most [`SessionLimits::max_sessions`] sessions are open at once. The
//!   front door's [`refuse_when_full`] answers an `initialize` beyond it with HTTP 503 and a
//!   JSON-RPC error naming the limit; earlier sessions are untouched.
//! - **Idle expiry that a call in flight holds off.** rmcp's own keep-alive ends a session after
//!   some time without messages, even while a call is still running (the client then gets an
//!   empty stream). It is turned off here. Instead every stream the session answers on (a
//!   request's stream, a standalone `GET` stream, a resumed one) counts as use while it is open,
//!   and a session is closed only once it has had no open stream for
//!   [`SessionLimits::idle_timeout`]. A long call keeps its stream, so it gets its answer;
//!   a client that went away leaves no stream, so its session is closed and its memory freed.
//!   A closed session answers 404, so a client knows to start a new one.
//!
//! rmcp bounds what a session buffers for a stream no client is reading (a standalone stream
//! while none is connected, or a request's stream kept for a resume) by its channel capacity,
//! set here from [`SessionLimits::buffered_messages`]. The other limits in [`SessionLimits`]
//! (subscriptions, URI length, the timeout on requests to the client) are applied by
//! [`crate::serve::mcp::subscriptions`] and [`crate::serve::host_context`].

use std::{
    cell::Cell,
    collections::HashMap,
    future::Future,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use super::takeovers::Takeovers;
use crate::observe::metrics;
use crate::serve::mcp::direct::{DirectSessions, Slot};
use crate::shared::sessions::SharedSessions;
use crate::util::lock::lock;
use axum::{
    body::Body,
    extract::Request,
    http::{Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use futures::{Stream, StreamExt};
use rmcp::{
    model::{ClientJsonRpcMessage, GetExtensions as _, ServerJsonRpcMessage},
    transport::{
        WorkerTransport,
        common::server_side_http::SessionId,
        streamable_http_server::session::{
            RestoreOutcome, ServerSseMessage, SessionManager,
            local::{LocalSessionManager, LocalSessionManagerError, LocalSessionWorker},
        },
    },
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The bounds on sessions and on what each holds; `crate::cli::args` gives each a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SessionLimits {
    /// The most sessions open at once (`--max-sessions`).
    pub(crate) max_sessions: usize,
    /// How long a session may go without an open stream before it is closed
    /// (`--session-idle-timeout`).
    pub(crate) idle_timeout: Duration,
    /// The messages kept per stream for a client that is not reading it (`--session-buffer`).
    pub(crate) buffered_messages: usize,
    /// The most resource subscriptions one session may hold (`--max-subscriptions`).
    pub(crate) max_subscriptions: usize,
    /// The longest URI, in bytes, a session may subscribe to (`--max-uri-length`).
    pub(crate) max_uri_bytes: usize,
    /// How long a request the server sends a client (sampling, elicitation, roots) may wait
    /// for its answer (`--client-request-timeout`).
    pub(crate) client_request_timeout: Duration,
    /// The most tool calls running as tasks at once on the server (`--max-tasks`).
    pub(crate) max_tasks: usize,
    /// The most tool calls running as tasks at once per session, or per caller without
    /// sessions (`--max-tasks-per-session`).
    pub(crate) max_tasks_per_session: usize,
    /// The most tool calls running as tasks at once per authenticated caller, across its
    /// sessions (`--max-tasks-per-caller`).
    pub(crate) max_tasks_per_caller: usize,
    /// How long a task may run, and how long its result is kept once it ended (`--task-ttl`).
    pub(crate) task_ttl: Duration,
}

impl SessionLimits {
    /// The defaults: a thousand sessions of ~60 kB idle each are ~60 MB; five minutes idle is
    /// rmcp's own keep-alive; sixteen buffered messages is rmcp's channel capacity; a hundred
    /// subscriptions of at most 2 KiB (the practical URL limit of browsers and proxies) bound a
    /// session's subscriptions to ~200 kB; five minutes leaves a person time to answer an
    /// elicitation and a model time to sample; a thousand tasks, sixteen per session and a hundred
    /// per caller (so no one key holds them all), kept five minutes (rmcp's default TTL), bound
    /// what tasks hold as sessions are bound.
    pub(crate) const DEFAULT: Self = Self {
        max_sessions: 1000,
        idle_timeout: Duration::from_secs(300),
        buffered_messages: 16,
        max_subscriptions: 100,
        max_uri_bytes: 2048,
        client_request_timeout: Duration::from_secs(300),
        max_tasks: 1000,
        max_tasks_per_session: 16,
        max_tasks_per_caller: 100,
        task_ttl: Duration::from_secs(300),
    };
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Why the session manager failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError {
    /// As many sessions as allowed are open.
    #[error(
        "the server is full: {max} sessions are open, the most --max-sessions allows; \
         try again later"
    )]
    Full {
        /// The limit.
        max: usize,
    },
    /// The session is closed or was never opened.
    #[error("session not found: {0}")]
    NotFound(SessionId),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// How one session is used: its open streams, since when it has had none, and who opened it.
#[derive(Debug)]
struct Usage {
    streams: usize,
    idle_since: Instant,
    /// When it was opened.
    opened: Instant,
    /// The caller that opened it (`crate::auth::Identity::owner`), when authentication is on.
    owner: Option<String>,
}

/// Every open session's [`Usage`], shared with the guards of their streams.
#[derive(Debug, Default)]
struct Usages(Mutex<HashMap<SessionId, Usage>>);

impl Usages {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Usage>> {
        lock(&self.0)
    }

    /// Marks `id` as used now; whether it is open.
    fn touch(&self, id: &SessionId) -> bool {
        self.lock()
            .get_mut(id)
            .map(|usage| usage.idle_since = Instant::now())
            .is_some()
    }

    /// Counts a new stream of `id`; the guard uncounts it when dropped.
    fn open_stream(self: &Arc<Self>, id: &SessionId) -> Option<StreamGuard> {
        let mut usages = self.lock();
        let usage = usages.get_mut(id)?;
        usage.streams += 1;
        Some(StreamGuard {
            usages: Arc::clone(self),
            id: SessionId::clone(id),
        })
    }

    /// Forgets the sessions without an open stream since `idle` ago, and returns them.
    fn take_idle(&self, idle: Duration, now: Instant) -> Vec<SessionId> {
        let mut usages = self.lock();
        let expired: Vec<SessionId> = usages
            .iter()
            .filter(|(_, u)| u.streams == 0 && now.duration_since(u.idle_since) >= idle)
            .map(|(id, _)| SessionId::clone(id))
            .collect();
        for id in &expired {
            usages.remove(id);
        }
        expired
    }
}

/// One open stream of a session; dropping it (the stream ended, or its client went away)
/// starts the session's idle time when it was the last.
#[derive(Debug)]
struct StreamGuard {
    usages: Arc<Usages>,
    id: SessionId,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        if let Some(usage) = self.usages.lock().get_mut(&self.id) {
            usage.streams = usage.streams.saturating_sub(1);
            usage.idle_since = Instant::now();
        }
    }
}

/// rmcp's `LocalSessionManager` with a cap on open sessions and idle expiry that open streams
/// hold off.
#[derive(Debug)]
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    max: usize,
    idle: Duration,
    /// Sessions admitted: being created, or open.
    admitted: AtomicUsize,
    usages: Arc<Usages>,
    /// The sessions of every replica, with `--redis-url`.
    shared: Option<SharedSessions>,
    /// Sessions of other replicas being taken over here.
    takeovers: Takeovers,
    /// The sessions the host answers hot requests of itself (unless `--no-hot-path`):
    /// recorded here once initialized, forgotten when they close.
    direct: Option<Arc<DirectSessions>>,
}

impl Sessions {
    /// A manager within `limits`, keeping sessions in `shared` too if given;
    /// [`Sessions::expire_idle`] must run beside it.
    pub(crate) fn new(
        limits: &SessionLimits,
        shared: Option<SharedSessions>,
        direct: Option<Arc<DirectSessions>>,
    ) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        // Idle sessions are closed by `expire_idle`, which knows about calls in flight.
        inner.session_config.keep_alive = None;
        inner.session_config.channel_capacity = limits.buffered_messages.max(1);
        Arc::new(Self {
            inner,
            max: limits.max_sessions,
            idle: limits.idle_timeout,
            admitted: AtomicUsize::new(0),
            usages: Arc::default(),
            shared,
            takeovers: Takeovers::default(),
            direct,
        })
    }

    /// Counts a request of the open session `id` that the host answers itself as a stream of
    /// it, until the guard is dropped; `None` when the session is not open.
    pub(crate) fn hold(&self, id: &str) -> Option<impl Send + Sync + 'static> {
        self.usages.open_stream(&SessionId::from(id))
    }

    /// How many sessions are open or being opened.
    pub(crate) fn count(&self) -> usize {
        self.admitted.load(Ordering::Acquire)
    }

    /// Binds the session `id` to the caller `owner` that opened it.
    pub(crate) fn bind(&self, id: &[u8], owner: String) {
        let Ok(id) = std::str::from_utf8(id) else {
            return;
        };
        if let Some(shared) = &self.shared {
            shared.bind(id, &owner);
        }
        if let Some(usage) = self.usages.lock().get_mut(id) {
            usage.owner = Some(owner);
        }
    }

    /// Whether the session `id` may be used by the caller `owner`, as
    /// [`Sessions::is_owned_by`] says; for a session another replica opened, as its record in
    /// Redis says (a record that cannot be read refuses).
    pub(crate) async fn may_use(&self, id: &[u8], owner: &str) -> bool {
        let (Some(shared), Ok(text)) = (&self.shared, std::str::from_utf8(id)) else {
            return self.is_owned_by(id, owner);
        };
        if self.usages.lock().contains_key(text) {
            return self.is_owned_by(id, owner);
        }
        match shared.owner(text).await {
            Ok(opener) => opener.is_none_or(|opener| opener == owner),
            Err(error) => {
                tracing::warn!(
                    session = text,
                    "cannot read who opened the session: {error}"
                );
                false
            }
        }
    }

    /// Whether the session `id` may be used by the caller `owner`: it is that caller's, or has
    /// no owner, or does not exist (rmcp then answers 404 itself).
    pub(crate) fn is_owned_by(&self, id: &[u8], owner: &str) -> bool {
        let Ok(id) = std::str::from_utf8(id) else {
            return true;
        };
        self.usages
            .lock()
            .get(id)
            .and_then(|usage| usage.owner.as_deref())
            .is_none_or(|opener| opener == owner)
    }

    /// How many open sessions the caller `owner` opened.
    pub(crate) fn owned_by(&self, owner: &str) -> usize {
        self.usages
            .lock()
            .values()
            .filter(|usage| usage.owner.as_deref() == Some(owner))
            .count()
    }

    /// Whether a new session would be refused.
    fn is_full(&self) -> bool {
        self.count() >= self.max
    }

    /// Takes one place for a new session, if there is one left.
    fn admit(&self) -> Result<(), SessionsError> {
        self.admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|_| {
                // Outside `refuse_when_full` (no scope) there is no one to tell.
                let _ = REFUSED.try_with(|refused| refused.set(true));
                SessionsError::Full { max: self.max }
            })
    }

    /// Starts counting the use of the session `id`, just opened (by `owner`, if known).
    fn opened(&self, id: &SessionId, owner: Option<String>) {
        let now = Instant::now();
        let usage = Usage {
            streams: 0,
            idle_since: now,
            opened: now,
            owner,
        };
        self.usages.lock().insert(SessionId::clone(id), usage);
        metrics::session_opened();
    }

    /// Forgets `id`, giving back its place; whether it was open.
    fn forget(&self, id: &SessionId) -> bool {
        if let Some(direct) = &self.direct {
            direct.remove(id);
        }
        let forgotten = self.usages.lock().remove(id);
        if let Some(usage) = &forgotten {
            self.admitted.fetch_sub(1, Ordering::AcqRel);
            metrics::session_ended(usage.opened.elapsed(), "tcp");
        }
        forgotten.is_some()
    }

    /// Closes, every so often until `cancel` or until the manager is dropped, the sessions
    /// that have had no open stream for the idle timeout.
    pub(crate) async fn expire_idle(manager: Weak<Self>, cancel: CancellationToken) {
        let Some(idle) = manager.upgrade().map(|m| m.idle) else {
            return;
        };
        let mut ticks = tokio::time::interval(tick(idle));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let Some(manager) = manager.upgrade() else {
                return;
            };
            let expired = manager.usages.take_idle(idle, Instant::now());
            for id in expired {
                if let Some(direct) = &manager.direct {
                    direct.remove(&id);
                }
                manager.admitted.fetch_sub(1, Ordering::AcqRel);
                if let Some(shared) = &manager.shared {
                    shared.forget(&id);
                }
                tracing::info!(session = %id, "closing a session idle for {idle:?}");
                if let Err(error) = manager.inner.close_session(&id).await {
                    tracing::warn!(session = %id, "cannot close an idle session: {error}");
                }
            }
        }
    }

    /// Wraps a stream of session `id` so that it counts as use while it is open.
    fn tracked<S>(
        &self,
        id: &SessionId,
        stream: S,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionsError>
    where
        S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    {
        let guard = self
            .usages
            .open_stream(id)
            .ok_or_else(|| SessionsError::NotFound(SessionId::clone(id)))?;
        Ok(stream.map(move |message| {
            let _open = &guard;
            message
        }))
    }
}

/// How often idle sessions are looked for: a quarter of the idle timeout, within 10 ms..10 s.
fn tick(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(10))
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.admit()?;
        match self.inner.create_session().await {
            Ok((id, transport)) => {
                self.opened(&id, None);
                Ok((id, transport))
            }
            Err(error) => {
                self.admitted.fetch_sub(1, Ordering::AcqRel);
                Err(error.into())
            }
        }
    }

    /// Initializes session `id`; with the hot path on, records the session for it
    /// ([`DirectSessions`]) before the answer goes out.
    async fn initialize_session(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let slot = self.direct.as_ref().map(|_| Slot::default());
        if let (Some(slot), ClientJsonRpcMessage::Request(request)) = (&slot, &mut message) {
            request.request.extensions_mut().insert(slot.clone());
        }
        let response = self
            .inner
            .initialize_session(id, message)
            .await
            .inspect_err(|_| self.takeovers.end(id, false))?;
        if let (Some(direct), Some(session)) = (&self.direct, slot.and_then(Slot::take)) {
            direct.insert(SessionId::clone(id), session);
        }
        self.usages.touch(id);
        Ok(response)
    }

    /// Whether `id` is open here; while it is being taken over, once its handshake is replayed.
    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if let Some(served) = self.takeovers.wait(id).await {
            return Ok(served && self.usages.touch(id));
        }
        Ok(self.usages.touch(id))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.takeovers.end(id, false);
        self.forget(id);
        if let Some(shared) = &self.shared {
            shared.forget(id);
        }
        Ok(self.inner.close_session(id).await?)
    }

    /// A session another replica opened, taken over here from its record in Redis (rmcp
    /// replays its `initialize`): counted as a session of this replica, bound to its opener.
    /// Other requests for it wait in [`Sessions::has_session`] until the replay is done.
    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let Some(shared) = &self.shared else {
            return Ok(RestoreOutcome::NotSupported);
        };
        let owner = shared.owner(&id).await.ok().flatten();
        self.admit()?;
        match self.inner.restore_session(SessionId::clone(&id)).await {
            Ok(RestoreOutcome::Restored(transport)) => {
                self.takeovers.begin(&id);
                self.opened(&id, owner);
                tracing::info!(session = %id, "took over a session another replica opened");
                Ok(RestoreOutcome::Restored(transport))
            }
            other => {
                self.admitted.fetch_sub(1, Ordering::AcqRel);
                Ok(other?)
            }
        }
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_stream(id, message).await?;
        self.tracked(id, stream)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.usages.touch(id);
        let accepted = self.inner.accept_message(id, message).await;
        // During a take-over the first message accepted is the replayed `initialized`.
        self.takeovers.end(id, accepted.is_ok());
        Ok(accepted?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_standalone_stream(id).await?;
        self.tracked(id, stream)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.resume(id, last_event_id).await?;
        self.tracked(id, stream)
    }
}

tokio::task_local! {
    /// Set when [`Sessions::create_session`] refused a session during the request that
    /// [`refuse_when_full`] is serving (two `initialize`s raced for the last place).
    static REFUSED: Cell<bool>;
}

/// The JSON-RPC error code of a full server (implementation-defined server error).
const SERVER_FULL: i64 = -32000;

/// The header naming a request's session.
pub(crate) const SESSION_ID: &str = "mcp-session-id";

/// A `DELETE` of a session (the client ending it): 404 for a session id that is not open, as
/// for any other request naming it; otherwise the session is closed by `next` and the answer is
/// `204 No Content` (rmcp's `202` makes clients warn that ending the session failed).
pub(crate) async fn end<F, Fut>(sessions: &Sessions, request: Request, next: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    if let Some(id) = request
        .headers()
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
    {
        let id: SessionId = id.to_owned().into();
        if !sessions.usages.touch(&id) {
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
    }
    let mut response = next(request).await;
    if response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// In front of the MCP endpoint (sessions on): an `initialize` while [`Sessions`] is full gets
/// HTTP 503 with a JSON-RPC error saying so and naming the limit; anything else goes to `next`.
/// Only a request without a session id can be an `initialize`, and only then, when the server
/// is full, is its body read here.
pub(crate) async fn refuse_when_full<F, Fut>(
    sessions: &Sessions,
    request: Request,
    next: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    if request.method() != Method::POST || request.headers().contains_key("mcp-session-id") {
        return next(request).await;
    }
    if !sessions.is_full() {
        let (response, refused) = REFUSED
            .scope(Cell::new(false), async {
                let response = next(request).await;
                (response, REFUSED.with(Cell::get))
            })
            .await;
        return if refused {
            full(sessions, Value::Null)
        } else {
            response
        };
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, crate::serve::MAX_REQUEST_BODY_BYTES).await else {
        return full(sessions, Value::Null);
    };
    let message: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    if message["method"] == "initialize" {
        let id = message.get("id").cloned().unwrap_or_default();
        return full(sessions, id);
    }
    next(Request::from_parts(parts, Body::from(bytes))).await
}

/// HTTP 503 with the JSON-RPC error of a full server, answering request `id`.
fn full(sessions: &Sessions, id: Value) -> Response {
    let message = SessionsError::Full { max: sessions.max }.to_string();
    tracing::warn!("refused a new session: {message}");
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": SERVER_FULL,
            "message": message,
            "data": {"max_sessions": sessions.max},
        },
    });
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_sessions: usize, idle: Duration) -> SessionLimits {
        SessionLimits {
            max_sessions,
            idle_timeout: idle,
            ..SessionLimits::DEFAULT
        }
    }

    #[tokio::test]
    async fn sessions_beyond_the_cap_are_refused_until_one_closes() {
        let sessions = Sessions::new(&limits(2, Duration::from_secs(60)), None, None);
        let (a, _ta) = sessions.create_session().await.unwrap();
        let (_b, _tb) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.count(), 2);
        let refused = sessions.create_session().await.err().unwrap();
        assert!(
            matches!(refused, SessionsError::Full { max: 2 }),
            "{refused}"
        );
        assert!(refused.to_string().contains("--max-sessions"));
        sessions.close_session(&a).await.unwrap();
        // Closing twice (the client's DELETE, then rmcp when the worker ends) gives back one.
        sessions.close_session(&a).await.unwrap();
        assert_eq!(sessions.count(), 1);
        assert!(!sessions.has_session(&a).await.unwrap());
        sessions.create_session().await.unwrap();
        assert_eq!(sessions.count(), 2);
    }

    #[test]
    fn only_a_session_without_open_streams_goes_idle() {
        let usages = Arc::new(Usages::default());
        let start = Instant::now();
        for id in ["busy", "idle"] {
            usages.lock().insert(
                id.into(),
                Usage {
                    streams: 0,
                    idle_since: start,
                    opened: start,
                    owner: None,
                },
            );
        }
        let stream = usages.open_stream(&"busy".into()).unwrap();
        let later = start + Duration::from_secs(10);
        assert_eq!(
            usages.take_idle(Duration::from_secs(5), later),
            vec![SessionId::from("idle")]
        );
        assert!(usages.take_idle(Duration::from_secs(5), later).is_empty());
        // The stream ends: the idle time starts then, not at the session's last request.
        drop(stream);
        let ended = Instant::now();
        assert!(
            usages
                .take_idle(Duration::from_secs(5), ended + Duration::from_secs(4))
                .is_empty()
        );
        assert_eq!(
            usages.take_idle(Duration::from_secs(5), ended + Duration::from_secs(5)),
            vec![SessionId::from("busy")]
        );
        assert!(usages.open_stream(&"busy".into()).is_none(), "forgotten");
    }

    #[test]
    fn the_tick_is_a_quarter_of_the_idle_timeout_within_bounds() {
        assert_eq!(tick(Duration::from_secs(1)), Duration::from_millis(250));
        assert_eq!(tick(Duration::from_millis(1)), Duration::from_millis(10));
        assert_eq!(tick(Duration::from_secs(300)), Duration::from_secs(10));
    }

    #[tokio::test]
    async fn an_idle_session_is_closed_and_gives_back_its_place() {
        let sessions = Sessions::new(&limits(1, Duration::from_millis(40)), None, None);
        let cancel = CancellationToken::new();
        tokio::spawn(Sessions::expire_idle(
            Arc::downgrade(&sessions),
            cancel.clone(),
        ));
        let (id, _transport) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.count(), 1);
        let started = Instant::now();
        while sessions.count() > 0 {
            assert!(started.elapsed() < Duration::from_secs(5), "never closed");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            started.elapsed() >= Duration::from_millis(30),
            "closed too early"
        );
        assert!(!sessions.has_session(&id).await.unwrap());
        cancel.cancel();
    }
}
