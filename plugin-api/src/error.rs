//! Errors: [`ToolError`] is what a tool returns; [`FfiError`] (from `plugin-abi`) is how any
//! error crosses the ABI.

pub use plugin_abi::{ErrorKind, FfiError, panic_message};

/// The error a tool returns: a message for the client.
///
/// Any `std::error::Error` converts into it with `?`; [`ToolError::new`] takes a message.
///
/// ```
/// use plugin_api::ToolError;
/// fn parse(n: &str) -> Result<u32, ToolError> {
///     Ok(n.parse::<u32>()?)
/// }
/// assert_eq!(parse("x").unwrap_err().message(), "invalid digit found in string");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    kind: ErrorKind,
    message: String,
}

impl ToolError {
    /// A tool error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Tool,
            message: message.into(),
        }
    }

    /// The arguments do not fit the tool.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::InvalidArguments,
            message: message.into(),
        }
    }

    /// What was asked for does not exist: a resource template's variables name no resource
    /// (the client gets MCP's "Resource not found", `-32002`).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::NotFound,
            message: message.into(),
        }
    }

    /// The message the client sees.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(error: E) -> Self {
        Self::new(error.to_string())
    }
}

impl ToolError {
    /// An error from another tool (the one an extension wraps, say), keeping its kind: invalid
    /// arguments stay invalid arguments, a panic stays a panic. Not a `From` impl, which would
    /// overlap the one for every `std::error::Error`.
    pub(crate) fn from_ffi(error: FfiError) -> Self {
        Self {
            kind: error.kind,
            message: error.message.into(),
        }
    }
}

impl From<ToolError> for FfiError {
    fn from(error: ToolError) -> Self {
        FfiError::new(error.kind, error.message)
    }
}

/// A host service the host serving the call does not offer: it was built with an older
/// `plugin-abi` than the one that added the service. `?` turns it into a [`ToolError`] that
/// says so.
///
/// ```
/// use plugin_api::{Context, ToolError};
///
/// fn traced(ctx: &Context) -> Result<String, ToolError> {
///     Ok(ctx.trace_context()?.map(|t| t.traceparent).unwrap_or_default())
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotOffered {
    /// The service, as `Context` names it.
    pub service: &'static str,
    /// The `plugin-abi` version that added it.
    pub since: &'static str,
    /// The host's `plugin-abi` version.
    pub host: String,
}

impl std::fmt::Display for NotOffered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "this host (plugin-abi {}) does not offer `{}`, which came with plugin-abi {}",
            self.host, self.service, self.since
        )
    }
}

impl std::error::Error for NotOffered {}
