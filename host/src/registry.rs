//! The registry: manifests become ordered contributions (toolsets and tools, each under its
//! plugin), with every conflict recorded rather than silently resolved.
//!
//! Order is load order (plugin file-name order), then declaration order. A tool name offered by
//! two plugins is served from the first one in that order among the active toolsets; the
//! conflict is listed. A toolset declared by two plugins keeps the first declaration and holds
//! the tools of both.

use std::collections::BTreeMap;

use plugin_api::manifest::{ToolDecl, ToolsetDecl};
use serde::Serialize;

use crate::{discovery::DiscoveredPlugin, selection::ActiveSet};

/// Every contribution of the discovered plugins.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    plugins: Vec<DiscoveredPlugin>,
    toolsets: BTreeMap<String, ToolsetEntry>,
    tools: Vec<ToolEntry>,
    conflicts: Vec<Conflict>,
}

/// A toolset and the plugin that declared it first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolsetEntry {
    /// The declaration.
    #[serde(flatten)]
    pub decl: ToolsetDecl,
    /// The plugin that declared it.
    pub plugin: String,
}

/// A tool and the plugin that offers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolEntry {
    /// The declaration.
    #[serde(flatten)]
    pub decl: ToolDecl,
    /// The plugin offering it.
    pub plugin: String,
}

/// Two plugins offering the same name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// `tool` or `toolset`.
    pub kind: &'static str,
    /// The contested name.
    pub name: String,
    /// The plugin whose contribution wins (first in load order).
    pub kept: String,
    /// The plugin whose contribution loses where both are active.
    pub shadowed: String,
}

impl Registry {
    /// Builds the registry from discovered plugins, in their order.
    pub fn new(plugins: Vec<DiscoveredPlugin>) -> Self {
        let mut registry = Self::default();
        for plugin in &plugins {
            let name = &plugin.manifest.name;
            for toolset in &plugin.manifest.toolsets {
                match registry.toolsets.get(&toolset.name) {
                    Some(first) if first.decl != *toolset => registry.conflicts.push(Conflict {
                        kind: "toolset",
                        name: toolset.name.clone(),
                        kept: first.plugin.clone(),
                        shadowed: name.clone(),
                    }),
                    Some(_) => {}
                    None => {
                        registry.toolsets.insert(
                            toolset.name.clone(),
                            ToolsetEntry {
                                decl: toolset.clone(),
                                plugin: name.clone(),
                            },
                        );
                    }
                }
            }
            for tool in &plugin.manifest.tools {
                if let Some(first) = registry.tools.iter().find(|t| t.decl.name == tool.name) {
                    registry.conflicts.push(Conflict {
                        kind: "tool",
                        name: tool.name.clone(),
                        kept: first.plugin.clone(),
                        shadowed: name.clone(),
                    });
                }
                registry.tools.push(ToolEntry {
                    decl: tool.clone(),
                    plugin: name.clone(),
                });
            }
        }
        for conflict in &registry.conflicts {
            tracing::warn!(
                "{} `{}` is offered by plugins `{}` and `{}`: `{}` is served where both are active",
                conflict.kind,
                conflict.name,
                conflict.kept,
                conflict.shadowed,
                conflict.kept
            );
        }
        registry.plugins = plugins;
        registry
    }

    /// The plugins, in load order.
    pub fn plugins(&self) -> &[DiscoveredPlugin] {
        &self.plugins
    }

    /// The plugin called `name`.
    pub fn plugin(&self, name: &str) -> Option<&DiscoveredPlugin> {
        self.plugins.iter().find(|p| p.manifest.name == name)
    }

    /// Every toolset, sorted by name.
    pub fn toolsets(&self) -> impl Iterator<Item = &ToolsetEntry> {
        self.toolsets.values()
    }

    /// The toolset called `name`.
    pub fn toolset(&self, name: &str) -> Option<&ToolsetEntry> {
        self.toolsets.get(name)
    }

    /// Every conflict, in the order found.
    pub fn conflicts(&self) -> &[Conflict] {
        &self.conflicts
    }

    /// The statically declared tools served for `active`, in load then declaration order, the
    /// first of each name only.
    pub fn served_tools(&self, active: &ActiveSet) -> Vec<&ToolEntry> {
        let mut served: Vec<&ToolEntry> = Vec::new();
        for tool in self
            .tools
            .iter()
            .filter(|t| active.contains(&t.decl.toolset))
        {
            if !served.iter().any(|s| s.decl.name == tool.decl.name) {
                served.push(tool);
            }
        }
        served
    }

    /// The plugins that serving `active` opens, in load order: those declaring an active
    /// toolset and those with an `on_toolset` event for one.
    pub fn plugins_for(&self, active: &ActiveSet) -> Vec<&DiscoveredPlugin> {
        self.plugins
            .iter()
            .filter(|p| active.iter().any(|t| p.manifest.activated_by(t)))
            .collect()
    }

    /// The plugins with an `on_startup` event.
    pub fn startup_plugins(&self) -> Vec<&DiscoveredPlugin> {
        self.plugins
            .iter()
            .filter(|p| p.manifest.on_startup())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use plugin_api::Manifest;

    use super::*;

    fn plugin(name: &str, toolsets: &str, tools: &str) -> DiscoveredPlugin {
        let json = format!(
            r#"{{"plugin_api":"0.1.0","name":"{name}","version":"1","toolsets":{toolsets},"tools":{tools}}}"#
        );
        DiscoveredPlugin {
            path: PathBuf::from(format!("{name}.so")),
            manifest: Manifest::from_json(&json).unwrap(),
        }
    }

    #[test]
    fn a_tool_offered_twice_is_served_from_the_first_plugin_and_listed() {
        let registry = Registry::new(vec![
            plugin(
                "a",
                r#"[{"name":"a"}]"#,
                r#"[{"name":"t","toolset":"a"},{"name":"u","toolset":"a"}]"#,
            ),
            plugin("b", r#"[{"name":"b"}]"#, r#"[{"name":"t","toolset":"b"}]"#),
        ]);
        assert_eq!(registry.conflicts().len(), 1);
        assert_eq!(registry.conflicts()[0].kept, "a");
        let both = ActiveSet::from_names(["a", "b"]);
        let served: Vec<_> = registry
            .served_tools(&both)
            .iter()
            .map(|t| (t.decl.name.as_str(), t.plugin.as_str()))
            .collect();
        assert_eq!(served, [("t", "a"), ("u", "a")]);
        let only_b = ActiveSet::from_names(["b"]);
        assert_eq!(registry.served_tools(&only_b)[0].plugin, "b");
    }

    #[test]
    fn on_toolset_events_open_a_plugin_for_that_toolset() {
        let mut p = plugin("x", r#"[{"name":"x","default":false}]"#, "[]");
        p.manifest
            .activation
            .push(plugin_api::manifest::Activation::OnToolset("other".into()));
        let registry = Registry::new(vec![p]);
        assert_eq!(
            registry
                .plugins_for(&ActiveSet::from_names(["other"]))
                .len(),
            1
        );
        assert_eq!(registry.plugins_for(&ActiveSet::from_names(["x"])).len(), 1);
        assert!(
            registry
                .plugins_for(&ActiveSet::from_names(["y"]))
                .is_empty()
        );
    }
}
