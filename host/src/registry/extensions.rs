//! Tool extensions as contributions: each under its plugin, in the one order they apply in
//! (see the order rule in the parent module).

use std::collections::BTreeSet;

use plugin_manifest::ExtensionDecl;
use serde::Serialize;

use crate::discovery::DiscoveredPlugin;

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
