//! The request context of a plugin tool call: the host's side of `plugin_api::Context`.
//!
//! Each `tools/call` gets a [`CallContext`], handed to the plugin as a `HostContextBox`. The
//! plugin calls it from its own threads, so it touches no tokio reactor: log messages, progress
//! reports and requests to the client go into one unbounded channel (in the order they are
//! made), and a request's answer comes back through a `futures` oneshot the plugin can poll
//! anywhere. [`run`] serves the call in the request handler's own task: it polls the plugin's
//! future, sends what comes through the channel to the client, forwards requests to the client
//! (in the handler's task, so rmcp routes them on the request's own stream), and stops at once
//! when the request is cancelled. Before the answer goes out, everything the tool sent is
//! flushed, so a client sees a tool's logs and progress before its result.
//!
//! What is sent when:
//! - log messages at or above the session's level (`logging/setLevel`; [`DEFAULT_LOG_LEVEL`]
//!   until the client sets one); under 2026-07-28, which has no sessions, at or above the
//!   request's own `logLevel` (in `_meta`), and none when the request names none;
//! - progress only when the request carries a `progressToken`;
//! - requests to the client only when it declared the capability (`sampling`, `elicitation`,
//!   `roots`) and the request belongs to a session (a stateless request has no channel back to
//!   the client): otherwise the tool gets an error at once, naming the reason. A request the
//!   client leaves unanswered fails after the `--client-request-timeout` (the client is told it
//!   was cancelled), with a message naming the method and the timeout; the tool decides what
//!   then. Cancelling the call ends its requests at once.
//!
//! The call's session, which a plugin reads to keep its clients' state apart, is the
//! `mcp-session-id` header of the request: rmcp answers 404 to a request naming a session that
//! does not exist, so it is the caller's own session (or one whose id it holds, which is the
//! same capability). A stateless request carries none.

// Logging, sampling and roots are deprecated by SEP-2577 (protocol 2026-07-28), and still part
// of 2025-11-25, which clients speak.
#![allow(deprecated)]

pub(crate) mod asks;
pub(crate) mod context;
pub(crate) mod level;
pub(crate) mod outlet;
pub(crate) mod rounds;
pub(crate) mod run;
#[cfg(test)]
mod tests;
pub(crate) mod trace;

use std::sync::Arc;

use axum::http::request::Parts;
use plugin_abi::LogLevel;
use rmcp::model::ProtocolVersion;
use rmcp::{RoleServer, service::RequestContext};

pub(crate) use asks::ClientRequests;
pub(crate) use level::SessionLevel;
pub(crate) use outlet::Outlet;
pub(crate) use run::{Call, Finished, Interrupted};

/// The level below which log messages are dropped until the client sends `logging/setLevel`.
///
/// The specification leaves it to the server; `info` keeps debug chatter off the wire unless a
/// client asks for it.
pub(crate) const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Info;

/// The session id a stdio request belongs to (the one session of the process).
const STDIO_SESSION: &str = "stdio";

/// Why a request outside a session cannot reach the client.
const NO_SESSION: &str = "this request is not part of a session (the server runs --stateless, or \
     the client speaks a protocol without sessions), so the server cannot send it requests";

/// The session `request` belongs to: over HTTP, the one its `Mcp-Session-Id` header names (none
/// when stateless or under 2026-07-28); over stdio (no HTTP parts), the one of the process.
pub(crate) fn session_of(request: &RequestContext<RoleServer>) -> Option<Arc<str>> {
    match request.extensions.get::<Parts>() {
        Some(parts) => parts
            .headers
            .get("mcp-session-id")
            .and_then(|id| id.to_str().ok())
            .map(Arc::from),
        None => Some(Arc::from(STDIO_SESSION)),
    }
}

/// Whether `request` speaks 2026-07-28 or later: no sessions, every request on its own.
pub(crate) fn speaks_2026(request: &RequestContext<RoleServer>) -> bool {
    is_2026(request.protocol_version().as_ref())
}

fn is_2026(version: Option<&ProtocolVersion>) -> bool {
    // ISO dates compare as strings, as rmcp compares them.
    version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}
