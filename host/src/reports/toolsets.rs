//! `GET /toolsets` (and the host's `list_server_toolsets` tool): what the deployment offers and
//! what one URL's active set is served. From manifests alone: nothing is opened.
//!
//! Its `tools` are what `tools/list` of the same URL and headers lists: the active set's
//! declared tools as their extensions leave them, through the request's filter, and the host's
//! own tool, which filters treat as any read-only tool; with `?search`, `search_tools` too, and
//! in discovery mode `search_tools`, `call_tool` and the tools marked always visible. Tools a plugin builds at run time, and
//! tools left out because an extension's wrap failed, are known only once plugins are opened.

use std::collections::BTreeSet;

use serde::Serialize;

use super::permissions::PermissionsRow;
use super::search::{CALL_TOOL, SEARCH_TOOL, always_visible};
use crate::{
    call::ProcessStatus,
    discovery::{Provider, servers::pinning::ChangedTool},
    registry::{Conflict, Contribution, Entry, Registry},
    selection::{Resolution, ToolFilter},
};

/// The name of the host's own tool, which lists the toolsets (read-only).
pub(crate) const TOOLSETS_TOOL: &str = "list_server_toolsets";

/// The answer of `GET /toolsets`: what the deployment offers and what this URL activates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ToolsetsReport {
    /// Every toolset, sorted by name.
    pub(crate) toolsets: Vec<ToolsetRow>,
    /// The active toolsets, sorted.
    pub(crate) active: Vec<String>,
    /// The tools this URL is served, sorted: once its toolsets are open, what `tools/list`
    /// answers (tools bridged servers and plugins list at run time included); before, the
    /// declared ones (a bridged server's from its cached listing) the filter shows, and the
    /// host's own.
    pub(crate) tools: Vec<String>,
    /// The filter in force: the server's bounds narrowed by the URL's and the headers'.
    pub(crate) filter: ToolFilter,
    /// The URIs of the resources this URL is served, sorted.
    pub(crate) resources: Vec<String>,
    /// The URI templates of the resource templates this URL is served, sorted.
    pub(crate) resource_templates: Vec<String>,
    /// The prompts this URL is served, sorted.
    pub(crate) prompts: Vec<String>,
    /// The URIs of the skills (`SKILL.md`) this URL is served, sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) skills: Vec<String>,
    /// Names the URL used that no plugin declares, sorted.
    pub(crate) unknown: Vec<String>,
    /// Active plugins that build more tools at run time, which only activation lists.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) dynamic_tools_from: Vec<String>,
    /// Names offered by more than one plugin.
    pub(crate) conflicts: Vec<Conflict>,
    /// The permissions plugins declare, and what the sandboxes of sandboxed ones enforce.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) permissions: Vec<PermissionsRow>,
    /// The processes and connections of opened bridged servers and isolated plugins: which
    /// run, which wait to be started again, which are parked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) processes: Vec<ProcessStatus>,
    /// The plugins that failed to open, each with why; they are retried when their file
    /// changes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) failed: Vec<FailedPlugin>,
    /// What plugins turned off (`Context::set_tool_available` and its siblings), for every
    /// URL, until they turn it on again.
    #[serde(skip_serializing_if = "TurnedOff::is_empty")]
    pub(crate) off: TurnedOff,
    /// The tools of bridged servers whose definitions differ from their pins, each with what
    /// changed and whether it is held back, until the operator accepts them (`pins accept`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) changed_tools: Vec<ChangedTool>,
    /// Which generation of the plugin folder this is, when a server answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) generation: Option<GenerationInfo>,
    /// The circuit breakers of the policy that have seen a failure, by plugin.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) breakers: Vec<BreakerRow>,
}

/// One plugin's circuit breaker, as `/toolsets` and `/healthz` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct BreakerRow {
    /// The plugin.
    pub(crate) plugin: String,
    /// `closed`, `open` or `half_open`.
    pub(crate) state: &'static str,
    /// The policy's `[[breaker]]` entry.
    pub(crate) breaker: String,
}

/// What plugins turned off, by served name, sorted: what a running server holds (its rules
/// are the server's `availability`) and what `/toolsets` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct TurnedOff {
    /// Tools.
    pub(crate) tools: BTreeSet<String>,
    /// Prompts.
    pub(crate) prompts: BTreeSet<String>,
    /// Static resources, by URI.
    pub(crate) resources: BTreeSet<String>,
    /// Resource templates, by URI template.
    pub(crate) resource_templates: BTreeSet<String>,
}

impl TurnedOff {
    /// Whether nothing is off.
    pub(crate) fn is_empty(&self) -> bool {
        self.tools.is_empty()
            && self.prompts.is_empty()
            && self.resources.is_empty()
            && self.resource_templates.is_empty()
    }
}

/// A plugin that failed to open, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FailedPlugin {
    /// The plugin.
    pub(crate) plugin: String,
    /// Why it failed.
    pub(crate) reason: String,
}

/// Which generation of the plugins a running server serves: a new one is made each time the
/// plugin folder or a watched `mcp.json` changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct GenerationInfo {
    /// 1 at start-up, one more at each change.
    pub(crate) number: u64,
    /// When it was made (RFC 3339, UTC).
    pub(crate) since: String,
}

/// One toolset in [`ToolsetsReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ToolsetRow {
    /// Its name.
    pub(crate) name: String,
    /// Its title.
    pub(crate) title: String,
    /// Its description.
    pub(crate) description: String,
    /// On by default.
    pub(crate) default: bool,
    /// Always on.
    pub(crate) always: bool,
    /// Active for this URL.
    pub(crate) active: bool,
    /// The plugin that declared it.
    pub(crate) plugin: String,
    /// What provides that plugin: `library`, `isolated library`, or `mcp.json` for a bridged
    /// MCP server.
    pub(crate) provider: &'static str,
    /// Whether its plugin is open in the generation a running server serves (it opens at its
    /// first use); always `false` from manifests alone.
    pub(crate) open: bool,
    /// The URIs of its resources and the URI templates of its resource templates, in order.
    pub(crate) resources: Vec<String>,
    /// The names of its prompts, in order.
    pub(crate) prompts: Vec<String>,
}

impl ToolsetsReport {
    /// The report as a caller bounded by `bound` may see it: it learns of no plugin outside its
    /// bound, so rows, processes, failures and conflicts are those of plugins with a toolset it
    /// may use.
    pub(crate) fn within(mut self, bound: &crate::auth::Bound, registry: &Registry) -> Self {
        let visible = |plugin: &str| bound.sees_plugin(registry, plugin);
        self.toolsets.retain(|t| bound.allows_toolset(&t.name));
        self.processes.retain(|p| visible(&p.plugin));
        self.failed.retain(|f| visible(&f.plugin));
        self.changed_tools.retain(|c| visible(&c.server));
        self.conflicts
            .retain(|c| visible(&c.kept) && visible(&c.shadowed));
        self.permissions.retain(|p| visible(&p.plugin));
        self
    }

    /// The report for `resolution`; `toolsets_tool` says whether the host serves its own tool.
    pub(crate) fn new(registry: &Registry, resolution: &Resolution, toolsets_tool: bool) -> Self {
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
                    provider: registry
                        .plugin(&t.plugin)
                        .map_or("library", super::contributions::provider_kind),
                    open: false,
                    resources: keys_in(registry.resources(), &t.decl.name)
                        .chain(keys_in(registry.resource_templates(), &t.decl.name))
                        .collect(),
                    prompts: keys_in(registry.prompts(), &t.decl.name).collect(),
                })
                .collect(),
            active: active.iter().cloned().collect(),
            tools: served_tools(registry, resolution, toolsets_tool),
            filter: resolution.filter.clone(),
            resources: sorted_keys(registry.served_resources(active)),
            resource_templates: sorted_keys(registry.served_resource_templates(active)),
            prompts: sorted_keys(registry.served_prompts(active)),
            skills: Vec::new(),
            unknown: resolution.unknown.clone(),
            dynamic_tools_from: registry
                .plugins_for(active)
                .iter()
                .filter(|p| p.manifest.dynamic_tools)
                .map(|p| p.manifest.name.clone())
                .collect(),
            conflicts: registry.conflicts().to_vec(),
            permissions: PermissionsRow::all(registry.plugins()),
            processes: Vec::new(),
            failed: Vec::new(),
            off: TurnedOff::default(),
            changed_tools: changed_tools(registry),
            generation: None,
            breakers: Vec::new(),
        }
    }

    /// The report, marking the toolsets of the plugins `is_open` says are open as open.
    pub(crate) fn with_open(mut self, is_open: impl Fn(&str) -> bool) -> Self {
        for row in &mut self.toolsets {
            row.open = is_open(&row.plugin);
        }
        self
    }

    /// The report, saying which generation it describes.
    pub(crate) fn with_generation(self, generation: GenerationInfo) -> Self {
        Self {
            generation: Some(generation),
            ..self
        }
    }
}

/// The names of the tools `resolution` is served, sorted: the declared tools of its active set
/// as their extensions leave them, that its filter shows, and the host's tool if served.
fn served_tools(registry: &Registry, resolution: &Resolution, toolsets_tool: bool) -> Vec<String> {
    let filter = &resolution.filter;
    let host_tool = |name: &str| {
        (toolsets_tool && name == TOOLSETS_TOOL)
            || (resolution.mode.searches() && name == SEARCH_TOOL)
            || (resolution.mode.discover && name == CALL_TOOL)
    };
    let mut tools: Vec<String> = registry
        .shown_tools(resolution)
        .into_iter()
        .filter(|t| !resolution.mode.discover || always_visible(t))
        .map(|t| t.name)
        .filter(|name| !host_tool(name))
        .collect();
    if toolsets_tool && filter.allows(TOOLSETS_TOOL, true) {
        tools.push(TOOLSETS_TOOL.to_owned());
    }
    if resolution.mode.discover || (resolution.mode.search && filter.allows(SEARCH_TOOL, true)) {
        tools.push(SEARCH_TOOL.to_owned());
    }
    if resolution.mode.discover {
        tools.push(CALL_TOOL.to_owned());
    }
    tools.sort();
    tools
}

/// The tools of every bridged server of `registry` that differ from their pins, by server then
/// in the server's order.
pub(crate) fn changed_tools(registry: &Registry) -> Vec<ChangedTool> {
    registry
        .plugins()
        .iter()
        .flat_map(|plugin| match &plugin.provider {
            Provider::Bridged { server, cache } => cache.changed_tools(server),
            Provider::Library | Provider::Isolated { .. } => Vec::new(),
        })
        .collect()
}

/// The keys (names, URIs) of the entries of `toolset`, in order.
fn keys_in<'a, D: Contribution>(
    entries: &'a [Entry<D>],
    toolset: &'a str,
) -> impl Iterator<Item = String> + 'a {
    entries
        .iter()
        .filter(move |e| e.decl.toolset() == toolset)
        .map(|e| e.decl.key().to_owned())
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
            serde_json::to_value(ToolsetsReport::new(&registry, &resolution, false)).unwrap()
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

    #[test]
    fn the_tools_are_filtered_after_extensions_and_include_the_host_tool() {
        let manifest = |json: &str| {
            crate::discovery::DiscoveredPlugin::library(
                "lib.so",
                plugin_manifest::Manifest::from_json(json).unwrap(),
            )
        };
        let registry = Registry::new(vec![
            manifest(
                r#"{"abi": "0.1.0", "name": "base", "version": "1",
                    "toolsets": [{"name": "s"}],
                    "tools": [{"name": "was_ro", "toolset": "s", "annotations": {"readOnlyHint": true}},
                              {"name": "made_ro", "toolset": "s"},
                              {"name": "other", "toolset": "s"}]}"#,
            ),
            manifest(
                r#"{"abi": "0.1.0", "name": "ext", "version": "1",
                    "extends": [{"tool": "was_ro", "annotations": {"destructiveHint": false}},
                                {"tool": "made_ro", "annotations": {"readOnlyHint": true}}]}"#,
            ),
        ]);
        let tools = |query: &str, toolsets_tool: bool| {
            let resolution = resolve(&Query::parse(query), &registry.declared(), None);
            ToolsetsReport::new(&registry, &resolution, toolsets_tool).tools
        };
        assert_eq!(
            tools("", true),
            [TOOLSETS_TOOL, "made_ro", "other", "was_ro"]
        );
        assert_eq!(tools("readonly", true), [TOOLSETS_TOOL, "made_ro"]);
        assert_eq!(tools("readonly", false), ["made_ro"]);
        assert_eq!(tools("tools=*_ro&exclude_tools=was*", true), ["made_ro"]);
    }
}
