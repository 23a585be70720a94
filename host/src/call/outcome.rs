//! What a call into a plugin gives: a tool's answer ([`CallOutput`]) or why there is none
//! ([`CallError`]), whichever way the plugin is provided.

use plugin_abi::{ErrorKind, FfiError};
use serde_json::Value;

/// Why a call into a plugin failed: a tool call, a resource read, a prompt, a completion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The arguments do not fit the tool.
    #[error("{0}")]
    InvalidArguments(String),
    /// The tool reported an error.
    #[error("{0}")]
    Tool(String),
    /// The tool panicked (caught in the plugin).
    #[error("{0}")]
    Panicked(String),
    /// The call was cancelled.
    #[error("{0}")]
    Cancelled(String),
    /// The plugin answered something that is not JSON.
    #[error("tool {tool} returned invalid JSON: {reason}")]
    BadOutput {
        /// The tool.
        tool: String,
        /// The parse error.
        reason: String,
    },
    /// What was asked for does not exist (a resource's URI).
    #[error("{0}")]
    NotFound(String),
}

/// What a tool answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallOutput {
    /// Its value, parsed: the server makes the MCP result from it.
    Value(Value),
    /// A complete MCP `CallToolResult` the tool built, as JSON text: the server checks it.
    Result(String),
}

impl CallOutput {
    /// The answer as JSON: the value, or the result's JSON (`Null` if that does not parse).
    pub(crate) fn into_json(self) -> Value {
        match self {
            Self::Value(value) => value,
            Self::Result(json) => serde_json::from_str(&json).unwrap_or(Value::Null),
        }
    }
}

/// An error from a plugin, by its kind.
impl From<FfiError> for CallError {
    fn from(error: FfiError) -> Self {
        let message: String = error.message.into();
        match error.kind {
            ErrorKind::InvalidArguments => Self::InvalidArguments(message),
            ErrorKind::Panicked => Self::Panicked(message),
            ErrorKind::Cancelled => Self::Cancelled(message),
            ErrorKind::NotFound => Self::NotFound(message),
            _ => Self::Tool(message),
        }
    }
}
