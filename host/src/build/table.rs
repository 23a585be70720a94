//! The tool table of one active set: what `tools/list` answers and `tools/call` dispatches on.
//!
//! Each tool is collected from the first plugin offering its name, then its extensions are
//! applied ([`super::extend`]); a tool whose extension fails is left out, with a warning. Only
//! plugins that may serve a tool for the set are opened ([`Registry::tool_plugins_for`]).
//!
//! [`Registry::tool_plugins_for`]: crate::registry::Registry::tool_plugins_for

use std::collections::{HashMap, HashSet};

use super::{Builder, LoadedTool, extend};
use crate::selection::ActiveSet;

/// The tools served for one active set, in load then declaration order.
#[derive(Debug, Default)]
pub struct ToolTable {
    tools: Vec<LoadedTool>,
    index: HashMap<String, usize>,
    instructions: String,
}

impl ToolTable {
    /// Opens the plugins `active` needs and collects their tools.
    pub(super) fn build(builder: &Builder, active: &ActiveSet) -> Self {
        let registry = builder.registry();
        let mut table = Self::default();
        let mut offered: Vec<LoadedTool> = Vec::new();
        let mut names = HashSet::new();
        for discovered in registry.tool_plugins_for(active) {
            let Ok(plugin) = builder.plugin(&discovered.manifest.name) else {
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
                Err(error) => tracing::warn!("{error}"),
            }
        }
        table.instructions = registry
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
            .join("\n\n");
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
}
