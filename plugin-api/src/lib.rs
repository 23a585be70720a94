#![doc = include_str!("../README.md")]

mod context;
mod contribution;
pub mod error;
mod extension;
mod inputs;
mod logs;
use plugin_abi as ffi;
mod plugin;
mod prompt;
mod resource;
mod result;
pub mod runtime;
pub mod testing;
mod tool;

// Each re-export below is part of the semver promise of this crate.
#[doc(inline)]
pub use context::{Caller, ClientKey, Context, LogLevel, TraceContext};
#[doc(inline)]
pub use error::{NotOffered, ToolError};
#[doc(inline)]
pub use extension::{Original, Wrapped};
/// Inputs asked of the client at once, and its answers.
pub use inputs::{Answers, Inputs};
#[doc(inline)]
pub use plugin_api_macros::plugin;
/// The manifest as plain data: what `#[plugin]` writes and the host reads without opening the
/// library.
pub use plugin_manifest as manifest;
#[doc(inline)]
pub use plugin_manifest::{Annotations, Manifest, TaskSupport};
#[doc(inline)]
pub use prompt::{GetPromptResult, IntoPromptResult, PromptMessage, Role};
#[doc(inline)]
pub use resource::{IntoResourceContents, ResourceBody, ResourceContents};
#[doc(inline)]
pub use result::{Content, IntoToolOutput, ToolOutput, ToolResult};
/// The JSON value type tools may take and return.
pub use serde_json::{Number, Value, json};
/// Re-exported so a plugin uses the same tokio its runtime runs (for `tokio::time::sleep`, ...).
pub use tokio;
#[doc(inline)]
pub use tool::{Tool, ToolBuilder, schema_for};

/// What the `#[plugin]` attribute's output refers to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::contribution::{
        Code, CompletionRequest, ContributionHandlers, PromptRequest, ResourceRequest,
    };
    pub use crate::logs::log_to;
    pub use crate::plugin::{PluginDefinition, instantiate, manifest_json, no_wrap};
    pub use crate::tool::{parse_arguments, to_output};
    pub use abi_stable;
    pub use plugin_abi as ffi;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}

/// The Rust examples of the book's chapter on writing plugins, checked as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/plugins.md")]
mod book_plugins {}
