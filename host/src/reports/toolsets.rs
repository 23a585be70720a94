//! `GET /toolsets` (and the host's `list_server_toolsets` tool): what the deployment offers and
//! what one URL's active set is served. From manifests alone: nothing is opened.

use serde::Serialize;

use crate::{
    registry::{Conflict, Contribution, Entry, Registry},
    selection::Resolution,
};

/// The answer of `GET /toolsets`: what the deployment offers and what this URL activates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolsetsReport {
    /// Every toolset, sorted by name.
    pub toolsets: Vec<ToolsetRow>,
    /// The active toolsets, sorted.
    pub active: Vec<String>,
    /// The statically declared tools this URL is served, sorted.
    pub tools: Vec<String>,
    /// The URIs of the resources this URL is served, sorted.
    pub resources: Vec<String>,
    /// The URI templates of the resource templates this URL is served, sorted.
    pub resource_templates: Vec<String>,
    /// The prompts this URL is served, sorted.
    pub prompts: Vec<String>,
    /// Names the URL used that no plugin declares, sorted.
    pub unknown: Vec<String>,
    /// Active plugins that build more tools at run time, which only activation lists.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dynamic_tools_from: Vec<String>,
    /// Names offered by more than one plugin.
    pub conflicts: Vec<Conflict>,
}

/// One toolset in [`ToolsetsReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolsetRow {
    /// Its name.
    pub name: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// On by default.
    pub default: bool,
    /// Always on.
    pub always: bool,
    /// Active for this URL.
    pub active: bool,
    /// The plugin that declared it.
    pub plugin: String,
}

impl ToolsetsReport {
    /// The report for `resolution`.
    pub fn new(registry: &Registry, resolution: &Resolution) -> Self {
        let active = &resolution.active;
        Self {
            toolsets: registry
                .toolsets()
                .map(|t| ToolsetRow {
                    name: t.decl.name.clone(),
                    title: t.decl.title.clone(),
                    description: t.decl.description.clone(),
                    default: t.decl.default,
                    always: t.decl.always,
                    active: active.contains(&t.decl.name),
                    plugin: t.plugin.clone(),
                })
                .collect(),
            active: active.iter().cloned().collect(),
            tools: sorted_keys(registry.served_tools(active)),
            resources: sorted_keys(registry.served_resources(active)),
            resource_templates: sorted_keys(registry.served_resource_templates(active)),
            prompts: sorted_keys(registry.served_prompts(active)),
            unknown: resolution.unknown.clone(),
            dynamic_tools_from: registry
                .plugins_for(active)
                .iter()
                .filter(|p| p.manifest.dynamic_tools)
                .map(|p| p.manifest.name.clone())
                .collect(),
            conflicts: registry.conflicts().to_vec(),
        }
    }
}

/// The keys (names, URIs) of served entries, sorted.
fn sorted_keys<D: Contribution>(entries: Vec<&Entry<D>>) -> Vec<String> {
    let mut keys: Vec<String> = entries.iter().map(|e| e.decl.key().to_owned()).collect();
    keys.sort();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::{Query, resolve};

    #[test]
    fn the_report_lists_the_resources_templates_and_prompts_of_active_toolsets_only() {
        let manifest = plugin_manifest::Manifest::from_json(
            r#"{"abi": "0.1.0", "name": "library", "version": "1",
                "toolsets": [{"name": "library", "default": false}],
                "resources": [{"uri": "test://b", "name": "b", "toolset": "library"},
                              {"uri": "test://a", "name": "a", "toolset": "library"}],
                "resource_templates": [{"uri_template": "test://t/{id}", "name": "t",
                                        "toolset": "library"}],
                "prompts": [{"name": "greet", "toolset": "library"}]}"#,
        )
        .unwrap();
        let registry = Registry::new(vec![crate::discovery::DiscoveredPlugin::library(
            "liblibrary.so",
            manifest,
        )]);
        let report = |query: &str| {
            let resolution = resolve(&Query::parse(query), &registry.declared(), None);
            serde_json::to_value(ToolsetsReport::new(&registry, &resolution)).unwrap()
        };
        let with = report("library");
        assert_eq!(
            with["resources"],
            serde_json::json!(["test://a", "test://b"])
        );
        assert_eq!(
            with["resource_templates"],
            serde_json::json!(["test://t/{id}"])
        );
        assert_eq!(with["prompts"], serde_json::json!(["greet"]));
        let without = report("");
        for key in ["resources", "resource_templates", "prompts"] {
            assert_eq!(without[key], serde_json::json!([]), "{key}");
        }
    }
}
