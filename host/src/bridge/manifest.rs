//! A bridged server as a plugin manifest: what the registry, listings and selection read.
//!
//! One toolset named after the server (the entry's `toolset` keys), the tools of its last good
//! list (from the disk cache, or none yet) under their served names, and `dynamic_tools`, so the
//! list read when the server is started is what is served.

use plugin_manifest::{Annotations, Manifest, ToolDecl};
use rmcp::model::Tool;

use super::{
    cache::CachedTools,
    config::{ServerEntry, Transport},
    names::served_name,
};

/// The version bridged servers' manifests give.
pub const VERSION: &str = "mcp.json";

/// `server`'s manifest, with the tools of `cached` if there is a list.
pub fn manifest(server: &ServerEntry, cached: Option<&CachedTools>) -> Manifest {
    let reached = match &server.transport {
        Transport::Stdio { command, args, .. } => {
            format!(
                "`{}` (stdio)",
                std::iter::once(command)
                    .chain(args)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
        Transport::Http { url, .. } => format!("{url} (streamable HTTP)"),
    };
    let known = if cached.is_some() {
        "tools as it last listed them"
    } else {
        "tools not known yet (listed when it is first started)"
    };
    Manifest {
        abi: plugin_abi::VERSION.to_owned(),
        name: server.name.clone(),
        version: VERSION.to_owned(),
        description: format!("MCP server {reached}; {known}"),
        toolsets: vec![server.toolset.clone()],
        activation: Vec::new(),
        tools: cached
            .map(|c| c.tools.iter().map(|t| tool_decl(server, t)).collect())
            .unwrap_or_default(),
        dynamic_tools: true,
        extends: Vec::new(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        prompts: Vec::new(),
        completions: Vec::new(),
    }
}

/// How `tool` of `server` is served: its served name, in the server's toolset, with its
/// description (or one naming it), title, annotations, meta, input and output schemas as they
/// are.
pub fn tool_decl(server: &ServerEntry, tool: &Tool) -> ToolDecl {
    let hints = tool.annotations.as_ref();
    ToolDecl {
        name: served_name(&server.name, &tool.name, server.namespace),
        title: tool
            .title
            .clone()
            .or_else(|| hints.and_then(|a| a.title.clone())),
        description: tool.description.as_deref().map_or_else(
            || format!("Call {} on the {} MCP server.", tool.name, server.name),
            str::to_owned,
        ),
        toolset: server.name.clone(),
        annotations: Annotations {
            read_only: hints.and_then(|a| a.read_only_hint),
            destructive: hints.and_then(|a| a.destructive_hint),
            idempotent: hints.and_then(|a| a.idempotent_hint),
            open_world: hints.and_then(|a| a.open_world_hint),
        },
        meta: tool.meta.clone().map(|m| m.0),
        input_schema: Some((*tool.input_schema).clone()),
        output_schema: tool.output_schema.as_deref().cloned(),
    }
}
