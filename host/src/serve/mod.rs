//! Serve: the plugins' tools over MCP, over streamable HTTP inside an axum app or over stdio.
//!
//! - [`edge`]: the HTTP edge: the accept loop, the front door (guard, drain, credentials,
//!   session cap, body check), the plain routes (`/healthz`, `/toolsets`, `/contributions`),
//!   sessions and the ready file.
//! - [`mcp`]: the MCP handler: a thin dispatcher, with one file per capability (tools,
//!   resources, prompts, completion, subscriptions, tasks, list-change notifications).
//! - [`host_context`]: the host's side of one plugin call (`plugin_api::Context`): logs,
//!   progress, requests to the client, and the input-required rounds of 2026-07-28.
//! - [`generation`]: what one generation of the plugins serves (tool tables per active set,
//!   each URL's resolution, what plugins turned off), and swapping in the next one.
//! - [`state`]: what every request handler shares; [`lifecycle`]: starting, serving until a
//!   signal, draining and stopping; [`stdio`]: one session on stdin and stdout.
//!
//! Each request is served from the generation current when it arrives, from the tool table of
//! its own URL and selection headers, built once per active set and shared. axum and rmcp are
//! used here and in the layers that speak MCP to other processes (`providers`) or check HTTP
//! credentials (`auth`).

pub(crate) mod edge;
pub(crate) mod generation;
pub(crate) mod host_context;
pub(crate) mod lifecycle;
pub(crate) mod mcp;
pub(crate) mod replicas;
mod state;
pub(crate) mod stdio;

use std::time::Duration;

pub(crate) use edge::{listener::ConnectionLimits, sessions::SessionLimits};
pub(crate) use lifecycle::run;
pub(crate) use state::ServeState;

use crate::{
    auth::AuthOptions,
    selection::{Query, ToolFilter},
};

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
    /// Whether the page at `GET /ui` is served.
    pub(crate) ui: bool,
    /// Whether the host answers `tools/call`, `tools/list` and `ping` itself
    /// ([`edge::hot`]), rather than rmcp.
    pub(crate) hot_path: bool,
    /// Serve without sessions, with JSON answers.
    pub(crate) stateless: bool,
    /// Further `Host` names the server answers to.
    pub(crate) allowed_hosts: Vec<String>,
    /// Browser origins allowed to call the server.
    pub(crate) allowed_origins: Vec<String>,
    /// Where to say, once listening, where the server listens.
    pub(crate) ready_file: Option<std::path::PathBuf>,
    /// Where to serve `GET /metrics`, if anywhere (`--metrics-addr`).
    pub(crate) metrics_addr: Option<String>,
    /// This replica's name, which its task ids start with (`--replica-id`).
    pub(crate) replica_id: Option<String>,
    /// The bounds on sessions and on what each holds.
    pub(crate) sessions: SessionLimits,
    /// The bounds on connections.
    pub(crate) connections: ConnectionLimits,
    /// How long calls in flight may run on after a shutdown signal.
    pub(crate) shutdown_grace: Duration,
    /// How long the server serves on after a shutdown signal, `/readyz` answering 503, before
    /// it drains.
    pub(crate) shutdown_delay: Duration,
    /// Whether this serves an isolated plugin's parent: each call's `Context` answers for the
    /// caller the parent names, and each result says what the tool answered
    /// ([`crate::call::wire`]).
    pub(crate) for_parent: bool,
    /// Who may call (`crate::auth`).
    pub(crate) auth: AuthOptions,
    /// The policy file (`--policy`).
    pub(crate) policy: Option<std::path::PathBuf>,
    /// The state shared with other replicas (`--redis-url`), if any.
    pub(crate) redis: Option<crate::shared::RedisOptions>,
}

impl Default for Options {
    /// Loopback, port 4040, `/mcp`, the host's tool and the page on, sessions on.
    fn default() -> Self {
        Self {
            host: "127.0.0.1".to_owned(),
            port: 4040,
            path: "/mcp".to_owned(),
            fallback: None,
            tool_bounds: ToolFilter::default(),
            name: "reactor-mcp-server".to_owned(),
            toolsets_tool: true,
            ui: true,
            hot_path: true,
            stateless: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            ready_file: None,
            metrics_addr: None,
            replica_id: None,
            sessions: SessionLimits::default(),
            connections: ConnectionLimits::default(),
            for_parent: false,
            shutdown_grace: SHUTDOWN_GRACE,
            shutdown_delay: Duration::ZERO,
            auth: AuthOptions::default(),
            policy: None,
            redis: None,
        }
    }
}

/// The largest request body accepted (4 MiB); larger ones get 413.
pub(crate) const MAX_REQUEST_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How many distinct URL queries (with their selection headers) keep their resolution cached;
/// later ones are resolved anew on every request (the cache cannot be grown without bound by a
/// client inventing queries).
pub(crate) const RESOLVED_QUERIES: usize = 256;

/// How long calls in flight may run on after a shutdown signal, by default.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ServeError {
    /// The MCP path is not a plain path of its own.
    #[error("--path `{path}` {reason}")]
    Path {
        /// The path given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A non-loopback address would be served without authentication.
    #[error(transparent)]
    Unauthenticated(#[from] crate::auth::UnauthenticatedBind),
    /// The key sealing 2026-07-28 round states cannot be used.
    #[error("{variable} cannot seal round states")]
    SealingKey {
        /// The environment variable holding the key.
        variable: &'static str,
        /// Why.
        #[source]
        source: rmcp::model::RequestStateError,
    },
    /// The shared state cannot be used.
    #[error("cannot share state with other replicas")]
    Shared(#[from] crate::shared::SharedError),
    /// The address could not be bound.
    #[error("cannot listen on {address}")]
    Bind {
        /// The address asked for.
        address: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The authentication options cannot be used (a keys file that does not read, ...).
    #[error("cannot apply the policy")]
    Policy(#[source] crate::policy::file::PolicyFileError),
    #[error("cannot authenticate callers")]
    Auth(#[source] crate::util::error::Report<crate::auth::keys::KeysError>),
    /// The ready file could not be written.
    #[error("cannot write the ready file {}", path.display())]
    ReadyFile {
        /// The file asked for.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The plugins asked to be opened at start-up could not be: the task opening them failed.
    #[error("opening the start-up plugins failed")]
    Startup(#[source] tokio::task::JoinError),
    /// The client of a stdio session did not initialize.
    #[error("the client's initialize failed")]
    Initialize(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The server failed while running.
    #[error("the server failed")]
    Io(#[from] std::io::Error),
}
