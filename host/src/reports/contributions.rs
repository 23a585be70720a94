//! `GET /contributions`: every declared tool with the extensions that apply to it, in order,
//! and the extensions whose target no plugin offers. From manifests alone.

use std::path::PathBuf;

use serde::Serialize;

use crate::{
    discovery::{DiscoveredPlugin, Provider},
    registry::{ExtensionEntry, ExtensionSummary, Registry, TargetedExtension},
};

/// How reports name what provides `plugin`: `library`, or `mcp.json` for a bridged MCP server.
pub(crate) fn provider_kind(plugin: &DiscoveredPlugin) -> &'static str {
    match plugin.provider {
        Provider::Library => "library",
        Provider::Bridged { .. } => "mcp.json",
        Provider::Isolated { .. } => "isolated library",
    }
}

/// The answer of `GET /contributions`: each declared tool with the extensions that apply to it
/// (in order; `[]` when none does), and the pending extensions. From manifests alone.
#[derive(Debug, Clone, Serialize)]
pub struct ContributionsReport {
    /// Every statically declared tool, in load then declaration order.
    pub tools: Vec<ToolRow>,
    /// The extensions of tools no plugin declares.
    pub pending: Vec<TargetedExtension>,
}

/// One tool in [`ContributionsReport`].
#[derive(Debug, Clone, Serialize)]
pub struct ToolRow {
    /// The tool.
    pub name: String,
    /// The plugin offering it.
    pub plugin: String,
    /// What provides that plugin: `library`, or `mcp.json` for a bridged MCP server.
    pub provider: &'static str,
    /// The library file, or the `mcp.json` file declaring the server.
    pub file: PathBuf,
    /// Its toolset.
    pub toolset: String,
    /// The extensions applied to it, in order: the last is the outermost.
    pub extensions: Vec<ExtensionSummary>,
}

impl ContributionsReport {
    /// The contributions of `registry`.
    pub fn new(registry: &Registry) -> Self {
        Self {
            tools: registry
                .tools()
                .iter()
                .map(|t| ToolRow {
                    name: t.decl.name.clone(),
                    plugin: t.plugin.clone(),
                    provider: registry.plugin(&t.plugin).map_or("library", provider_kind),
                    file: registry
                        .plugin(&t.plugin)
                        .map(|p| p.path.clone())
                        .unwrap_or_default(),
                    toolset: t.decl.toolset.clone(),
                    extensions: registry
                        .extensions_of(&t.decl.name)
                        .into_iter()
                        .map(ExtensionEntry::summary)
                        .collect(),
                })
                .collect(),
            pending: registry
                .pending()
                .into_iter()
                .map(TargetedExtension::from)
                .collect(),
        }
    }
}
