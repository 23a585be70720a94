//! Read-only reports over the registry, each a plain value rendered as JSON or text: nothing
//! here opens a plugin.
//!
//! - [`toolsets`]: `GET /toolsets` and `list_server_toolsets`, for one URL's resolution.
//! - [`contributions`]: `GET /contributions`, every tool with its extensions in order.
//! - [`listing`]: `reactor-mcp-server list`, from a discovery (including skipped files).
//! - [`graph`]: `reactor-mcp-server graph`, plugins, toolsets, tools and extensions as a graph.
//! - [`search`]: `search_tools`, the tools a URL may use ranked for a query, from manifests.
//! - [`permissions`]: what plugins declare they need, and what their sandboxes enforce; part of
//!   the listing and of `/toolsets`.

pub(crate) mod contributions;
pub(crate) mod graph;
pub(crate) mod listing;
pub(crate) mod permissions;
pub(crate) mod search;
pub(crate) mod toolsets;

pub(crate) use contributions::ContributionsReport;
pub(crate) use listing::SkippedRow;
pub(crate) use toolsets::{FailedPlugin, GenerationInfo, TOOLSETS_TOOL, ToolsetsReport, TurnedOff};
