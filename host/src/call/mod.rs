//! What one plugin call is, as plain data: its outcome, its log levels, what crosses an
//! isolated plugin's pipe besides MCP, and the [`Process`] a plugin may run behind.
//!
//! This layer explicitly avoids implementing any functionality that depends on I/O: it holds
//! types, encodings and one trait, so every layer above it (building, the providers, serving)
//! speaks of a call in the same terms, and each can be tested without a process or a socket.

pub(crate) mod level;
pub(crate) mod outcome;
pub(crate) mod process;
pub(crate) mod wire;

pub(crate) use outcome::{CallError, CallOutput};
pub(crate) use process::{Process, ProcessStatus, ResourceUpdates};
