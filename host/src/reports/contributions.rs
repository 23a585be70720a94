//! `GET /contributions`: every declared tool with the extensions that apply to it, in order,
//! and the extensions whose target no plugin offers. From manifests alone.

use std::path::PathBuf;

use plugin_manifest::Annotations;
use serde::Serialize;
use serde_json::{Map, Value};

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
pub(crate) struct ContributionsReport {
    /// Every statically declared tool, in load then declaration order.
    pub(crate) tools: Vec<ToolRow>,
    /// The extensions of tools no plugin declares.
    pub(crate) pending: Vec<TargetedExtension>,
}

/// One tool in [`ContributionsReport`].
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ToolRow {
    /// The tool.
    pub(crate) name: String,
    /// The plugin offering it.
    pub(crate) plugin: String,
    /// What provides that plugin: `library`, or `mcp.json` for a bridged MCP server.
    pub(crate) provider: &'static str,
    /// The library file, or the `mcp.json` file declaring the server.
    pub(crate) file: PathBuf,
    /// Its toolset.
    pub(crate) toolset: String,
    /// Its title, as its extensions leave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    /// Its description, as its extensions leave it.
    pub(crate) description: String,
    /// Its annotations, as its extensions leave them (unset hints left out).
    #[serde(skip_serializing_if = "Annotations::is_empty")]
    pub(crate) annotations: Annotations,
    /// The JSON schema of its arguments, when its manifest gives it (else known once opened).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) input_schema: Option<Map<String, Value>>,
    /// The JSON schema of its structured content, when its manifest gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) output_schema: Option<Map<String, Value>>,
    /// The extensions applied to it, in order: the last is the outermost.
    pub(crate) extensions: Vec<ExtensionSummary>,
}

impl ContributionsReport {
    /// The report as a caller bounded by `bound` may see it: only the tools it may be served
    /// (of toolsets it may use, read-only ones if it is bound to those, as their extensions
    /// leave them) with every extension applied to them, and the pending extensions of plugins
    /// it may use.
    pub(crate) fn within(mut self, bound: &crate::auth::Bound, registry: &Registry) -> Self {
        self.tools = std::mem::take(&mut self.tools)
            .into_iter()
            .zip(registry.tools())
            .filter(|(row, tool)| {
                let declared = registry.extensions().apply_to(&tool.decl);
                bound.allows_tool(&row.toolset, declared.annotations.read_only == Some(true))
            })
            .map(|(row, _)| row)
            .collect();
        self.pending
            .retain(|p| bound.sees_plugin(registry, &p.extension.plugin));
        self
    }

    /// The contributions of `registry`.
    pub(crate) fn new(registry: &Registry) -> Self {
        Self {
            tools: registry
                .tools()
                .iter()
                .map(|t| (t, registry.extensions().apply_to(&t.decl)))
                .map(|(t, served)| ToolRow {
                    name: t.decl.name.clone(),
                    plugin: t.plugin.clone(),
                    provider: registry.plugin(&t.plugin).map_or("library", provider_kind),
                    file: registry
                        .plugin(&t.plugin)
                        .map(|p| p.path.clone())
                        .unwrap_or_default(),
                    toolset: t.decl.toolset.clone(),
                    title: served.title,
                    description: served.description,
                    annotations: served.annotations,
                    input_schema: served.input_schema,
                    output_schema: served.output_schema,
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
