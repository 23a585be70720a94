//! The registry: manifests become ordered contributions (toolsets, tools and tool extensions,
//! each under its plugin), with every conflict recorded rather than silently resolved.
//!
//! Toolsets and tools are in load order (plugin file-name order), then declaration order. A
//! tool name offered by two plugins is served from the first one in that order among the active
//! toolsets; the conflict is listed. A toolset declared by two plugins keeps the first
//! declaration and holds the tools of both.
//!
//! Extensions ([`Extensions`]) are **not** in load order. The extensions of one tool apply in
//! this order, the same on every machine whatever the file names or the order files were
//! copied in:
//!
//! 1. `order`, lowest first (default 0);
//! 2. then the extending plugin's name;
//! 3. then the extension's index in that plugin's `extends` (declaration order).
//!
//! The last applied is the outermost wrapper: its code runs first when the tool is called, and
//! the original tool runs last. An extension of a tool that no discovered plugin declares is
//! *pending*: stored, listed, never applied. A plugin that builds tools at run time may still
//! offer such a tool once it is opened, and then the extension does apply; nothing short of
//! opening it can tell, so listings call those extensions pending too.

use std::collections::{BTreeMap, BTreeSet};

use plugin_api::manifest::{ExtensionDecl, ToolDecl, ToolsetDecl};
use serde::Serialize;

use crate::{discovery::DiscoveredPlugin, selection::ActiveSet};

/// Every contribution of the discovered plugins.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    plugins: Vec<DiscoveredPlugin>,
    toolsets: BTreeMap<String, ToolsetEntry>,
    tools: Vec<ToolEntry>,
    extensions: Extensions,
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

/// An extension of a tool, under the plugin that declares it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtensionEntry {
    /// The extending plugin.
    pub plugin: String,
    /// Its index in the plugin's `extends`: what the plugin's `wrap` is called with.
    pub index: u32,
    /// The declaration.
    #[serde(flatten)]
    pub decl: ExtensionDecl,
}

impl ExtensionEntry {
    /// Its summary for listings.
    pub fn summary(&self) -> ExtensionSummary {
        ExtensionSummary {
            plugin: self.plugin.clone(),
            index: self.index,
            order: self.decl.order,
            wrap: self.decl.wrap,
            changes: self.decl.changes(),
        }
    }
}

/// What listings say of one extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtensionSummary {
    /// The extending plugin.
    pub plugin: String,
    /// Its index in the plugin's `extends`.
    pub index: u32,
    /// Its `order`.
    pub order: i32,
    /// Whether the plugin's code wraps the handler (and so is opened to build the tool).
    pub wrap: bool,
    /// What it changes: `wrap`, `title`, `description`, `annotations`, `meta`, `input_schema`.
    pub changes: Vec<&'static str>,
}

/// An extension with the tool it targets, for lists of extensions of several tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetedExtension {
    /// The tool it extends.
    pub tool: String,
    /// The extension.
    #[serde(flatten)]
    pub extension: ExtensionSummary,
}

impl From<&ExtensionEntry> for TargetedExtension {
    fn from(entry: &ExtensionEntry) -> Self {
        Self {
            tool: entry.decl.tool.clone(),
            extension: entry.summary(),
        }
    }
}

/// The answer of `GET /contributions`: each declared tool with the extensions that apply to it
/// (in order; `[]` when none does), and the pending extensions. From manifests alone.
#[derive(Debug, Clone, Serialize)]
pub struct Contributions {
    /// Every statically declared tool, in load then declaration order.
    pub tools: Vec<ToolContributions>,
    /// The extensions of tools no plugin declares.
    pub pending: Vec<TargetedExtension>,
}

/// One tool in [`Contributions`].
#[derive(Debug, Clone, Serialize)]
pub struct ToolContributions {
    /// The tool.
    pub name: String,
    /// The plugin offering it.
    pub plugin: String,
    /// Its toolset.
    pub toolset: String,
    /// The extensions applied to it, in order: the last is the outermost.
    pub extensions: Vec<ExtensionSummary>,
}

impl Contributions {
    /// The contributions of `registry`.
    pub fn new(registry: &Registry) -> Self {
        Self {
            tools: registry
                .tools()
                .iter()
                .map(|t| ToolContributions {
                    name: t.decl.name.clone(),
                    plugin: t.plugin.clone(),
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

/// Every extension of a set of plugins, in the order they apply (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Extensions {
    /// Sorted by target tool, then in applied order.
    entries: Vec<ExtensionEntry>,
    /// The tools some plugin declares in its manifest.
    declared: BTreeSet<String>,
}

impl Extensions {
    /// Collects the extensions of `plugins`; their order in the slice does not matter.
    pub fn new(plugins: &[DiscoveredPlugin]) -> Self {
        let mut entries: Vec<ExtensionEntry> = plugins
            .iter()
            .flat_map(|p| {
                p.manifest
                    .extends
                    .iter()
                    .enumerate()
                    .map(|(index, decl)| ExtensionEntry {
                        plugin: p.manifest.name.clone(),
                        index: u32::try_from(index).unwrap_or(u32::MAX),
                        decl: decl.clone(),
                    })
            })
            .collect();
        entries.sort_by(|a, b| {
            (&a.decl.tool, a.decl.order, &a.plugin, a.index).cmp(&(
                &b.decl.tool,
                b.decl.order,
                &b.plugin,
                b.index,
            ))
        });
        let declared = plugins
            .iter()
            .flat_map(|p| &p.manifest.tools)
            .map(|t| t.name.clone())
            .collect();
        Self { entries, declared }
    }

    /// Every extension, grouped by target tool (sorted by name), each group in applied order.
    pub fn all(&self) -> &[ExtensionEntry] {
        &self.entries
    }

    /// The extensions of `tool`, in the order they apply: the last is the outermost.
    pub fn of(&self, tool: &str) -> Vec<&ExtensionEntry> {
        self.entries
            .iter()
            .filter(|e| e.decl.tool == tool)
            .collect()
    }

    /// The extensions whose target no plugin declares in its manifest.
    pub fn pending(&self) -> Vec<&ExtensionEntry> {
        self.entries
            .iter()
            .filter(|e| !self.declared.contains(&e.decl.tool))
            .collect()
    }
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
        registry.extensions = Extensions::new(&plugins);
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

    /// Every statically declared tool, in load then declaration order (shadowed ones too).
    pub fn tools(&self) -> &[ToolEntry] {
        &self.tools
    }

    /// Every extension, in applied order per tool.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The extensions of `tool`, in the order they apply: the last is the outermost.
    pub fn extensions_of(&self, tool: &str) -> Vec<&ExtensionEntry> {
        self.extensions.of(tool)
    }

    /// The extensions whose target no discovered plugin declares (see the module docs).
    pub fn pending(&self) -> Vec<&ExtensionEntry> {
        self.extensions.pending()
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

    /// A plugin `base` offering one tool, `t`.
    fn base() -> DiscoveredPlugin {
        plugin(
            "base",
            r#"[{"name":"base"}]"#,
            r#"[{"name":"t","toolset":"base"}]"#,
        )
    }

    /// A plugin with no tools and these `extends`.
    fn extending(name: &str, extends: &str) -> DiscoveredPlugin {
        let mut p = plugin(name, "[]", "[]");
        p.manifest.extends = serde_json::from_str(extends).unwrap();
        p
    }

    fn applied(registry: &Registry, tool: &str) -> Vec<(String, u32)> {
        registry
            .extensions_of(tool)
            .iter()
            .map(|e| (e.plugin.clone(), e.index))
            .collect()
    }

    #[test]
    fn extensions_apply_by_order_then_plugin_name_then_declaration() {
        let plugins = vec![
            base(),
            extending(
                "zeta",
                r#"[{"tool":"t","order":5},{"tool":"other"},{"tool":"t","order":-1}]"#,
            ),
            extending(
                "alpha",
                r#"[{"tool":"t","order":5},{"tool":"t","order":5}]"#,
            ),
            extending("mid", r#"[{"tool":"t"}]"#),
        ];
        let expected = [
            ("zeta".to_owned(), 2),
            ("mid".to_owned(), 0),
            ("alpha".to_owned(), 0),
            ("alpha".to_owned(), 1),
            ("zeta".to_owned(), 0),
        ];
        assert_eq!(applied(&Registry::new(plugins.clone()), "t"), expected);
        // Load order (file names) does not change it.
        let mut reversed = plugins;
        reversed.reverse();
        assert_eq!(applied(&Registry::new(reversed), "t"), expected);
    }

    #[test]
    fn an_extension_of_a_tool_nobody_declares_is_pending() {
        let registry = Registry::new(vec![
            base(),
            extending(
                "x",
                r#"[{"tool":"t","description":"d"},{"tool":"missing","wrap":true}]"#,
            ),
        ]);
        let pending: Vec<_> = registry
            .pending()
            .iter()
            .map(|e| (e.decl.tool.as_str(), e.index))
            .collect();
        assert_eq!(pending, [("missing", 1)]);
        let contributions = Contributions::new(&registry);
        assert_eq!(
            serde_json::to_value(&contributions).unwrap(),
            serde_json::json!({
                "tools": [{"name": "t", "plugin": "base", "toolset": "base", "extensions": [
                    {"plugin": "x", "index": 0, "order": 0, "wrap": false, "changes": ["description"]}
                ]}],
                "pending": [
                    {"tool": "missing", "plugin": "x", "index": 1, "order": 0, "wrap": true, "changes": ["wrap"]}
                ]
            })
        );
    }

    #[test]
    fn a_tool_nobody_extends_has_no_extensions() {
        let registry = Registry::new(vec![base()]);
        assert!(registry.extensions_of("t").is_empty());
        assert_eq!(
            serde_json::to_value(Contributions::new(&registry)).unwrap()["tools"][0]["extensions"],
            serde_json::json!([])
        );
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
