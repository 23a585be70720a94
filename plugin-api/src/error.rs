//! Errors: [`ToolError`] is what a tool returns; [`FfiError`] is how any error crosses the ABI.

use abi_stable::{StableAbi, std_types::RString};

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

/// An error from another tool (the one an extension wraps, say) keeps its kind: invalid
/// arguments stay invalid arguments, a panic stays a panic.
impl From<FfiError> for ToolError {
    fn from(error: FfiError) -> Self {
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

/// What kind of failure an [`FfiError`] reports.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, StableAbi)]
pub enum ErrorKind {
    /// The arguments do not fit the tool's input.
    InvalidArguments,
    /// The tool ran and reported an error.
    Tool,
    /// Plugin code panicked; the panic was caught on the plugin side.
    Panicked,
    /// The call was cancelled before it finished.
    Cancelled,
    /// The plugin could not do what the host asked (instantiate, list its tools).
    Plugin,
    /// What was asked for does not exist (a resource's URI).
    NotFound,
}

/// An error crossing the ABI: a kind and a message.
#[repr(C)]
#[derive(Debug, Clone, PartialEq, Eq, StableAbi)]
pub struct FfiError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// A message naming what went wrong.
    pub message: RString,
}

impl FfiError {
    /// An error of this kind with this message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: RString::from(message.into()),
        }
    }
}

impl std::fmt::Display for FfiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

// No `std::error::Error` impl on purpose: it would route `FfiError` through `ToolError`'s
// blanket `From<E: Error>`, which cannot keep the kind, instead of the impl above.

/// The text of a caught panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}
