//! The command line: every flag with its environment variable.

use std::{path::PathBuf, time::Duration};

use clap::{Args, Parser, Subcommand, builder::BoolishValueParser};

use crate::{
    discovery::trust::TrustOptions,
    providers::PluginSources,
    serve::{ConnectionLimits, SHUTDOWN_GRACE, SessionLimits},
};

/// An MCP server whose tools come from plugins.
#[derive(Debug, Parser)]
#[command(
    name = "reactor-mcp-server",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Options shared by every command.
    #[command(flatten)]
    pub(crate) common: Common,
    /// The options of `serve`, given without the subcommand.
    #[command(flatten)]
    pub(crate) serve: ServeArgs,
}

impl Cli {
    /// Whether the command serves callers who authenticate (the audit log is on for them).
    pub fn authenticates(&self) -> bool {
        match &self.command {
            None => self.serve.auth.options().is_on(),
            Some(Command::Serve(args)) => args.auth.options().is_on(),
            Some(_) => false,
        }
    }

    /// The log level asked for (`--log-level`), used when `RUST_LOG` is not set.
    pub fn log_level(&self) -> &str {
        &self.common.log_level
    }

    /// How log lines are written (`--log-format`).
    pub fn log_format(&self) -> LogFormat {
        self.common.log_format
    }

    /// The command to run: the one named, else `serve` with the options given at the top.
    pub(crate) fn into_command(self) -> (Common, Command) {
        let command = self.command.unwrap_or(Command::Serve(self.serve));
        (self.common, command)
    }
}

/// Options of every command.
#[derive(Debug, Clone, Args)]
pub(crate) struct Common {
    /// The folder scanned for plugin libraries.
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_PLUGIN_DIR",
        default_value = "plugins"
    )]
    pub(crate) plugin_dir: PathBuf,
    /// Serve only the plugins with these names (repeatable; replaces REACTOR_MCP_EXTENSIONS).
    #[arg(long = "extension", global = true, value_name = "NAME")]
    pub(crate) extensions: Vec<String>,
    /// A further `mcp.json` of MCP servers to bridge (repeatable), read after the plugin
    /// folder's `mcp.json` and `*.mcp.json`.
    #[arg(
        long = "mcp-config",
        global = true,
        env = "REACTOR_MCP_CONFIG",
        value_delimiter = ',',
        value_name = "FILE"
    )]
    pub(crate) mcp_config: Vec<PathBuf>,
    /// Refuse to start when an `mcp.json` file or server entry cannot be used (by default it is
    /// skipped with a warning).
    #[arg(long, global = true, env = "REACTOR_MCP_STRICT_CONFIG", value_parser = BoolishValueParser::new())]
    pub(crate) strict_config: bool,
    /// Where the bridged servers' last tool lists are kept (default: the user's cache folder,
    /// `$XDG_CACHE_HOME/reactor-mcp-server` or `~/.cache/reactor-mcp-server`).
    #[arg(long, global = true, env = "REACTOR_MCP_CACHE_DIR", value_name = "DIR")]
    pub(crate) cache_dir: Option<PathBuf>,
    /// Run this plugin out of process, in a child of the host's own binary, so that its crash
    /// or hang takes nothing else down (repeatable or comma-separated; `*` for every plugin).
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_ISOLATE",
        value_delimiter = ',',
        value_name = "PLUGIN"
    )]
    pub(crate) isolate: Vec<String>,
    /// Run this plugin isolated and sandboxed: held by Landlock and a seccomp filter to the
    /// files, ports and variables its manifest declares (repeatable or comma-separated; `*`
    /// for every plugin). What the kernel cannot enforce is said at start-up.
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_SANDBOX",
        value_delimiter = ',',
        value_name = "PLUGIN"
    )]
    pub(crate) sandbox: Vec<String>,
    /// Seconds an isolated plugin's call may go with neither its answer nor a progress report
    /// (default 60): `SECONDS` for every isolated plugin, `PLUGIN=SECONDS` for one (repeatable
    /// or comma-separated; the last that applies wins).
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_CALL_TIMEOUT",
        value_delimiter = ',',
        value_name = "[PLUGIN=]SECONDS"
    )]
    pub(crate) call_timeout: Vec<crate::providers::isolated::CallTimeout>,
    /// The log level when RUST_LOG is not set (error, warn, info, debug, trace).
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_LOG_LEVEL",
        default_value = "info"
    )]
    pub(crate) log_level: String,
    /// How log lines are written: `text` for people, `json` for machines (one object per
    /// line: timestamp, level, target, message, fields, and the spans it is in).
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub(crate) log_format: LogFormat,
    /// What to do when a bridged server lists a tool whose definition (name, title,
    /// description, schemas, annotations) differs from the one pinned when the server was
    /// first listed, or a tool that is not pinned: `warn` (serve it, report it), `block` (hold
    /// it back until `pins accept`), `off` (no pins).
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_PIN_TOOLS",
        default_value = "warn",
        value_name = "MODE"
    )]
    pub(crate) pin_tools: crate::discovery::servers::pins::PinMode,
    /// Which plugin libraries may be served.
    #[command(flatten)]
    pub(crate) trust: TrustArgs,
}

/// Which plugin libraries may be served: their signatures, and the lock file.
#[derive(Debug, Clone, Args)]
pub(crate) struct TrustArgs {
    /// The minisign public keys whose signatures count, one per line: a library with a
    /// signature beside it (`libx.so.minisig`) is served only if one of them made it.
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_TRUSTED_KEYS",
        value_name = "FILE"
    )]
    pub(crate) trusted_keys: Option<PathBuf>,
    /// Serve only the libraries signed by a trusted key (needs --trusted-keys).
    #[arg(long, global = true, env = "REACTOR_MCP_REQUIRE_SIGNED", value_parser = BoolishValueParser::new())]
    pub(crate) require_signed: bool,
    /// Serve only the libraries the lock file holds, with the same SHA-256 (`lock` writes it).
    #[arg(long, global = true, env = "REACTOR_MCP_LOCKED", value_parser = BoolishValueParser::new())]
    pub(crate) locked: bool,
    /// The lock file `--locked` reads and `lock` writes (default: `plugins.lock` in the plugin
    /// folder).
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_LOCK_FILE",
        value_name = "FILE"
    )]
    pub(crate) lock_file: Option<PathBuf>,
}

impl TrustArgs {
    /// The options these flags give.
    pub(crate) fn options(&self) -> TrustOptions {
        TrustOptions {
            trusted_keys: self.trusted_keys.clone(),
            require_signed: self.require_signed,
            locked: self.locked,
            lock_file: self.lock_file.clone(),
        }
    }
}

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event.
    Text,
    /// One JSON object per event.
    Json,
}

impl Common {
    /// Where the plugins come from, as these flags say.
    pub(crate) fn sources(&self) -> PluginSources {
        PluginSources {
            plugin_dir: self.plugin_dir.clone(),
            only: self.extension_filter(),
            mcp_config: self.mcp_config.clone(),
            strict_config: self.strict_config,
            cache_dir: self.cache_dir.clone(),
            isolation: crate::providers::isolated::Isolation {
                plugins: crate::selection::split_names(self.isolate.iter().map(String::as_str)),
                sandboxed: crate::selection::split_names(self.sandbox.iter().map(String::as_str)),
                call_timeouts: self.call_timeout.clone(),
                rmcp_only: false,
            },
            pins: crate::discovery::servers::pinning::Pins::new(self.pin_tools),
            trust: self.trust.options(),
        }
    }

    /// The plugin names discovery is narrowed to: `--extension`, else `REACTOR_MCP_EXTENSIONS`.
    fn extension_filter(&self) -> Option<Vec<String>> {
        if !self.extensions.is_empty() {
            return Some(crate::selection::split_names(
                self.extensions.iter().map(String::as_str),
            ));
        }
        let from_env = std::env::var("REACTOR_MCP_EXTENSIONS").ok()?;
        Some(crate::selection::split_names([from_env.as_str()])).filter(|n| !n.is_empty())
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // built once at start-up: boxing `serve`'s options buys nothing
pub(crate) enum Command {
    /// Serve the plugins' tools over MCP (streamable HTTP); the default command.
    Serve(ServeArgs),
    /// Serve the plugins' tools over MCP on stdin and stdout, for a client that starts the
    /// server as a command (one session; the selection comes from --toolsets).
    Stdio(StdioArgs),
    /// List the plugins in the plugin folder without opening any of them.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Ask every bridged MCP server for its tools first (starting each), and keep the lists.
        #[arg(long)]
        refresh: bool,
    },
    /// Serve one plugin library on stdin and stdout: the child process of an isolated plugin
    /// (`--isolate`), started by the host.
    #[command(hide = true)]
    Isolated {
        /// The library.
        library: PathBuf,
        /// The SHA-256 the host checked the library's bytes to have: the child opens it only
        /// if its private copy has it too.
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// The sandbox to enter before the library is opened (JSON, from the host).
        #[arg(long, value_name = "POLICY")]
        confine: Option<String>,
        /// Let rmcp answer every request (the host's `--no-hot-path`).
        #[arg(long)]
        no_hot_path: bool,
    },
    /// Draw the plugins, their toolsets and tools, and the extensions of tools, without opening
    /// any plugin.
    Graph {
        /// `dot` (Graphviz) or `mermaid`.
        #[arg(long, default_value = "dot", value_name = "FORMAT")]
        format: crate::reports::graph::Format,
    },
    /// Make and list API keys (the file `--auth-keys` reads).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Accept or list the pinned tool definitions of bridged MCP servers (`--pin-tools`).
    #[command(subcommand)]
    Pins(super::pins::PinsCommand),
    /// Make a key pair to sign plugin libraries with: `PREFIX.key` (secret) and `PREFIX.pub`
    /// (for --trusted-keys), in minisign's formats.
    Keygen {
        /// Where the keys go: `PREFIX.key` and `PREFIX.pub`.
        #[arg(long, default_value = "reactor-plugins", value_name = "PREFIX")]
        out: PathBuf,
        /// Protect the secret key with the password held by this environment variable (else
        /// it is written unencrypted, readable by its owner alone).
        #[arg(long, value_name = "VAR")]
        password_env: Option<String>,
        /// Replace keys that exist.
        #[arg(long)]
        force: bool,
    },
    /// Sign plugin libraries: write `LIBRARY.minisig` beside each.
    Sign {
        /// The libraries.
        #[arg(required = true)]
        libraries: Vec<PathBuf>,
        /// The secret key (`keygen` makes one; a minisign secret key works too).
        #[arg(long, env = "REACTOR_MCP_SIGNING_KEY", value_name = "FILE")]
        key: PathBuf,
        /// The environment variable holding the secret key's password, when it has one.
        #[arg(long, value_name = "VAR")]
        password_env: Option<String>,
    },
    /// Write the lock file (`--lock-file`, else `plugins.lock` in the plugin folder): the name,
    /// version, ABI and SHA-256 of every library the folder serves, for `--locked`.
    Lock,
}

/// `keys new` and `keys list`.
#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// Make a key: print it once, append its SHA-256 and bounds to the keys file.
    New {
        /// The key's name (the tenant), as logs, sessions and plugins see it.
        name: String,
        /// The toolsets the key may use at most (`*` for every one).
        #[arg(long, value_delimiter = ',', required = true, value_name = "TOOLSET")]
        toolsets: Vec<String>,
        /// Only tools annotated read-only.
        #[arg(long)]
        readonly: bool,
        /// When the key expires (RFC 3339, `2027-01-31T00:00:00Z`, or a date).
        #[arg(long, value_name = "TIME")]
        expires: Option<String>,
        /// The keys file (TOML, or JSON when named `*.json`); created if missing.
        #[arg(long, env = "REACTOR_MCP_AUTH_KEYS", value_name = "FILE")]
        file: PathBuf,
    },
    /// List the keys of the file: names, bounds and expiry, never keys.
    List {
        /// The keys file.
        #[arg(long, env = "REACTOR_MCP_AUTH_KEYS", value_name = "FILE")]
        file: PathBuf,
    },
    /// Remove every key of this name from the file; a running server refuses them once it has
    /// read the file again.
    Revoke {
        /// The name the keys were made under.
        name: String,
        /// The keys file.
        #[arg(long, env = "REACTOR_MCP_AUTH_KEYS", value_name = "FILE")]
        file: PathBuf,
    },
}

/// The options of `serve`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ServeArgs {
    /// The address to bind.
    #[arg(long, env = "REACTOR_MCP_HOST", default_value = "127.0.0.1")]
    pub(crate) host: String,
    /// The port to bind; 0 picks a free one.
    #[arg(long, env = "REACTOR_MCP_PORT", default_value_t = 4040)]
    pub(crate) port: u16,
    /// The path of the MCP endpoint.
    #[arg(long, env = "REACTOR_MCP_PATH", default_value = "/mcp")]
    pub(crate) path: String,
    /// What is served, over either transport.
    #[command(flatten)]
    pub(crate) served: ServedArgs,
    /// Serve without sessions (each request stands alone; JSON answers), for deployments behind a
    /// load balancer.
    #[arg(long, env = "REACTOR_MCP_STATELESS", value_parser = BoolishValueParser::new())]
    pub(crate) stateless: bool,
    /// A further `Host` the server answers to, `name` or `name:port` (repeatable). Loopback names
    /// and the bound host are always allowed.
    #[arg(
        long = "allowed-host",
        env = "REACTOR_MCP_ALLOWED_HOSTS",
        value_delimiter = ',',
        value_name = "HOST"
    )]
    pub(crate) allowed_hosts: Vec<String>,
    /// A browser origin allowed to call the server, `scheme://host[:port|:*]` (repeatable).
    /// Loopback origins and the server's own are always allowed.
    #[arg(
        long = "allowed-origin",
        env = "REACTOR_MCP_ALLOWED_ORIGINS",
        value_delimiter = ',',
        value_name = "ORIGIN"
    )]
    pub(crate) allowed_origins: Vec<String>,
    /// Once listening, write `{"url", "address", "pid"}` as JSON to this file (to `PATH.tmp`,
    /// then renamed), for a process that starts the server and waits for it.
    #[arg(long, env = "REACTOR_MCP_READY_FILE", value_name = "PATH")]
    pub(crate) ready_file: Option<PathBuf>,
    /// Serve metrics (Prometheus text, OpenTelemetry's MCP names) at `GET /metrics` on this
    /// address of their own, `HOST:PORT` or a port alone on loopback (`9464`); off without it.
    #[arg(long, env = "REACTOR_MCP_METRICS_ADDR", value_name = "ADDR")]
    pub(crate) metrics_addr: Option<String>,
    /// Do not serve the page at `GET /ui` that shows the toolsets, processes, failures and
    /// metrics.
    #[arg(long, env = "REACTOR_MCP_NO_UI", value_parser = BoolishValueParser::new())]
    pub(crate) no_ui: bool,
    /// This replica's name among several behind one load balancer: its task ids start with
    /// `NAME.`, so the balancer routes `tasks/*` requests to the replica that runs the task.
    #[arg(long, env = "REACTOR_MCP_REPLICA_ID", value_name = "NAME", value_parser = replica_id)]
    pub(crate) replica_id: Option<String>,
    /// Share state with the other replicas in this Redis (`redis://[USER:PASSWORD@]HOST[:PORT][/DB]`,
    /// `rediss://` for TLS): tasks any replica answers for, resource updates and list changes
    /// every replica hears, 2025-11-25 sessions that outlive their replica. Without a
    /// `--replica-id`, the replica makes itself a name.
    #[arg(long, env = "REACTOR_MCP_REDIS_URL", value_name = "URL")]
    pub(crate) redis_url: Option<String>,
    /// What this deployment's keys and channels in Redis start with, so deployments can share
    /// one Redis.
    #[arg(
        long,
        env = "REACTOR_MCP_REDIS_PREFIX",
        value_name = "PREFIX",
        default_value = "reactor-mcp"
    )]
    pub(crate) redis_prefix: String,
    /// The bounds on sessions.
    #[command(flatten)]
    pub(crate) sessions: SessionArgs,
    /// The bounds on connections, and the shutdown grace.
    #[command(flatten)]
    pub(crate) connections: ConnectionArgs,
    /// Who may call.
    #[command(flatten)]
    pub(crate) auth: AuthArgs,
}

/// How callers authenticate over HTTP (see `crate::auth`).
#[derive(Debug, Clone, Args)]
pub(crate) struct AuthArgs {
    /// The API keys file (TOML or JSON: name, sha256 of the key, toolsets, readonly, expires);
    /// re-read when it changes. Requests then need `Authorization: Bearer KEY`.
    #[arg(long, env = "REACTOR_MCP_AUTH_KEYS", value_name = "FILE")]
    pub(crate) auth_keys: Option<PathBuf>,
    /// Serve a non-loopback address without authentication.
    #[arg(long, env = "REACTOR_MCP_ALLOW_UNAUTHENTICATED", value_parser = BoolishValueParser::new())]
    pub(crate) allow_unauthenticated: bool,
    /// Accept OAuth access tokens (JWTs) from this authorization server, whose metadata names
    /// its signing keys; clients find it in /.well-known/oauth-protected-resource.
    #[arg(long, env = "REACTOR_MCP_OAUTH_ISSUER", value_name = "URL")]
    pub(crate) oauth_issuer: Option<String>,
    /// The resource tokens must name in `aud` (default: the MCP endpoint's URL as the client
    /// reaches it).
    #[arg(
        long,
        env = "REACTOR_MCP_OAUTH_AUDIENCE",
        value_name = "URL",
        requires = "oauth_issuer"
    )]
    pub(crate) oauth_audience: Option<String>,
    /// Which toolsets each scope opens, `scope=toolset` (repeatable or comma-separated; `*` for
    /// every toolset). Without it a token reaches every toolset.
    #[arg(
        long,
        env = "REACTOR_MCP_OAUTH_SCOPES",
        value_delimiter = ',',
        value_name = "SCOPE=TOOLSET",
        value_parser = crate::auth::oauth::parse_scope,
        requires = "oauth_issuer"
    )]
    pub(crate) oauth_scopes: Vec<(String, String)>,
    /// How often the issuer's signing keys are fetched again, in seconds: a key the issuer
    /// drops is refused from then on, for tokens accepted before too.
    #[arg(
        long,
        env = "REACTOR_MCP_OAUTH_JWKS_REFRESH",
        value_name = "SECONDS",
        default_value_t = crate::auth::oauth::DEFAULT_JWKS_REFRESH.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..),
        requires = "oauth_issuer"
    )]
    pub(crate) oauth_jwks_refresh: u64,
}

impl AuthArgs {
    /// The authentication options these flags give.
    pub(crate) fn options(&self) -> crate::auth::AuthOptions {
        crate::auth::AuthOptions {
            keys_file: self.auth_keys.clone(),
            allow_unauthenticated: self.allow_unauthenticated,
            oauth: self
                .oauth_issuer
                .as_ref()
                .map(|issuer| crate::auth::oauth::OAuthOptions {
                    issuer: issuer.trim().to_owned(),
                    audience: self.oauth_audience.clone(),
                    scopes: self.oauth_scopes.clone(),
                    jwks_refresh: std::time::Duration::from_secs(self.oauth_jwks_refresh),
                }),
        }
    }
}

/// The bounds on connections (see `crate::serve::ConnectionLimits`) and the shutdown grace.
#[derive(Debug, Clone, Args)]
pub(crate) struct ConnectionArgs {
    /// The most connections served at once; one beyond gets HTTP 503 and is closed.
    #[arg(
        long,
        env = "REACTOR_MCP_MAX_CONNECTIONS",
        value_name = "N",
        default_value_t = to_u64(ConnectionLimits::DEFAULT.max_connections),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_connections: u64,
    /// Seconds a client has to send a request's headers (from connecting, or from its previous
    /// answer); then the connection is closed.
    #[arg(
        long,
        env = "REACTOR_MCP_HEADER_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = ConnectionLimits::DEFAULT.header_timeout.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) header_timeout: u64,
    /// Seconds a request body may stall (then 408), or an answer wait for a client that stopped
    /// reading (then the connection is closed).
    #[arg(
        long,
        env = "REACTOR_MCP_IDLE_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = ConnectionLimits::DEFAULT.idle_timeout.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) idle_timeout: u64,
    /// Seconds calls in flight may run on after SIGTERM or Ctrl-C, while new requests get 503.
    #[arg(
        long,
        env = "REACTOR_MCP_SHUTDOWN_GRACE",
        value_name = "SECONDS",
        default_value_t = SHUTDOWN_GRACE.as_secs()
    )]
    pub(crate) shutdown_grace: u64,
    /// Seconds the server serves on after SIGTERM or Ctrl-C with `/readyz` answering 503, before
    /// it drains: time for a load balancer to stop sending it requests (Kubernetes: a few
    /// seconds, within terminationGracePeriodSeconds with the grace).
    #[arg(
        long,
        env = "REACTOR_MCP_SHUTDOWN_DELAY",
        value_name = "SECONDS",
        default_value_t = 0
    )]
    pub(crate) shutdown_delay: u64,
}

impl ConnectionArgs {
    /// The connection limits these flags give.
    pub(crate) fn limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: to_usize(self.max_connections),
            header_timeout: Duration::from_secs(self.header_timeout),
            idle_timeout: Duration::from_secs(self.idle_timeout),
        }
    }
}

/// What is served and how it is named, over HTTP and stdio alike.
#[derive(Debug, Clone, Args)]
pub(crate) struct ServedArgs {
    /// Let rmcp answer every request, `tools/call`, `tools/list` and `ping` included, instead
    /// of the host's own path for them (to compare the two, or to rule the host's out).
    #[arg(long, env = "REACTOR_MCP_NO_HOT_PATH", value_parser = BoolishValueParser::new())]
    pub(crate) no_hot_path: bool,
    /// The selection a URL that selects nothing gets (over stdio, the selection), in the
    /// URL's spelling (`only=sandboxes`).
    #[arg(long, env = "REACTOR_MCP_TOOLSETS", value_name = "QUERY")]
    pub(crate) toolsets: Option<String>,
    /// The tools any request may be shown at most (`*` globs, repeatable or comma-separated); a
    /// URL or header narrows inside them, never beyond.
    #[arg(
        long,
        env = "REACTOR_MCP_TOOLS",
        value_delimiter = ',',
        value_name = "PATTERN"
    )]
    pub(crate) tools: Vec<String>,
    /// Tools never shown (`*` globs, repeatable or comma-separated), whatever a request asks.
    #[arg(
        long,
        env = "REACTOR_MCP_EXCLUDE_TOOLS",
        value_delimiter = ',',
        value_name = "PATTERN"
    )]
    pub(crate) exclude_tools: Vec<String>,
    /// Show only tools annotated read-only (`readOnlyHint: true`), whatever a request asks.
    #[arg(long, env = "REACTOR_MCP_READ_ONLY", value_parser = BoolishValueParser::new())]
    pub(crate) read_only: bool,
    /// The server name clients see (serverInfo.name).
    #[arg(long, env = "REACTOR_MCP_NAME", default_value = "reactor-mcp-server")]
    pub(crate) name: String,
    /// Do not serve the host's own `list_server_toolsets` tool.
    #[arg(long, env = "REACTOR_MCP_NO_TOOLSETS_TOOL", value_parser = BoolishValueParser::new())]
    pub(crate) no_toolsets_tool: bool,
    /// Do not watch the plugin folder and the `mcp.json` files for changes (SIGHUP still scans
    /// them again).
    #[arg(long, env = "REACTOR_MCP_NO_WATCH", value_parser = BoolishValueParser::new())]
    pub(crate) no_watch: bool,
    /// The policy file (TOML): rules, rate limits, quotas, concurrency caps, circuit breakers,
    /// result caps; re-read when it changes (README, "Policies").
    #[arg(long, env = "REACTOR_MCP_POLICY", value_name = "FILE")]
    pub(crate) policy: Option<PathBuf>,
}

impl ServedArgs {
    /// Where the plugins come from (`common`'s flags); isolated children go through rmcp
    /// alone when the hot path is off.
    pub(crate) fn sources(&self, common: &Common) -> PluginSources {
        let mut sources = common.sources();
        sources.isolation.rmcp_only = self.no_hot_path;
        sources
    }

    /// The `--toolsets` selection, parsed as a URL query.
    pub(crate) fn fallback(&self) -> Option<crate::selection::Query> {
        self.toolsets
            .as_deref()
            .map(|q| crate::selection::Query::parse(q.trim_start_matches('?')))
    }

    /// The tool bounds `--tools`, `--exclude-tools` and `--read-only` give; no `--tools` bounds
    /// nothing.
    pub(crate) fn tool_bounds(&self) -> crate::selection::ToolFilter {
        crate::selection::ToolFilter::bounds(
            self.tools.iter().map(String::as_str),
            self.exclude_tools.iter().map(String::as_str),
            self.read_only,
        )
    }
}

/// The options of `stdio`.
#[derive(Debug, Clone, Args)]
pub(crate) struct StdioArgs {
    /// What is served.
    #[command(flatten)]
    pub(crate) served: ServedArgs,
    /// The bounds on what the session holds.
    #[command(flatten)]
    pub(crate) session: SessionBoundArgs,
}

impl StdioArgs {
    /// The options these flags give: the serve options' defaults for everything HTTP.
    pub(crate) fn options(&self) -> crate::serve::Options {
        let defaults = crate::serve::Options::default();
        crate::serve::Options {
            fallback: self.served.fallback(),
            tool_bounds: self.served.tool_bounds(),
            name: self.served.name.clone(),
            toolsets_tool: !self.served.no_toolsets_tool,
            sessions: self.session.limits(defaults.sessions),
            policy: self.served.policy.clone(),
            hot_path: !self.served.no_hot_path,
            ..defaults
        }
    }
}

/// The bounds on sessions (see `crate::serve::SessionLimits`); the bounds on what each holds
/// are [`SessionBoundArgs`].
#[derive(Debug, Clone, Args)]
pub(crate) struct SessionArgs {
    /// The most sessions open at once; an `initialize` beyond it gets HTTP 503 and a JSON-RPC
    /// error saying the server is full.
    #[arg(
        long,
        env = "REACTOR_MCP_MAX_SESSIONS",
        value_name = "N",
        default_value_t = to_u64(SessionLimits::DEFAULT.max_sessions),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_sessions: u64,
    /// Close a session after this many seconds without an open stream (no request in flight,
    /// no GET stream); a closed session answers 404.
    #[arg(
        long,
        env = "REACTOR_MCP_SESSION_IDLE_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = SessionLimits::DEFAULT.idle_timeout.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) session_idle_timeout: u64,
    /// The messages a session keeps per stream for a client that is not reading it (replayed
    /// when it resumes); older ones are dropped.
    #[arg(
        long,
        env = "REACTOR_MCP_SESSION_BUFFER",
        value_name = "N",
        default_value_t = to_u64(SessionLimits::DEFAULT.buffered_messages),
        value_parser = clap::value_parser!(u64).range(1..=65_536)
    )]
    pub(crate) session_buffer: u64,
    /// The bounds on what each session holds.
    #[command(flatten)]
    pub(crate) bounds: SessionBoundArgs,
}

/// The bounds on what one session holds, over HTTP and stdio alike.
#[derive(Debug, Clone, Args)]
pub(crate) struct SessionBoundArgs {
    /// The most resource subscriptions one session may hold.
    #[arg(
        long,
        env = "REACTOR_MCP_MAX_SUBSCRIPTIONS",
        value_name = "N",
        default_value_t = to_u64(SessionLimits::DEFAULT.max_subscriptions)
    )]
    pub(crate) max_subscriptions: u64,
    /// The longest URI, in bytes, a session may subscribe to.
    #[arg(
        long,
        env = "REACTOR_MCP_MAX_URI_LENGTH",
        value_name = "BYTES",
        default_value_t = to_u64(SessionLimits::DEFAULT.max_uri_bytes)
    )]
    pub(crate) max_uri_length: u64,
    /// How many seconds a request the server sends a client (sampling, elicitation, roots)
    /// waits for its answer before the tool is told it failed.
    #[arg(
        long,
        env = "REACTOR_MCP_CLIENT_REQUEST_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = SessionLimits::DEFAULT.client_request_timeout.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) client_request_timeout: u64,
    /// The most tool calls running as tasks (the MCP tasks extension) at once on the server.
    #[arg(
        long,
        env = "REACTOR_MCP_MAX_TASKS",
        value_name = "N",
        default_value_t = to_u64(SessionLimits::DEFAULT.max_tasks),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_tasks: u64,
    /// The most tool calls running as tasks at once per session (per caller without sessions).
    #[arg(
        long,
        env = "REACTOR_MCP_MAX_TASKS_PER_SESSION",
        value_name = "N",
        default_value_t = to_u64(SessionLimits::DEFAULT.max_tasks_per_session),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_tasks_per_session: u64,
    /// The most tool calls running as tasks at once per authenticated caller (an API key's name,
    /// a token's subject), across its sessions.
    #[arg(
        long,
        env = "REACTOR_MCP_MAX_TASKS_PER_CALLER",
        value_name = "N",
        default_value_t = to_u64(SessionLimits::DEFAULT.max_tasks_per_caller),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_tasks_per_caller: u64,
    /// How many seconds a task may run (it then fails, and its tool is cancelled), and how long
    /// its result is kept once it ended.
    #[arg(
        long,
        env = "REACTOR_MCP_TASK_TTL",
        value_name = "SECONDS",
        default_value_t = SessionLimits::DEFAULT.task_ttl.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) task_ttl: u64,
}

impl SessionArgs {
    /// The session limits these flags give.
    pub(crate) fn limits(&self) -> SessionLimits {
        self.bounds.limits(SessionLimits {
            max_sessions: to_usize(self.max_sessions),
            idle_timeout: Duration::from_secs(self.session_idle_timeout),
            buffered_messages: to_usize(self.session_buffer),
            ..SessionLimits::DEFAULT
        })
    }
}

impl SessionBoundArgs {
    /// `limits` with the bounds these flags give.
    pub(crate) fn limits(&self, limits: SessionLimits) -> SessionLimits {
        SessionLimits {
            max_subscriptions: to_usize(self.max_subscriptions),
            max_uri_bytes: to_usize(self.max_uri_length),
            client_request_timeout: Duration::from_secs(self.client_request_timeout),
            max_tasks: to_usize(self.max_tasks),
            max_tasks_per_session: to_usize(self.max_tasks_per_session),
            max_tasks_per_caller: to_usize(self.max_tasks_per_caller),
            task_ttl: Duration::from_secs(self.task_ttl),
            ..limits
        }
    }
}

/// A count as a flag's value.
const fn to_u64(n: usize) -> u64 {
    n as u64
}

/// A flag's value as a count (saturating on 32-bit targets).
/// A replica id: letters, digits, `-` and `_`, 1 to 64 of them (no `.`: it ends the prefix of
/// a task id).
fn replica_id(name: &str) -> Result<String, String> {
    let fits = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if fits {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "`{name}` is not a replica id: 1 to 64 of A-Z a-z 0-9 - _ (it starts task ids, \
             before a `.`)"
        ))
    }
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl ServeArgs {
    /// The serve options these flags give.
    pub(crate) fn options(&self) -> crate::serve::Options {
        crate::serve::Options {
            host: self.host.clone(),
            port: self.port,
            path: self.path.clone(),
            fallback: self.served.fallback(),
            tool_bounds: self.served.tool_bounds(),
            name: self.served.name.clone(),
            toolsets_tool: !self.served.no_toolsets_tool,
            ui: !self.no_ui,
            hot_path: !self.served.no_hot_path,
            stateless: self.stateless,
            allowed_hosts: self.allowed_hosts.clone(),
            allowed_origins: self.allowed_origins.clone(),
            ready_file: self.ready_file.clone(),
            metrics_addr: self.metrics_addr.clone(),
            replica_id: self.replica_id.clone(),
            sessions: self.sessions.limits(),
            connections: self.connections.limits(),
            shutdown_grace: Duration::from_secs(self.connections.shutdown_grace),
            shutdown_delay: Duration::from_secs(self.connections.shutdown_delay),
            for_parent: false,
            auth: self.auth.options(),
            policy: self.served.policy.clone(),
            redis: self
                .redis_url
                .clone()
                .map(|url| crate::shared::RedisOptions {
                    url,
                    prefix: self.redis_prefix.clone(),
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> (Common, Command) {
        Cli::try_parse_from(std::iter::once("reactor-mcp-server").chain(args.iter().copied()))
            .unwrap()
            .into_command()
    }

    #[test]
    fn serve_is_the_default_command() {
        let (_, command) = parse(&["--port", "0", "--toolsets", "only=sandboxes"]);
        let Command::Serve(serve) = command else {
            panic!("expected serve, got {command:?}")
        };
        assert_eq!(serve.port, 0);
        assert_eq!(serve.path, "/mcp");
        assert_eq!(serve.served.toolsets.as_deref(), Some("only=sandboxes"));
    }

    #[test]
    fn serve_takes_its_options_after_the_subcommand_too() {
        let (common, command) = parse(&[
            "serve",
            "--plugin-dir",
            "x",
            "--allowed-host",
            "a.example",
            "--allowed-host",
            "b.example:8080",
            "--stateless",
            "--ready-file",
            "ready.json",
        ]);
        let Command::Serve(serve) = command else {
            panic!("expected serve, got {command:?}")
        };
        assert_eq!(common.plugin_dir, PathBuf::from("x"));
        assert_eq!(serve.allowed_hosts, ["a.example", "b.example:8080"]);
        assert!(serve.stateless);
        assert_eq!(serve.ready_file, Some(PathBuf::from("ready.json")));
    }

    #[test]
    fn graph_takes_a_format() {
        let (_, command) = parse(&["graph"]);
        assert!(matches!(
            command,
            Command::Graph {
                format: crate::reports::graph::Format::Dot
            }
        ));
        let (_, command) = parse(&["graph", "--format", "mermaid"]);
        assert!(matches!(
            command,
            Command::Graph {
                format: crate::reports::graph::Format::Mermaid
            }
        ));
        assert!(Cli::try_parse_from(["reactor-mcp-server", "graph", "--format", "svg"]).is_err());
    }

    #[test]
    fn list_still_parses() {
        let (_, command) = parse(&["list", "--json"]);
        assert!(matches!(command, Command::List { json: true, .. }));
    }

    #[test]
    fn session_bounds_take_flags_and_refuse_zero() {
        let (_, command) = parse(&[
            "--max-sessions",
            "2",
            "--session-idle-timeout",
            "3",
            "--session-buffer",
            "4",
            "--max-subscriptions",
            "5",
            "--max-uri-length",
            "6",
            "--client-request-timeout",
            "7",
        ]);
        let Command::Serve(serve) = command else {
            panic!("expected serve, got {command:?}")
        };
        assert_eq!(
            serve.options().sessions,
            SessionLimits {
                max_sessions: 2,
                idle_timeout: Duration::from_secs(3),
                buffered_messages: 4,
                max_subscriptions: 5,
                max_uri_bytes: 6,
                client_request_timeout: Duration::from_secs(7),
                ..SessionLimits::DEFAULT
            }
        );
        for flag in [
            "--max-sessions",
            "--session-idle-timeout",
            "--session-buffer",
            "--client-request-timeout",
        ] {
            assert!(
                Cli::try_parse_from(["reactor-mcp-server", flag, "0"]).is_err(),
                "{flag} 0"
            );
        }
    }

    #[test]
    fn connection_bounds_take_flags_and_refuse_zero() {
        let (_, command) = parse(&[
            "--max-connections",
            "2",
            "--header-timeout",
            "3",
            "--idle-timeout",
            "4",
            "--shutdown-grace",
            "0",
        ]);
        let Command::Serve(serve) = command else {
            panic!("expected serve, got {command:?}")
        };
        let options = serve.options();
        assert_eq!(
            options.connections,
            ConnectionLimits {
                max_connections: 2,
                header_timeout: Duration::from_secs(3),
                idle_timeout: Duration::from_secs(4),
            }
        );
        assert_eq!(options.shutdown_grace, Duration::ZERO);
        for flag in ["--max-connections", "--header-timeout", "--idle-timeout"] {
            assert!(
                Cli::try_parse_from(["reactor-mcp-server", flag, "0"]).is_err(),
                "{flag} 0"
            );
        }
    }

    #[test]
    fn stdio_takes_the_selection_and_the_session_bounds() {
        let (common, command) = parse(&[
            "stdio",
            "--toolsets",
            "only=sandboxes",
            "--plugin-dir",
            "p",
            "--max-subscriptions",
            "9",
            "--read-only",
        ]);
        let Command::Stdio(stdio) = command else {
            panic!("expected stdio, got {command:?}")
        };
        assert_eq!(common.plugin_dir, PathBuf::from("p"));
        let options = stdio.options();
        assert_eq!(
            options.fallback,
            Some(crate::selection::Query::parse("only=sandboxes"))
        );
        assert_eq!(options.sessions.max_subscriptions, 9);
        assert!(options.tool_bounds.readonly);
        assert!(Cli::try_parse_from(["reactor-mcp-server", "stdio", "--port", "1"]).is_err());
    }

    #[test]
    fn tool_bounds_take_flags() {
        let (_, command) = parse(&[
            "--tools",
            "echo,list_*",
            "--tools",
            "add",
            "--exclude-tools",
            "stop_*",
            "--read-only",
        ]);
        let Command::Serve(serve) = command else {
            panic!("expected serve, got {command:?}")
        };
        let bounds = serve.options().tool_bounds;
        let patterns = |p: &[&str]| p.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            bounds,
            crate::selection::ToolFilter::new(
                Some(&patterns(&["echo", "list_*", "add"])),
                &patterns(&["stop_*"]),
                true
            )
        );
    }

    #[test]
    fn a_replica_id_is_a_plain_name_without_a_dot() {
        let parsed = Cli::try_parse_from(["reactor-mcp-server", "--replica-id", "r-1"]).unwrap();
        assert_eq!(parsed.serve.replica_id.as_deref(), Some("r-1"));
        let refused = Cli::try_parse_from(["reactor-mcp-server", "--replica-id", "r.1"])
            .unwrap_err()
            .to_string();
        assert!(refused.contains("is not a replica id"), "{refused}");
    }

    #[test]
    fn the_flags_defaults_are_the_serve_options_defaults() {
        let (_, command) = parse(&[]);
        let Command::Serve(serve) = command else {
            panic!("expected serve, got {command:?}")
        };
        assert_eq!(serve.options(), crate::serve::Options::default());
    }
}
