//! The tool table of one active set: what `tools/list` answers and `tools/call` dispatches on.
//!
//! Each tool is collected from the first plugin offering its name, then its extensions are
//! applied ([`super::extend`]); a tool whose extension fails is left out, with a warning. Only
//! plugins that may serve a tool for the set are opened ([`Registry::tool_plugins_for`]).
//!
//! [`Registry::tool_plugins_for`]: crate::registry::Registry::tool_plugins_for

use std::collections::{HashMap, HashSet};

use super::{Builder, LoadedTool, extend};
use crate::{selection::ActiveSet, util::error::chain};

/// The tools served for one active set, in load then declaration order.
#[derive(Debug, Default)]
pub struct ToolTable {
    tools: Vec<LoadedTool>,
    index: HashMap<String, usize>,
    instructions: String,
    /// The earliest time a bridged server that failed to open may be tried again: the table
    /// is built anew for a request after it.
    retry_at: Option<std::time::Instant>,
}

impl ToolTable {
    /// Opens the plugins `active` needs and collects their tools.
    pub(super) fn build(builder: &Builder, active: &ActiveSet) -> Self {
        let registry = builder.registry();
        let mut table = Self::default();
        let mut offered: Vec<LoadedTool> = Vec::new();
        let mut names = HashSet::new();
        let needed = registry.tool_plugins_for(active);
        builder.open_bridged(&needed);
        for discovered in needed {
            let Ok(plugin) = builder.plugin(&discovered.manifest.name) else {
                if let Some(retry) = builder.retry_at(&discovered.manifest.name) {
                    table.retry_at = Some(table.retry_at.map_or(retry, |t| t.min(retry)));
                }
                continue;
            };
            for tool in plugin
                .tools()
                .iter()
                .filter(|t| active.contains(&t.decl.toolset))
            {
                if names.insert(tool.decl.name.clone()) {
                    offered.push(tool.clone());
                } else {
                    tracing::debug!(tool = %tool.decl.name, shadowed = %tool.plugin, "tool name conflict");
                }
            }
        }
        for tool in offered {
            match extend::apply(builder, tool) {
                Ok(tool) => {
                    table
                        .index
                        .insert(tool.decl.name.clone(), table.tools.len());
                    table.tools.push(tool);
                }
                Err(error) => tracing::warn!("{}", chain(&error)),
            }
        }
        table.instructions = instructions(registry, active);
        table
    }

    /// The tools, in order.
    pub fn tools(&self) -> &[LoadedTool] {
        &self.tools
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&LoadedTool> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// The server instructions: each active toolset's, under a `## title` heading.
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    /// Whether a bridged server it lacks (it failed to open) may now be tried again.
    pub(crate) fn is_stale(&self) -> bool {
        self.retry_at
            .is_some_and(|at| at <= std::time::Instant::now())
    }
}

/// The server instructions of `active`: each active toolset's, under a `## title` heading, from
/// the manifests.
pub(crate) fn instructions(registry: &crate::registry::Registry, active: &ActiveSet) -> String {
    registry
        .toolsets()
        .filter(|t| active.contains(&t.decl.name) && !t.decl.instructions.is_empty())
        .map(|t| {
            let title = if t.decl.title.is_empty() {
                &t.decl.name
            } else {
                &t.decl.title
            };
            format!("## {title}\n\n{}", t.decl.instructions)
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}
