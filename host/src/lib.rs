//! reactor-mcp-server: an MCP server whose tools come from plugin libraries.
//!
//! The modules are listed in the order a server goes through them: discovery and registry
//! once at start-up, selection, build and serve for each request's URL.
//!
//! - [`discovery`] scans the plugin folder and reads each library's manifest from a link
//!   section, without opening any library. Bad files are skipped with the reason.
//! - [`registry`] turns the manifests into ordered contributions: toolsets, tools, resources,
//!   resource templates, prompts and completions under their plugins, with every name conflict
//!   recorded, and the extensions of each tool in the one order they apply in (`order`, then
//!   plugin name, then declaration). It also says which plugin serves a URI, a prompt or a
//!   completion.
//! - [`selection`] turns a URL's query and the declared toolsets (plain values) into the active
//!   set of toolsets.
//! - [`build`] opens the plugins an active set needs through an [`build::Opener`] (the library
//!   opener is the only place a library is opened), checks them against their manifests, and
//!   builds a tool table for an active set, applying each tool's extensions (opening an
//!   extending plugin only for a wrap). A plugin with only resources and prompts for the set is
//!   opened when one of them is first read or got.
//! - [`serve`] puts tool tables behind MCP over streamable HTTP (rmcp inside axum): each request's
//!   URL picks its active set (tools, resources, prompts and completions alike), arguments are
//!   checked against input schemas before a plugin is called, and `GET /healthz`,
//!   `GET /toolsets` and `GET /contributions` answer beside `/mcp`.
//!
//! [`reload`] notices that the plugin folder or a watched `mcp.json` changed (and `SIGHUP`), and
//! says which plugins a new scan added, replaced and removed; `serve` then makes a new
//! generation of the registry and swaps it in atomically, and tells the sessions whose lists
//! changed. [`auth`] says who calls over HTTP (API keys, OAuth access tokens) and bounds each
//! caller to its toolsets, narrowing its selection as the operator's flags do.
//!
//! Besides libraries, two providers give the registry manifests and the build stage live
//! plugins: [`bridge`] serves MCP servers an `mcp.json` declares, started on first need, and
//! [`isolation`] serves a library from a child process of the host's own binary
//! (`--isolate`), through the bridge's client.
//!
//! [`reports`] holds the read-only answers over the registry (`GET /toolsets`,
//! `GET /contributions`, `reactor-mcp-server list` and `graph`), all from manifests alone;
//! [`config`] holds the command line.

#![forbid(unsafe_code)]

mod auth;
mod build;
mod call;
#[doc(hidden)]
pub mod cli;
mod discovery;
mod embed;
mod providers;
mod registry;
mod reload;
mod reports;
mod selection;
mod serve;
mod util;

pub use embed::{Error, McpService, Server, ServerBuilder, ShutdownHandle};

#[doc(hidden)]
pub mod internals {
    //! The host's own layers, re-exported for this workspace's tests and benchmarks only: no
    //! part of the public API, and no semver promise.

    /// Authentication.
    pub mod auth {
        pub use crate::auth::{
            AuthOptions, Authenticator, Challenge, Identity,
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
            discover, read,
            servers::{cache::ToolCache, config::ServerEntry, config::Transport},
        };
    }
    /// The registry.
    pub mod registry {
        pub use crate::registry::Registry;
    }
    /// Reports.
    pub mod reports {
        pub use crate::reports::listing::Listing;
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
            mcp::validate::ArgumentValidator,
        };
    }
}
