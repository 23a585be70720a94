//! reactor-mcp-server: an MCP server whose tools come from plugins, as a library to mount in a
//! server of your own ([`Server`], [`ServerBuilder`]) and as the `reactor-mcp-server` binary,
//! which is built on it.
//!
//! ```no_run
//! # async fn example() -> Result<(), reactor_mcp_server::Error> {
//! let server = reactor_mcp_server::Server::builder()
//!     .plugin_dir("plugins")
//!     .toolsets("only=sandboxes")
//!     .build()
//!     .await?;
//! let app: axum::Router = axum::Router::new().nest_service("/tools", server.service());
//! # let _ = app;
//! # Ok(())
//! # }
//! ```
//!
//! # Architecture
//!
//! The crate is a stack of layers, each a module that imports only from the layers below it
//! (`cargo xtask tidy` checks it), each stage a plain value in and a plain value out. From the
//! bottom:
//!
//! - **util**: leaves every layer uses, each written once: the loopback test, SHA-256 and hex,
//!   locking through poison, backoff, an error with its sources on one line.
//! - **observe**: the server's metrics, the MCP semantic conventions' and the host's own, and
//!   its spans, exported with OTLP; recorded from any layer above, at the cost of one atomic
//!   load when they are off.
//! - **call**: what one plugin call is, as data, with no I/O: its outcome, log levels, what
//!   crosses an isolated plugin's pipe besides MCP, and the `Process` a plugin may run behind.
//! - **selection**: a URL's query and selection headers, within the operator's bounds, give the
//!   active set of toolsets and the tool filters.
//! - **discovery**: the plugin folder's libraries (their manifests read from a link section,
//!   never opened) and the `mcp.json` files' servers become discovered plugins; bad files and
//!   entries are skipped, each with why.
//! - **registry**: the manifests become ordered contributions (toolsets, tools, resources,
//!   prompts, completions), with every name conflict and each tool's extensions in the one
//!   order they apply in.
//! - **reload**: what says the plugins changed (files, `SIGHUP`, a bridged server's list), and
//!   which plugins a new scan added, replaced and removed.
//! - **auth**: who calls (API keys, OAuth access tokens) and the bound each caller gets.
//! - **shared**: what the replicas of a deployment share in Redis (`--redis-url`): events,
//!   requests to the replica that runs a task, task and session records.
//! - **policy**: who may call what, how often and how much (`--policy FILE`): CEL rules that
//!   also narrow listings, rate limits and quotas, concurrency caps, circuit breakers, result
//!   caps; compiled once per load, re-read on change, counted in this process.
//! - **reports**: the read-only answers over the registry (`GET /toolsets`, `/contributions`,
//!   `list`, `graph`), from manifests alone, narrowed to a caller's bound.
//! - **build**: the `Opener` seam, the one `dlopen` (of a private copy), the checks of code
//!   against manifest, tool tables and extensions.
//! - **providers**: the ways a plugin is opened, each an `Opener`: a library in process, a
//!   library in a child process (`--isolate`), a bridged MCP server; and where plugins come
//!   from.
//! - **serve**: the HTTP edge (accept loop, front door, guard, routes, body gate, drain,
//!   sessions), the MCP handler (a dispatcher with one file per capability), the host's side
//!   of one call, and the generations swapped in when plugins change; stdio too.
//! - **embed**: the public API, [`Server`] and [`ServerBuilder`].
//! - **cli**: the command line and what each command runs; `main` only parses, sets up logging
//!   and prints the error chain.
//!
//! Only the embedding API is public. The `internals` module re-exports a few layers' items for
//! this workspace's own tests and benchmarks; it is hidden, and carries no semver promise.

#![forbid(unsafe_code)]

mod auth;
mod build;
mod call;
#[doc(hidden)]
pub mod cli;
mod discovery;
mod embed;
mod observe;
mod policy;
mod providers;
mod registry;
mod reload;
mod reports;
mod selection;
mod serve;
mod shared;
mod util;

pub use embed::{Error, McpService, Server, ServerBuilder, ShutdownHandle};

#[doc(hidden)]
pub mod internals {
    //! The host's own layers, re-exported for this workspace's tests and benchmarks only: no
    //! part of the public API, and no semver promise.

    /// Authentication.
    pub mod auth {
        pub use crate::auth::{
            AuthOptions, Authenticator, Challenge, Identity, TokenClaims,
            jwks::{GetError, Jwks, JwksError},
            jwt,
            keys::{KeyEntry, KeySet, KeysError, Lookup},
            oauth::{DEFAULT_JWKS_REFRESH, OAuth, OAuthOptions},
        };
    }
    /// Opening plugins and building tool tables.
    pub mod build {
        pub use crate::{
            build::{
                ActivationError, Builder, LoadedPlugin, LoadedTool, Opened, Opener, private_copy,
                table::ToolTable,
            },
            call::{
                outcome::CallError,
                process::{Process, ProcessFuture, ProcessStatus, ResourceUpdates},
            },
            providers::{ProviderOpener, activate},
        };
    }
    /// Errors shown whole.
    pub mod error {
        pub use crate::util::error::{Report, chain};
    }
    /// Discovery.
    pub mod discovery {
        pub use crate::discovery::{
            DiscoveredPlugin, Discovery, DiscoveryError, FileStamp, Provider, SkipReason, Skipped,
            discover, discover_trusted, read,
            servers::{cache::ToolCache, config::ServerEntry, config::Transport},
            trust,
        };
    }
    /// The policy file.
    pub mod policy {
        pub use crate::policy::{
            Caller, Denial, DenialKind, Policy, ToolFacts,
            file::{PolicyFile, PolicyFileError},
        };
    }
    /// The registry.
    pub mod registry {
        pub use crate::registry::Registry;
    }
    /// Reports.
    pub mod reports {
        pub use crate::reports::{
            listing::Listing,
            search::{ToolIndex, search_everything},
        };
    }
    /// Selection.
    pub mod selection {
        pub use crate::selection::ActiveSet;
    }
    /// Serving.
    pub mod serve {
        pub use crate::serve::{
            edge::ready::Ready,
            host_context::rounds::{Binding, Round, Sealer},
            mcp::{discover::tools_list, validate::ArgumentValidator},
        };
    }
}
