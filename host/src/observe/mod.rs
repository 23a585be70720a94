//! What the server measures and traces: the metrics of the OpenTelemetry MCP semantic conventions
//! (`mcp.server.operation.duration`, `mcp.server.session.duration`) and the host's own (plugins
//! opened, calls in flight, generations, processes, bridged calls, authentication failures,
//! sessions), in a Prometheus registry that `--metrics-addr` serves as text.
//!
//! - [`plugin_logs`]: plugins' own `tracing` events and `log` records, written to the host's
//!   log under `plugin::NAME`, in the span of the call that made them.
//! - [`metrics`]: the registry and what records into it. Nothing is recorded, and nothing
//!   costs beyond one atomic load per event, until [`metrics::install`].
//! - [`traces`]: the spans of the conventions, exported with OTLP when the `OTEL_*` variables
//!   ask for it; none are made, for one atomic load each, when they do not.

pub(crate) mod metrics;
pub(crate) mod plugin_logs;
pub(crate) mod traces;
