//! The public API: a [`Server`] to mount in an application of one's own, built by a
//! [`ServerBuilder`] from where the plugins are and how to serve them.
//!
//! The server behaves as the binary does (the binary is built on this API): plugins are
//! discovered without being opened, opened on first need, reloaded when their files change,
//! sessions are kept, and `GET /toolsets`, `/contributions` and `/healthz` answer beside the MCP
//! endpoint, all relative to where the service is mounted. [`Server::service`] is a tower
//! service to nest in an axum [`Router`](axum::Router) at any path; [`Server::serve`] serves it
//! on a listener of its own; [`ServerBuilder::serve_stdio`] serves one session on stdin and
//! stdout.
//!
//! ```no_run
//! use axum::{Router, routing::get};
//! use reactor_mcp_server::Server;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder().plugin_dir("plugins").build().await?;
//! let shutdown = server.shutdown_handle();
//! let app = Router::new()
//!     .route("/", get(|| async { "my application" }))
//!     .nest_service("/tools", server.service()); // MCP at /tools/mcp
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app)
//!     .with_graceful_shutdown(async move {
//!         let _ = tokio::signal::ctrl_c().await;
//!         shutdown.shutdown().await;
//!     })
//!     .await?;
//! # Ok(())
//! # }
//! ```

use std::{
    convert::Infallible,
    future::Future,
    path::PathBuf,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use axum::{body::Body, extract::Request, response::Response};
use tokio::sync::OnceCell;

use crate::{
    auth::oauth::{DEFAULT_JWKS_REFRESH, OAuthOptions},
    providers::PluginSources,
    registry::Registry,
    reload::Source,
    selection::{Query, ToolFilter, split_names},
    serve::{self, Options, lifecycle::Serving},
};

/// Why a server could not be built or run. Its source says what went wrong in detail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The plugin folder, an `mcp.json` file or the host's own executable could not be read.
    #[error("cannot discover the plugins")]
    Discovery(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The server could not start or run: its options, its authentication, its address, its
    /// ready file, or the standard streams.
    #[error("cannot serve")]
    Serve(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    fn serve(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Serve(Box::new(error))
    }
}

/// How to build a [`Server`]: where the plugins are and how to serve them. Every setting has
/// the binary's default; each method names the flag it stands for.
#[derive(Debug, Clone)]
pub struct ServerBuilder {
    sources: PluginSources,
    options: Options,
    watch: bool,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        Self {
            sources: PluginSources {
                plugin_dir: PathBuf::from("plugins"),
                ..PluginSources::default()
            },
            options: Options::default(),
            watch: true,
        }
    }
}

impl ServerBuilder {
    /// The folder scanned for plugin libraries and `mcp.json` files (`--plugin-dir`;
    /// `plugins` by default).
    pub fn plugin_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.sources.plugin_dir = dir.into();
        self
    }

    /// A further `mcp.json` of MCP servers to bridge, read after the plugin folder's
    /// (`--mcp-config`; repeatable).
    pub fn mcp_config(mut self, file: impl Into<PathBuf>) -> Self {
        self.sources.mcp_config.push(file.into());
        self
    }

    /// Serves only the plugins (and bridged servers) with these names (`--extension`).
    pub fn only_plugins<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.sources.only = Some(names_of(names));
        self
    }

    /// Runs these plugins out of process, each in a child of the running executable
    /// (`--isolate`; `*` for every plugin). The executable must be the `reactor-mcp-server`
    /// binary, or one that runs [`cli::run`](crate::cli::run) for its `isolated` command.
    pub fn isolate<I, S>(mut self, plugins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.sources.isolation.plugins = names_of(plugins);
        self
    }

    /// The selection a URL that selects no toolset gets, spelled as a URL's query
    /// (`--toolsets`: `only=sandboxes&readonly`).
    pub fn toolsets(mut self, query: &str) -> Self {
        self.options.fallback = Some(Query::parse(query));
        self
    }

    /// The most tools any request may be shown: `--tools` patterns (`*` for any characters),
    /// `--exclude-tools` patterns, and `--read-only`. A URL narrows inside them, never beyond.
    pub fn tool_bounds(mut self, tools: &[&str], exclude: &[&str], read_only: bool) -> Self {
        self.options.tool_bounds =
            ToolFilter::bounds(tools.iter().copied(), exclude.iter().copied(), read_only);
        self
    }

    /// The server name clients see (`--name`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.options.name = name.into();
        self
    }

    /// The path of the MCP endpoint, relative to where the service is mounted (`--path`;
    /// `/mcp` by default).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.options.path = path.into();
        self
    }

    /// Serves without sessions, with JSON answers (`--stateless`).
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.options.stateless = stateless;
        self
    }

    /// A further `Host` the server answers to, `name` or `name:port` (`--allowed-host`).
    /// Loopback names are always allowed.
    pub fn allowed_host(mut self, host: impl Into<String>) -> Self {
        self.options.allowed_hosts.push(host.into());
        self
    }

    /// A browser origin allowed to call the server (`--allowed-origin`).
    pub fn allowed_origin(mut self, origin: impl Into<String>) -> Self {
        self.options.allowed_origins.push(origin.into());
        self
    }

    /// Callers present an API key of this file (`--auth-keys`).
    pub fn api_keys(mut self, file: impl Into<PathBuf>) -> Self {
        self.options.auth.keys_file = Some(file.into());
        self
    }

    /// Callers present an OAuth access token of this issuer (`--oauth-issuer`), naming
    /// `audience` when given (`--oauth-audience`).
    pub fn oauth(mut self, issuer: impl Into<String>, audience: Option<String>) -> Self {
        self.options.auth.oauth = Some(OAuthOptions {
            issuer: issuer.into(),
            audience,
            scopes: Vec::new(),
            jwks_refresh: DEFAULT_JWKS_REFRESH,
        });
        self
    }

    /// Whether the plugin folder and `mcp.json` files are watched, and the server reloads what
    /// changed (on by default; `--no-watch` turns it off).
    pub fn watch(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// How long calls in flight may run on once shutting down (`--shutdown-grace`).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.options.shutdown_grace = grace;
        self
    }

    /// How long the server serves on once shutting down, `/readyz` answering 503, before it
    /// drains (`--shutdown-delay`; none by default).
    pub fn shutdown_delay(mut self, delay: Duration) -> Self {
        self.options.shutdown_delay = delay;
        self
    }

    /// The address [`ServerBuilder::run`] binds (`--host`, `--port`; `127.0.0.1:4040` by
    /// default, port 0 for a free one).
    pub fn address(mut self, host: impl Into<String>, port: u16) -> Self {
        self.options.host = host.into();
        self.options.port = port;
        self
    }

    /// A builder from the command line's parts.
    pub(crate) fn from_parts(sources: PluginSources, options: Options, watch: bool) -> Self {
        Self {
            sources,
            options,
            watch,
        }
    }

    /// Discovers the plugins (opening none), opens those that asked to be opened at start-up,
    /// and starts watching for changes.
    ///
    /// # Errors
    ///
    /// When the plugin folder cannot be read, or the options cannot serve (a bad path, a keys
    /// file that does not read).
    pub async fn build(self) -> Result<Server, Error> {
        let (registry, source) = self.discover()?;
        let serving = Serving::start(registry, &self.options, source)
            .await
            .map_err(Error::serve)?;
        Ok(Server {
            shared: Arc::new(Shared {
                serving,
                options: self.options,
                stopped: OnceCell::new(),
            }),
        })
    }

    /// Binds the address the options name and serves until SIGINT or SIGTERM: what the
    /// binary's `serve` does.
    ///
    /// # Errors
    ///
    /// As [`ServerBuilder::build`], and when the address cannot be bound or the ready file
    /// written.
    pub async fn run(self) -> Result<(), Error> {
        let (registry, source) = self.discover()?;
        serve::run(registry, self.options, source)
            .await
            .map_err(Error::serve)
    }

    /// Serves one session on stdin and stdout until stdin ends or SIGINT or SIGTERM, for a
    /// client that starts the server as a command. Before any plugin is opened, stdout is
    /// kept for the protocol and what plugins print goes to stderr.
    ///
    /// # Errors
    ///
    /// As [`ServerBuilder::build`], and when the standard streams cannot be set up.
    pub async fn serve_stdio(self) -> Result<(), Error> {
        let protocol_out = serve::stdio::protect_stdout().map_err(Error::serve)?;
        let (registry, source) = self.discover()?;
        serve::stdio::run(registry, self.options, protocol_out, source)
            .await
            .map_err(Error::serve)
    }

    /// The registry of the discovered plugins (logging what it holds), and where they come
    /// from when watched. Private copies left by host processes that no longer run are removed first: here, in the
    /// server, not in each isolated plugin's child.
    fn discover(&self) -> Result<(Arc<Registry>, Option<Source>), Error> {
        crate::build::private_copy::sweep_stale();
        let discovery = self
            .sources
            .discover()
            .map_err(|e| Error::Discovery(Box::new(e)))?;
        tracing::info!(
            "{} plugin(s) in {}: {}",
            discovery.plugins.len(),
            self.sources.plugin_dir.display(),
            discovery
                .plugins
                .iter()
                .map(|p| p.manifest.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let source = self.sources.source(discovery.skipped, self.watch);
        let registry = Arc::new(Registry::new(discovery.plugins));
        registry.warn_of_new_conflicts(None);
        Ok((registry, Some(source)))
    }
}

/// Names as a flag takes them: each entry may hold several, split on `,` and spaces.
fn names_of<I, S>(entries: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let entries: Vec<S> = entries.into_iter().collect();
    split_names(entries.iter().map(AsRef::as_ref))
}

/// A running MCP server, ready to be mounted ([`Server::service`]) or served on a listener
/// ([`Server::serve`]). Cloning it is cheap; every clone is the same server.
#[derive(Debug, Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    serving: Serving,
    options: Options,
    /// Set once the server has drained and stopped its plugins.
    stopped: OnceCell<()>,
}

impl Shared {
    async fn shutdown(&self) {
        self.stopped
            .get_or_init(|| async {
                self.serving.leave().await;
                self.serving.stop().await;
            })
            .await;
    }
}

impl Server {
    /// A builder with the binary's defaults.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The server as a tower service: the MCP endpoint, `GET /toolsets`, `/contributions` and
    /// `/healthz`, behind the Host/Origin guard and the credential check. Nest it at any path
    /// (`Router::nest_service("/tools", server.service())`); the paths it answers are relative
    /// to that.
    pub fn service(&self) -> McpService {
        McpService {
            shared: Arc::clone(&self.shared),
        }
    }

    /// [`Server::service`] as an axum router with nothing else, to nest or merge.
    pub fn router(&self) -> axum::Router {
        axum::Router::new().fallback_service(self.service())
    }

    /// A handle that shuts the server down from anywhere (a signal handler, a graceful
    /// shutdown of the application's own server).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Serves on `listener`, with the connection bounds of the binary, until `shutdown`
    /// resolves; then drains as [`ShutdownHandle::shutdown`] does and closes the connections.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()>,
    ) {
        let limits = self.shared.options.connections;
        serve::lifecycle::serve_on(&self.shared.serving, listener, limits, shutdown).await;
        let _ = self.shared.stopped.set(());
    }
}

/// Shuts a [`Server`] down: new requests are refused, calls in flight get the shutdown grace
/// to finish and answer, sessions end, and every opened plugin is told to stop. Only the first
/// call does it; later ones wait for it.
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    shared: Arc<Shared>,
}

impl ShutdownHandle {
    /// Drains and stops the server.
    pub async fn shutdown(&self) {
        self.shared.shutdown().await;
    }
}

/// The tower service of a [`Server`] (see [`Server::service`]).
#[derive(Debug, Clone)]
pub struct McpService {
    shared: Arc<Shared>,
}

impl tower::Service<Request<Body>> for McpService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        Box::pin(self.shared.serving.front().handle(request))
    }
}
