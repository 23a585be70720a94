//! Serve: the plugins' tools over MCP (streamable HTTP), inside an axum app.
//!
//! [`run`] binds, writes the [`ready`] file when asked (`--ready-file`), prints
//! `listening on http://HOST:PORT/PATH` to stderr, and serves until SIGINT or SIGTERM:
//!
//! - `PATH` (default `/mcp`): rmcp's streamable-HTTP service; [`handler`] answers from the tool
//!   table of each request's own URL and selection headers (see [`crate::selection`]; each
//!   query's resolution is cached, `ServeState::resolve`), built once per active set and shared,
//!   seen through the request's tool filter ([`served`]).
//!   Arguments are checked against input schemas first ([`validate`]). Resources, prompts and
//!   completions of the same URL are answered by [`contributions`]; resource subscriptions are
//!   server-wide ([`subscriptions`]), so a plugin's "this resource changed" reaches every
//!   subscribed session.
//! - `GET /healthz`, `GET /toolsets[?query]` and `GET /contributions` ([`http`]); the last two
//!   from manifests alone.
//! - Every route sits behind the front door ([`front`]): the Host/Origin guard
//!   ([`http::guard`]), the drain, the session cap, and for the MCP endpoint the body check (a
//!   body that is not a JSON-RPC message gets the JSON-RPC error naming why, [`jsonrpc`]).
//! - Connections are bounded ([`listener`]: how many, how long a client may take to send its
//!   headers or body or to read its answer; [`ConnectionLimits`]), and so are sessions
//!   ([`sessions`]: how many are open, how long one may idle (a call in flight holds it open),
//!   what each buffers and subscribes to, and how long a request to the client may wait;
//!   [`SessionLimits`]).
//!
//! Everything built from the plugins (the registry, the opened plugins, tool tables, cached
//! resolutions) is one [`generation`], swapped whole when the plugins change ([`reload`]): each
//! request is served from the generation current when it arrives, and the sessions whose lists
//! changed are told ([`listeners`]).
//!
//! At start-up only plugins with an `on_startup` event are opened. On SIGTERM or Ctrl-C the
//! server drains ([`drain`]): new requests get 503, calls in flight get up to
//! `--shutdown-grace` to finish and send their answers; then sessions end, connections close,
//! and every opened plugin is told to stop. This is the only module that knows axum and rmcp.

mod audit;
mod availability;
mod context;
mod contributions;
mod drain;
mod front;
mod generation;
mod handler;
pub(crate) mod http;
mod jsonrpc;
mod listener;
mod listeners;
mod queue;
mod ready;
mod reload;
pub(crate) mod rounds;
mod served;
mod sessions;
pub(crate) mod stdio;
mod subscriptions;
mod tasks;
mod validate;

use std::{borrow::Cow, collections::HashMap, net::SocketAddr, sync::Arc, time::Duration};

use arc_swap::ArcSwap;
use axum::{
    Router,
    extract::DefaultBodyLimit,
    http::{HeaderMap, HeaderName},
    routing::get,
};
use rmcp::{
    model::{Implementation, ServerCapabilities, ServerConfig},
    transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService},
};
use tokio_util::sync::CancellationToken;

pub(crate) use listener::ConnectionLimits;
pub use ready::Ready;
pub(crate) use sessions::SessionLimits;

use crate::{
    auth::{AuthOptions, Authenticator, Bound},
    build::Builder,
    providers::ProviderOpener,
    registry::Registry,
    reload::{Source, Triggers},
    selection::{self, Query, ToolFilter},
};
use generation::Generation;

/// How to serve: a plain value, built from the command line by `crate::cli::args` or by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Options {
    /// The address to bind (a name, an IP, or a bracketed IPv6 address).
    pub(crate) host: String,
    /// The port to bind; 0 picks a free one.
    pub(crate) port: u16,
    /// The path of the MCP endpoint.
    pub(crate) path: String,
    /// The selection a URL that selects nothing gets.
    pub(crate) fallback: Option<Query>,
    /// The tools any request may be shown at most; URLs and headers narrow inside them.
    pub(crate) tool_bounds: ToolFilter,
    /// The server name clients see (`serverInfo.name`).
    pub(crate) name: String,
    /// Whether the host's own `list_server_toolsets` tool is served.
    pub(crate) toolsets_tool: bool,
    /// Serve without sessions, with JSON answers.
    pub(crate) stateless: bool,
    /// Further `Host` names the server answers to.
    pub(crate) allowed_hosts: Vec<String>,
    /// Browser origins allowed to call the server.
    pub(crate) allowed_origins: Vec<String>,
    /// Where to say, once listening, where the server listens.
    pub(crate) ready_file: Option<std::path::PathBuf>,
    /// The bounds on sessions and on what each holds.
    pub(crate) sessions: SessionLimits,
    /// The bounds on connections.
    pub(crate) connections: ConnectionLimits,
    /// How long calls in flight may run on after a shutdown signal.
    pub(crate) shutdown_grace: Duration,
    /// Whether this serves an isolated plugin's parent: each call's `Context` answers for the
    /// caller the parent names, and each result says what the tool answered
    /// ([`crate::call::wire`]).
    pub(crate) for_parent: bool,
    /// Who may call (`crate::auth`).
    pub(crate) auth: AuthOptions,
}

impl Default for Options {
    /// Loopback, port 4040, `/mcp`, the host's tool on, sessions on.
    fn default() -> Self {
        Self {
            host: "127.0.0.1".to_owned(),
            port: 4040,
            path: "/mcp".to_owned(),
            fallback: None,
            tool_bounds: ToolFilter::default(),
            name: "reactor-mcp-server".to_owned(),
            toolsets_tool: true,
            stateless: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            ready_file: None,
            sessions: SessionLimits::default(),
            connections: ConnectionLimits::default(),
            for_parent: false,
            shutdown_grace: SHUTDOWN_GRACE,
            auth: AuthOptions::default(),
        }
    }
}

/// The largest request body accepted (4 MiB); larger ones get 413.
pub(crate) const MAX_REQUEST_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How many distinct URL queries (with their selection headers) keep their resolution cached;
/// later ones are resolved anew on every request (the cache cannot be grown without bound by a
/// client inventing queries).
const RESOLVED_QUERIES: usize = 256;

/// How long calls in flight may run on after a shutdown signal, by default.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long connections may take to close once the calls have ended (or the grace is over).
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ServeError {
    /// The options do not make sense.
    #[error("{0}")]
    Options(String),
    /// The address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address asked for.
        address: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The authentication options cannot be used (a keys file that does not read, ...).
    #[error("{0}")]
    Auth(String),
    /// The ready file could not be written.
    #[error("cannot write the ready file {}: {source}", path.display())]
    ReadyFile {
        /// The file asked for.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The server failed while running.
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves `registry`'s plugins as `args` say, until SIGINT or SIGTERM; with a `source`, a new
/// generation each time its plugins change ([`crate::reload`]).
pub(crate) async fn run(
    registry: Arc<Registry>,
    args: Options,
    source: Option<Source>,
) -> Result<(), ServeError> {
    let path = check_path(&args.path)?;
    args.auth
        .check_bind(&args.host)
        .map_err(ServeError::Options)?;
    let auth = Authenticator::new(&args.auth, &path)
        .map_err(|e| ServeError::Auth(e.to_string()))?
        .map(Arc::new);
    if let Some(oauth) = auth.as_ref().and_then(|a| a.oauth()) {
        tokio::spawn(Arc::clone(oauth.jwks()).keep_fresh(oauth.jwks_refresh()));
    }
    let sessions_cancel = CancellationToken::new();
    let (state, _reloading) = start(registry, &args, source).await?;
    if let Some(store) = auth.as_ref().and_then(|a| a.key_store()) {
        tokio::spawn(crate::auth::store::KeyStore::watch(
            Arc::clone(store),
            sessions_cancel.clone(),
        ));
    }
    let drain = Arc::new(drain::Drain::default());
    let front = front_door(
        Arc::clone(&state),
        &args,
        &path,
        sessions_cancel.clone(),
        Arc::clone(&drain),
        auth,
    );

    let host = crate::util::loopback::unbracketed(&args.host);
    let listener = tokio::net::TcpListener::bind((host, args.port))
        .await
        .map_err(|source| ServeError::Bind {
            address: format!("{}:{}", args.host, args.port),
            source,
        })?;
    let address: SocketAddr = listener.local_addr()?;
    if address.ip().is_unspecified() && args.allowed_hosts.is_empty() {
        tracing::warn!(
            "listening on every interface, but only loopback Host headers are accepted: \
             add --allowed-host NAME for the names clients use"
        );
    }
    if let Some(file) = &args.ready_file {
        Ready::new(address, &path)
            .write(file)
            .map_err(|source| ServeError::ReadyFile {
                path: file.clone(),
                source,
            })?;
    }
    eprintln!("listening on http://{address}{path}");

    let closing = CancellationToken::new();
    let mut server = tokio::spawn(listener::serve(
        listener,
        front,
        args.connections,
        closing.clone(),
    ));
    shutdown_signal().await;
    let grace = args.shutdown_grace;
    tracing::info!(
        "shutting down: refusing new requests, {} in flight get up to {} s to finish",
        drain.in_flight(),
        grace.as_secs()
    );
    drain.start();
    if tokio::time::timeout(grace, drain.settled()).await.is_err() {
        tracing::warn!(
            "{} requests still running after {} s (--shutdown-grace); stopping anyway",
            drain.in_flight(),
            grace.as_secs()
        );
    }
    sessions_cancel.cancel();
    closing.cancel();
    if tokio::time::timeout(CLOSE_GRACE, &mut server)
        .await
        .is_err()
    {
        tracing::debug!("connections still open after {CLOSE_GRACE:?}; closing them");
        server.abort();
    }
    stop(state.generation().builder()).await;
    Ok(())
}

/// The state serving `registry` as `args` say, once the plugins that asked to be opened at
/// start-up are, with resource updates dispatched and, with a `source`, reloading going (while
/// the [`reload::Reloading`] lives).
async fn start(
    registry: Arc<Registry>,
    args: &Options,
    source: Option<Source>,
) -> Result<(Arc<ServeState>, Option<reload::Reloading>), ServeError> {
    let (triggers, receiver) = Triggers::channel();
    let opener = match source {
        Some(_) => ProviderOpener::relisting(triggers.clone()),
        None => ProviderOpener::default(),
    };
    let builder = Arc::new(Builder::with_opener(registry, Arc::new(opener)));
    let opening = Arc::clone(&builder);
    tokio::task::spawn_blocking(move || opening.open_startup_plugins())
        .await
        .map_err(|e| ServeError::Io(std::io::Error::other(e)))?;
    let sealer = rounds::Sealer::from_env().map_err(ServeError::Options)?;
    let (state, updates, availability) = ServeState::new(builder, args, sealer);
    let state = Arc::new(state);
    tokio::spawn(availability::apply_changes(
        Arc::clone(&state),
        availability,
    ));
    tokio::spawn(subscriptions::dispatch(
        Arc::clone(&state.subscriptions),
        updates,
    ));
    let reloading =
        source.map(|source| reload::start(Arc::clone(&state), source, triggers, receiver));
    Ok((state, reloading))
}

/// Tells every opened plugin the host is stopping.
async fn stop(builder: &Arc<Builder>) {
    let builder = Arc::clone(builder);
    let _ = tokio::task::spawn_blocking(move || builder.stop_all()).await;
    tracing::info!("stopped");
}

/// What every request handler shares.
#[derive(Debug)]
pub(crate) struct ServeState {
    /// The generation requests are served from; swapped whole when the plugins change.
    current: ArcSwap<Generation>,
    fallback: Option<Query>,
    /// The operator's tool bounds.
    bounds: ToolFilter,
    toolsets_tool: bool,
    /// See [`Options::for_parent`].
    for_parent: bool,
    info: ServerConfig,
    /// The bounds on sessions.
    limits: SessionLimits,
    /// Every session's resource subscriptions.
    subscriptions: Arc<subscriptions::ServerHub>,
    /// Where plugins say a resource changed; [`subscriptions::dispatch`] sends it on.
    updates: subscriptions::Updates,
    /// The sessions and streams to tell when their lists change.
    listeners: Arc<listeners::Listeners>,
    /// Whether sessions are kept (not `--stateless`): only then is a session told anything.
    sessions: bool,
    /// Where plugins turn their tools and prompts on and off ([`availability`]).
    availability: availability::Changes,
    /// Held while a new generation is made from the current one (a scan, a plugin turning
    /// something off), so that one never builds on a generation another replaced meanwhile.
    changing: tokio::sync::Mutex<()>,
    /// Seals the state of 2026-07-28 input-required results.
    sealer: rounds::Sealer,
    /// The calls run as tasks (the tasks extension), server-wide: a task outlives the request,
    /// and the session (none under 2026-07-28), that created it.
    tasks: tasks::Tasks,
}

impl ServeState {
    /// What `GET /toolsets` and `list_server_toolsets` answer for `resolution` in
    /// `generation`: the manifests' view, the generation, and the state of opened plugins'
    /// processes; to a caller, only the toolsets it may use are listed.
    pub(crate) fn toolsets_report(
        &self,
        generation: &Generation,
        resolution: &crate::selection::Resolution,
        caller: Option<&crate::auth::Identity>,
    ) -> crate::reports::ToolsetsReport {
        let mut report = crate::reports::ToolsetsReport::new(
            generation.registry(),
            resolution,
            self.toolsets_tool,
        )
        .with_generation(generation.info());
        report.processes = generation.builder().processes();
        report.failed = failed_plugins(generation);
        let registry = generation.registry();
        report.off = generation.hidden().report(registry, |plugin| {
            caller.is_none_or(|c| c.bound.sees_plugin(registry, plugin))
        });
        if let Some(caller) = caller {
            // A caller learns of no plugin outside its bound: rows, processes and conflicts
            // are those of plugins with a toolset it may use.
            let visible = |plugin: &str| caller.bound.sees_plugin(generation.registry(), plugin);
            report
                .toolsets
                .retain(|t| caller.bound.allows_toolset(&t.name));
            report.processes.retain(|p| visible(&p.plugin));
            report.failed.retain(|f| visible(&f.plugin));
            report
                .conflicts
                .retain(|c| visible(&c.kept) && visible(&c.shadowed));
        }
        report
    }

    /// `GET /contributions` on `generation`; to a caller, only the tools it may be served
    /// (of toolsets it may use, read-only ones if it is bound to those, as their extensions
    /// leave them) with every extension applied to them, and the pending extensions of plugins
    /// it may use.
    pub(crate) fn contributions_report(
        generation: &Generation,
        caller: Option<&crate::auth::Identity>,
    ) -> crate::reports::ContributionsReport {
        let registry = generation.registry();
        let mut report = crate::reports::ContributionsReport::new(registry);
        if let Some(caller) = caller {
            let bound = &caller.bound;
            report.tools = std::mem::take(&mut report.tools)
                .into_iter()
                .zip(registry.tools())
                .filter(|(row, tool)| {
                    let declared = registry.extensions().apply_to(&tool.decl);
                    bound.allows_tool(&row.toolset, declared.annotations.read_only == Some(true))
                })
                .map(|(row, _)| row)
                .collect();
            report
                .pending
                .retain(|p| bound.sees_plugin(registry, &p.extension.plugin));
        }
        report
    }

    #[allow(deprecated)] // logging is deprecated by SEP-2577, still in 2025-11-25
    /// The state, serving generation 1 over `builder`, and the receiving end of its
    /// [`subscriptions::Updates`] for [`subscriptions::dispatch`].
    fn new(
        builder: Arc<Builder>,
        args: &Options,
        sealer: rounds::Sealer,
    ) -> (
        Self,
        tokio::sync::mpsc::UnboundedReceiver<String>,
        tokio::sync::mpsc::UnboundedReceiver<availability::Change>,
    ) {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_tasks()
            .build();
        let info = ServerConfig::new(capabilities).with_server_info(Implementation::new(
            args.name.clone(),
            env!("CARGO_PKG_VERSION"),
        ));
        let (updates, receiver) = subscriptions::Updates::channel();
        let (availability, changes) = availability::Changes::channel();
        let state = Self {
            current: ArcSwap::from_pointee(Generation::first(builder, args.toolsets_tool)),
            availability,
            changing: tokio::sync::Mutex::default(),
            fallback: args.fallback.clone(),
            bounds: args.tool_bounds.clone(),
            toolsets_tool: args.toolsets_tool,
            for_parent: args.for_parent,
            info,
            limits: args.sessions,
            subscriptions: subscriptions::Hub::new(subscriptions::Bounds {
                per_session: args.sessions.max_subscriptions,
                uri_bytes: args.sessions.max_uri_bytes,
            }),
            updates,
            listeners: Arc::default(),
            sessions: !args.stateless,
            sealer,
            tasks: tasks::Tasks::new(tasks::TaskLimits {
                max_running: args.sessions.max_tasks,
                per_owner: args.sessions.max_tasks_per_session,
                ttl: args.sessions.task_ttl,
            }),
        };
        (state, receiver, changes)
    }

    /// Makes the generation after `old`, over `builder` with what plugins turned off, the
    /// current one.
    fn advance(
        &self,
        old: &Generation,
        builder: Arc<Builder>,
        hidden: availability::Hidden,
    ) -> Arc<Generation> {
        let next = Arc::new(old.next(builder, self.toolsets_tool, Arc::new(hidden)));
        self.swap(Arc::clone(&next));
        next
    }

    /// Tells the sessions whose lists differ from `old` to `next` (`code` naming the plugins
    /// whose code may differ); how many were told.
    fn announce(
        &self,
        old: &Generation,
        next: &Generation,
        code: &std::collections::BTreeSet<String>,
    ) -> usize {
        self.listeners
            .announce(old, next, code, self.fallback.as_ref(), &self.bounds)
    }

    /// The current generation: a request takes it once and is served from it to its end.
    pub(crate) fn generation(&self) -> Arc<Generation> {
        self.current.load_full()
    }

    /// Makes `next` the current generation; requests that took the previous one finish on it.
    pub(crate) fn swap(&self, next: Arc<Generation>) -> Arc<Generation> {
        self.current.swap(next)
    }

    /// The toolset that declares the tool `name` in the current generation, if a plugin does.
    pub(crate) fn toolset_of(&self, name: &str) -> Option<String> {
        self.generation()
            .registry()
            .tools()
            .iter()
            .find(|entry| entry.decl.name == name)
            .map(|entry| entry.decl.toolset.clone())
    }

    /// The resolution of a request's URL query and selection headers in `generation`, narrowed
    /// to the caller's `bound`.
    fn resolve(
        &self,
        generation: &Generation,
        query: &str,
        headers: &HeaderMap,
        bound: Option<&Bound>,
    ) -> Arc<served::Resolved> {
        generation.resolve(
            query,
            &selection_headers(headers),
            self.fallback.as_ref(),
            &self.bounds,
            bound,
        )
    }
}

/// [`selection::HEADER_NAMES`] as header names, made once: a lookup by name then skips parsing
/// it.
static SELECTION_HEADERS: [HeaderName; 4] = [
    HeaderName::from_static(selection::HEADER_NAMES[0]),
    HeaderName::from_static(selection::HEADER_NAMES[1]),
    HeaderName::from_static(selection::HEADER_NAMES[2]),
    HeaderName::from_static(selection::HEADER_NAMES[3]),
];

/// The values of the selection headers, a repeated one joined with commas.
fn selection_headers(headers: &HeaderMap) -> [Option<String>; 4] {
    let mut values: [Option<String>; 4] = Default::default();
    for (value, name) in values.iter_mut().zip(&SELECTION_HEADERS) {
        for given in headers.get_all(name) {
            let given = String::from_utf8_lossy(given.as_bytes());
            match value {
                None => *value = Some(given.into_owned()),
                Some(all) => {
                    all.push(',');
                    all.push_str(&given);
                }
            }
        }
    }
    values
}

/// The resolution cache's key: the query alone when no selection header is present and no
/// caller is bounded, else the query and each header's value on lines of their own (`\0` for an
/// absent one), then the bound's key on a line of its own. Neither a query nor a header value
/// can hold a newline or a NUL, so distinct requests never share a key.
fn cache_key<'a>(
    query: &'a str,
    headers: &[Option<String>; 4],
    bound: Option<&Bound>,
) -> Cow<'a, str> {
    if headers.iter().all(Option::is_none) && bound.is_none() {
        return Cow::Borrowed(query);
    }
    let mut key = query.to_owned();
    for value in headers {
        key.push('\n');
        key.push_str(value.as_deref().unwrap_or("\0"));
    }
    if let Some(bound) = bound {
        key.push('\n');
        key.push_str(&bound.cache_key());
    }
    Cow::Owned(key)
}

/// The app: the MCP endpoint, `/healthz`, `/toolsets` and `/contributions`, behind the front
/// door ([`front`]).
fn front_door(
    state: Arc<ServeState>,
    args: &Options,
    path: &str,
    cancel: CancellationToken,
    drain: Arc<drain::Drain>,
    auth: Option<Arc<Authenticator>>,
) -> front::Front {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(cancel.clone())
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES)
        // The front door checks Host and Origin on every route, this one included.
        .disable_allowed_hosts()
        .disable_allowed_origins();
    if args.stateless {
        config = config
            .with_legacy_session_mode(false)
            .with_json_response(true);
    }
    let sessions = sessions::Sessions::new(&args.sessions);
    tokio::spawn(sessions::Sessions::expire_idle(
        Arc::downgrade(&sessions),
        cancel,
    ));
    let factory_state = Arc::clone(&state);
    let mcp = StreamableHttpService::new(
        move || Ok(handler::Handler::new(Arc::clone(&factory_state))),
        Arc::clone(&sessions),
        config,
    );
    let router = Router::new()
        .route("/healthz", {
            // Open to anyone: with authentication on, it names no plugin.
            let detailed = auth.is_none();
            get(move |state| http::healthz(state, detailed))
        })
        .route("/toolsets", get(http::toolsets))
        .route("/contributions", get(http::contributions))
        .route_service(path, mcp)
        .with_state(Arc::clone(&state))
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY_BYTES));
    front::Front {
        router,
        policy: Arc::new(http::AccessPolicy::new(
            &args.host,
            &args.allowed_hosts,
            &args.allowed_origins,
        )),
        drain,
        sessions: (!args.stateless).then_some(sessions),
        mcp_path: path.into(),
        auth,
        state: Arc::clone(&state),
        body: jsonrpc::BodyLimits {
            max_bytes: MAX_REQUEST_BODY_BYTES,
            idle: args.connections.idle_timeout,
        },
    }
}

/// The declared tools whose manifest's input schema mirrors an argument into a header, as
/// served, by name.
fn header_tools(registry: &Registry) -> HashMap<String, rmcp::model::Tool> {
    registry
        .tools()
        .iter()
        .map(|entry| registry.extensions().apply_to(&entry.decl))
        .filter(mirrors_a_header)
        .map(|decl| (decl.name.clone(), served::mcp_tool(&decl)))
        .collect()
}

/// Whether a property of the tool's input schema says `x-mcp-header`.
fn mirrors_a_header(decl: &plugin_manifest::ToolDecl) -> bool {
    decl.input_schema
        .as_ref()
        .and_then(|schema| schema.get("properties"))
        .and_then(serde_json::Value::as_object)
        .is_some_and(|properties| {
            properties
                .values()
                .any(|property| property.get("x-mcp-header").is_some())
        })
}

/// The MCP path, checked: it starts with `/` and is not one of the other routes.
fn check_path(path: &str) -> Result<String, ServeError> {
    let path = path.trim();
    if !path.starts_with('/') || path.contains(['?', '#', '{', '}', '*']) {
        return Err(ServeError::Options(format!(
            "--path `{path}` must be a plain URL path starting with `/`"
        )));
    }
    if ["/healthz", "/toolsets", "/contributions"].contains(&path)
        || path.starts_with("/.well-known/")
    {
        return Err(ServeError::Options(format!(
            "--path `{path}` is taken by the server's own route"
        )));
    }
    Ok(path.to_owned())
}

/// The plugins of `generation` that failed to open, each with why.
pub(super) fn failed_plugins(generation: &Generation) -> Vec<crate::reports::FailedPlugin> {
    generation
        .builder()
        .failures()
        .into_iter()
        .map(|(plugin, error)| crate::reports::FailedPlugin {
            plugin,
            reason: error.to_string(),
        })
        .collect()
}

/// Resolves on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for Ctrl-C: {error}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!("cannot listen for SIGTERM: {error}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_differing_in_a_selection_header_do_not_share_a_cache_key() {
        let mut headers = HeaderMap::new();
        let none = selection_headers(&headers);
        assert_eq!(cache_key("a", &none, None), "a");
        headers.append("X-MCP-Tools", "echo".parse().unwrap());
        headers.append("x-mcp-tools", "add".parse().unwrap());
        let tools = selection_headers(&headers);
        assert_eq!(tools[1].as_deref(), Some("echo,add"));
        let mut empty = HeaderMap::new();
        empty.append("x-mcp-tools", "".parse().unwrap());
        let bound = Bound::new(&["benchmarks"], false);
        let keys = [
            cache_key("a", &none, None),
            cache_key("a", &tools, None),
            cache_key("a", &selection_headers(&empty), None),
            cache_key("b", &tools, None),
            cache_key("a", &none, Some(&bound)),
            cache_key("a", &tools, Some(&bound)),
            cache_key("a", &none, Some(&Bound::new(&["*"], false))),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn the_path_must_be_a_plain_path_of_its_own() {
        assert_eq!(check_path("/mcp").unwrap(), "/mcp");
        assert_eq!(check_path("/a/b").unwrap(), "/a/b");
        assert!(check_path("mcp").is_err());
        assert!(check_path("/mcp?x").is_err());
        assert!(check_path("/{x}").is_err());
        assert!(check_path("/toolsets").is_err());
    }
}
