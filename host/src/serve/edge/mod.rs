//! The HTTP edge: what a request meets before MCP, and the connections it comes on.
//!
//! - [`app`]: the routes behind the front door, as one service.
//! - [`listener`]: the accept loop, bounded (connections, header, body and write timeouts).
//! - [`front`]: the front door every request passes, in one step: the guard, the drain,
//!   credentials, the session cap and the body check.
//! - [`guard`]: which `Host` and `Origin` headers are accepted.
//! - [`hot`]: `tools/call`, `tools/list` and `ping` answered by the host itself, without
//!   rmcp's per-request machinery.
//! - [`routes`]: `GET /healthz`, `GET /toolsets` and `GET /contributions`.
//! - [`readiness`]: `GET /readyz`, and what it depends on.
//! - [`index`]: `GET /` (and a browser's `GET` of the MCP endpoint): what the server is and how
//!   to connect.
//! - [`policy_gate`]: the policy's rate limits, quotas and session quota, before rmcp (HTTP
//!   429 with `Retry-After`).
//! - [`body`]: an MCP request's body, read once and bounded, checked to be JSON-RPC.
//! - [`drain`]: shutting down without dropping a call in flight.
//! - [`sessions`]: how many sessions, how long idle, what each holds.
//! - [`takeovers`]: sessions being taken over from another replica, and who waits for them.
//! - [`ready`]: the ready file saying where the server listens.
//! - [`ui`]: `GET /ui`, the page that shows what the JSON routes report, live.
//! - [`metrics`]: `GET /metrics` on a listener of its own (`--metrics-addr`).

pub(crate) mod app;
pub(crate) mod body;
pub(crate) mod drain;
pub(crate) mod front;
pub(crate) mod guard;
pub(crate) mod hot;
pub(crate) mod index;
pub(crate) mod listener;
pub(crate) mod metrics;
pub(crate) mod policy_gate;
pub(crate) mod readiness;
pub(crate) mod ready;
pub(crate) mod routes;
pub(crate) mod sessions;
pub(crate) mod takeovers;
pub(crate) mod ui;
