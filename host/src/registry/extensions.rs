//! Tool extensions as contributions: each under its plugin, in the one order they apply in
//! (see the order rule in the parent module), and what each changes of a tool's declaration
//! ([`apply_metadata`]), which building a table and the reports apply alike.

use std::collections::BTreeSet;

use plugin_manifest::{ExtensionDecl, ToolDecl};
use serde::Serialize;

use crate::discovery::DiscoveredPlugin;

/// An extension of a tool, under the plugin that declares it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ExtensionEntry {
    /// The extending plugin.
    pub(crate) plugin: String,
    /// Its index in the plugin's `extends`: what the plugin's `wrap` is called with.
    pub(crate) index: u32,
    /// The declaration.
    #[serde(flatten)]
    pub(crate) decl: ExtensionDecl,
}

impl ExtensionEntry {
    /// Its summary for listings.
    pub(crate) fn summary(&self) -> ExtensionSummary {
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
pub(crate) struct ExtensionSummary {
    /// The extending plugin.
    pub(crate) plugin: String,
    /// Its index in the plugin's `extends`.
    pub(crate) index: u32,
    /// Its `order`.
    pub(crate) order: i32,
    /// Whether the plugin's code wraps the handler (and so is opened to build the tool).
    pub(crate) wrap: bool,
    /// What it changes: `wrap`, `title`, `description`, `annotations`, `meta`, `input_schema`.
    pub(crate) changes: Vec<&'static str>,
}

/// An extension with the tool it targets, for lists of extensions of several tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct TargetedExtension {
    /// The tool it extends.
    pub(crate) tool: String,
    /// The extension.
    #[serde(flatten)]
    pub(crate) extension: ExtensionSummary,
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
pub(crate) struct Extensions {
    /// Sorted by target tool, then in applied order.
    entries: Vec<ExtensionEntry>,
    /// The tools some plugin declares in its manifest.
    declared: BTreeSet<String>,
}

impl Extensions {
    /// Collects the extensions of `plugins`; their order in the slice does not matter.
    pub(crate) fn new(plugins: &[DiscoveredPlugin]) -> Self {
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
    pub(crate) fn all(&self) -> &[ExtensionEntry] {
        &self.entries
    }

    /// The extensions of `tool`, in the order they apply: the last is the outermost.
    pub(crate) fn of(&self, tool: &str) -> Vec<&ExtensionEntry> {
        self.entries
            .iter()
            .filter(|e| e.decl.tool == tool)
            .collect()
    }

    /// `tool` as served: with what each of its extensions changes statically applied, in
    /// order.
    pub(crate) fn apply_to(&self, tool: &ToolDecl) -> ToolDecl {
        let mut tool = tool.clone();
        for extension in self.of(&tool.name) {
            apply_metadata(&mut tool, &extension.decl);
        }
        tool
    }

    /// The extensions whose target no plugin declares in its manifest.
    pub(crate) fn pending(&self) -> Vec<&ExtensionEntry> {
        self.entries
            .iter()
            .filter(|e| !self.declared.contains(&e.decl.tool))
            .collect()
    }
}

/// Applies what `extension` changes statically to `tool`: title, description, annotations and
/// input schema replace the tool's; meta is merged over the tool's, key by key; a field the
/// extension leaves out keeps the tool's.
pub(crate) fn apply_metadata(tool: &mut ToolDecl, extension: &ExtensionDecl) {
    if let Some(title) = &extension.title {
        tool.title = Some(title.clone());
    }
    if let Some(description) = &extension.description {
        tool.description.clone_from(description);
    }
    if let Some(annotations) = extension.annotations {
        tool.annotations = annotations;
    }
    if let Some(meta) = &extension.meta {
        let merged = tool.meta.get_or_insert_with(Default::default);
        for (key, value) in meta {
            merged.insert(key.clone(), value.clone());
        }
    }
    if let Some(schema) = &extension.input_schema {
        tool.input_schema = Some(schema.clone());
    }
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Annotations;
    use serde_json::{Value, json};

    use super::*;

    fn tool() -> ToolDecl {
        serde_json::from_value(json!({
            "name": "t",
            "title": "T",
            "description": "The tool.",
            "toolset": "s",
            "annotations": {"readOnlyHint": true},
            "meta": {"keep": 1, "over": "tool"},
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}
        }))
        .unwrap()
    }

    fn extension(json: Value) -> ExtensionDecl {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_field_left_out_keeps_the_tools() {
        let mut decl = tool();
        apply_metadata(&mut decl, &extension(json!({"tool": "t", "wrap": true})));
        assert_eq!(decl, tool());
    }

    #[test]
    fn meta_is_merged_key_by_key_and_the_rest_replaces() {
        let mut decl = tool();
        apply_metadata(
            &mut decl,
            &extension(json!({
                "tool": "t",
                "title": "New",
                "description": "Narrowed.",
                "annotations": {"destructiveHint": false},
                "meta": {"over": "extension", "added": true},
                "input_schema": {"type": "object"}
            })),
        );
        assert_eq!(decl.title.as_deref(), Some("New"));
        assert_eq!(decl.description, "Narrowed.");
        assert_eq!(
            decl.annotations,
            Annotations {
                destructive: Some(false),
                ..Default::default()
            },
            "annotations replace, they do not merge"
        );
        assert_eq!(
            Value::Object(decl.meta.unwrap()),
            json!({"keep": 1, "over": "extension", "added": true})
        );
        assert_eq!(
            Value::Object(decl.input_schema.unwrap()),
            json!({"type": "object"})
        );
    }

    #[test]
    fn meta_merges_into_a_tool_without_meta() {
        let mut decl = tool();
        decl.meta = None;
        apply_metadata(
            &mut decl,
            &extension(json!({"tool": "t", "meta": {"policy": "x"}})),
        );
        assert_eq!(Value::Object(decl.meta.unwrap()), json!({"policy": "x"}));
    }

    #[test]
    fn later_extensions_apply_over_earlier_ones() {
        let mut decl = tool();
        for e in [
            json!({"tool": "t", "description": "first", "meta": {"a": 1}}),
            json!({"tool": "t", "description": "second", "meta": {"a": 2, "b": 2}}),
        ] {
            apply_metadata(&mut decl, &extension(e));
        }
        assert_eq!(decl.description, "second");
        assert_eq!(
            Value::Object(decl.meta.unwrap()),
            json!({"keep": 1, "over": "tool", "a": 2, "b": 2})
        );
    }
}
