//! The registry: manifests become ordered contributions (toolsets, tools, tool extensions,
//! resources, resource templates, prompts and completions, each under its plugin), with every
//! conflict recorded rather than silently resolved.
//!
//! Toolsets, tools, resources, resource templates and prompts are in load order (plugin
//! file-name order), then declaration order. A tool name, resource URI, URI template or prompt
//! name offered by two plugins is served from the first one in that order among the active
//! toolsets; the conflict is listed. A toolset declared by two plugins keeps the first
//! declaration and holds the contributions of both. Reading a URI tries the served resources
//! (exact URI) before the served templates ([`Registry::resource_owner`]); a completion goes to
//! the plugin of the prompt or template it refers to ([`Registry::completion_owner`]).
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

use plugin_api::{
    manifest::{
        CompletionDecl, CompletionRef, ExtensionDecl, PromptDecl, ResourceDecl,
        ResourceTemplateDecl, ToolDecl, ToolsetDecl,
    },
    uri_template::UriTemplate,
};
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
    resources: Vec<ResourceEntry>,
    resource_templates: Vec<ResourceTemplateEntry>,
    /// Each template of `resource_templates`, parsed (`None` when it cannot be: never matched).
    parsed_templates: Vec<Option<UriTemplate>>,
    prompts: Vec<PromptEntry>,
    completions: Vec<CompletionEntry>,
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

/// A contribution (a tool, resource, resource template, prompt or completion) and the plugin
/// that offers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry<D> {
    /// The declaration.
    #[serde(flatten)]
    pub decl: D,
    /// The plugin offering it.
    pub plugin: String,
}

/// A tool and the plugin that offers it.
pub type ToolEntry = Entry<ToolDecl>;
/// A resource and the plugin that offers it.
pub type ResourceEntry = Entry<ResourceDecl>;
/// A resource template and the plugin that offers it.
pub type ResourceTemplateEntry = Entry<ResourceTemplateDecl>;
/// A prompt and the plugin that offers it.
pub type PromptEntry = Entry<PromptDecl>;
/// A completion and the plugin that offers it.
pub type CompletionEntry = Entry<CompletionDecl>;

/// What the registry needs of a declaration served by name in a toolset.
pub trait Contribution {
    /// What it is, for conflicts: `tool`, `resource`, `resource template` or `prompt`.
    const KIND: &'static str;
    /// What names it uniquely among those a URL is served: name, URI or URI template.
    fn key(&self) -> &str;
    /// Its toolset.
    fn toolset(&self) -> &str;
}

macro_rules! contribution {
    ($decl:ty, $kind:literal, $key:ident) => {
        impl Contribution for $decl {
            const KIND: &'static str = $kind;
            fn key(&self) -> &str {
                &self.$key
            }
            fn toolset(&self) -> &str {
                &self.toolset
            }
        }
    };
}

contribution!(ToolDecl, "tool", name);
contribution!(ResourceDecl, "resource", uri);
contribution!(ResourceTemplateDecl, "resource template", uri_template);
contribution!(PromptDecl, "prompt", name);

/// Appends `plugin`'s `decls` to `entries`, recording a conflict for each key already there.
fn collect<D: Contribution + Clone>(
    entries: &mut Vec<Entry<D>>,
    conflicts: &mut Vec<Conflict>,
    plugin: &str,
    decls: &[D],
) {
    for decl in decls {
        if let Some(first) = entries.iter().find(|e| e.decl.key() == decl.key()) {
            conflicts.push(Conflict {
                kind: D::KIND,
                name: decl.key().to_owned(),
                kept: first.plugin.clone(),
                shadowed: plugin.to_owned(),
            });
        }
        entries.push(Entry {
            decl: decl.clone(),
            plugin: plugin.to_owned(),
        });
    }
}

/// The entries served for `active`, in order, the first of each key only.
fn served<'a, D: Contribution>(entries: &'a [Entry<D>], active: &ActiveSet) -> Vec<&'a Entry<D>> {
    let mut served: Vec<&Entry<D>> = Vec::new();
    for entry in entries.iter().filter(|e| active.contains(e.decl.toolset())) {
        if !served.iter().any(|s| s.decl.key() == entry.decl.key()) {
            served.push(entry);
        }
    }
    served
}

/// Where a resource read goes: the plugin whose served resource or template the URI names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResourceOwner<'a> {
    /// A static resource with that URI.
    Resource(&'a ResourceEntry),
    /// A template the URI fits.
    Template(&'a ResourceTemplateEntry),
}

impl ResourceOwner<'_> {
    /// The plugin offering it.
    pub fn plugin(&self) -> &str {
        match self {
            Self::Resource(e) => &e.plugin,
            Self::Template(e) => &e.plugin,
        }
    }
}

/// Where a completion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionOwner<'a> {
    /// No prompt or template served here has that name or URI template.
    Unknown,
    /// The plugin offering the prompt or template does not complete that argument: no values.
    Nobody,
    /// This plugin completes it.
    Plugin(&'a str),
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
    /// `tool`, `toolset`, `resource`, `resource template` or `prompt`.
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
            let m = &plugin.manifest;
            let conflicts = &mut registry.conflicts;
            collect(&mut registry.tools, conflicts, name, &m.tools);
            collect(&mut registry.resources, conflicts, name, &m.resources);
            collect(
                &mut registry.resource_templates,
                conflicts,
                name,
                &m.resource_templates,
            );
            collect(&mut registry.prompts, conflicts, name, &m.prompts);
            registry
                .completions
                .extend(m.completions.iter().map(|c| Entry {
                    decl: c.clone(),
                    plugin: name.clone(),
                }));
        }
        registry.parsed_templates = registry
            .resource_templates
            .iter()
            .map(|t| {
                UriTemplate::parse(&t.decl.uri_template)
                    .inspect_err(|e| {
                        tracing::warn!("plugin `{}`: {e}; it is never matched", t.plugin)
                    })
                    .ok()
            })
            .collect();
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
        served(&self.tools, active)
    }

    /// Every declared resource, in load then declaration order (shadowed ones too).
    pub fn resources(&self) -> &[ResourceEntry] {
        &self.resources
    }

    /// Every declared resource template, in load then declaration order (shadowed ones too).
    pub fn resource_templates(&self) -> &[ResourceTemplateEntry] {
        &self.resource_templates
    }

    /// Every declared prompt, in load then declaration order (shadowed ones too).
    pub fn prompts(&self) -> &[PromptEntry] {
        &self.prompts
    }

    /// Every declared completion, in load then declaration order.
    pub fn completions(&self) -> &[CompletionEntry] {
        &self.completions
    }

    /// The resources served for `active`, in order, the first of each URI only.
    pub fn served_resources(&self, active: &ActiveSet) -> Vec<&ResourceEntry> {
        served(&self.resources, active)
    }

    /// The resource templates served for `active`, in order, the first of each template only.
    pub fn served_resource_templates(&self, active: &ActiveSet) -> Vec<&ResourceTemplateEntry> {
        served(&self.resource_templates, active)
    }

    /// The prompts served for `active`, in order, the first of each name only.
    pub fn served_prompts(&self, active: &ActiveSet) -> Vec<&PromptEntry> {
        served(&self.prompts, active)
    }

    /// The prompt `name` as served for `active`.
    pub fn served_prompt(&self, active: &ActiveSet, name: &str) -> Option<&PromptEntry> {
        self.prompts
            .iter()
            .find(|p| p.decl.name == name && active.contains(&p.decl.toolset))
    }

    /// What serves a read of `uri` for `active`: the first served resource with that URI, else
    /// the first served template `uri` fits; `None` when nothing does.
    pub fn resource_owner(&self, active: &ActiveSet, uri: &str) -> Option<ResourceOwner<'_>> {
        if let Some(resource) = self
            .resources
            .iter()
            .find(|r| r.decl.uri == uri && active.contains(&r.decl.toolset))
        {
            return Some(ResourceOwner::Resource(resource));
        }
        self.resource_templates
            .iter()
            .zip(&self.parsed_templates)
            .find(|(t, parsed)| {
                active.contains(&t.decl.toolset)
                    && parsed.as_ref().is_some_and(|p| p.matches(uri).is_some())
            })
            .map(|(t, _)| ResourceOwner::Template(t))
    }

    /// Who completes `argument` of `reference` for `active`: the plugin of the prompt or
    /// template it refers to, if that plugin declares the completion.
    pub fn completion_owner(
        &self,
        active: &ActiveSet,
        reference: &CompletionRef,
        argument: &str,
    ) -> CompletionOwner<'_> {
        let plugin = match reference {
            CompletionRef::Prompt { name } => self.served_prompt(active, name).map(|p| &p.plugin),
            CompletionRef::Resource { uri } => self
                .resource_templates
                .iter()
                .find(|t| t.decl.uri_template == *uri && active.contains(&t.decl.toolset))
                .map(|t| &t.plugin),
        };
        let Some(plugin) = plugin else {
            return CompletionOwner::Unknown;
        };
        let completes = self.completions.iter().any(|c| {
            c.plugin == *plugin && c.decl.reference == *reference && c.decl.argument == argument
        });
        if completes {
            CompletionOwner::Plugin(plugin)
        } else {
            CompletionOwner::Nobody
        }
    }

    /// The plugins that serving `active` opens, in load order: those declaring an active
    /// toolset and those with an `on_toolset` event for one.
    pub fn plugins_for(&self, active: &ActiveSet) -> Vec<&DiscoveredPlugin> {
        self.plugins
            .iter()
            .filter(|p| active.iter().any(|t| p.manifest.activated_by(t)))
            .collect()
    }

    /// The plugins a tool table for `active` opens: those of [`Registry::plugins_for`] that
    /// may serve a tool there (one declared in an active toolset, tools built at run time, or an
    /// `on_toolset` event naming an active toolset). A plugin that only offers resources and
    /// prompts there is opened when one of them is first read or got.
    pub fn tool_plugins_for(&self, active: &ActiveSet) -> Vec<&DiscoveredPlugin> {
        self.plugins_for(active)
            .into_iter()
            .filter(|p| {
                let m = &p.manifest;
                m.dynamic_tools
                    || m.tools.iter().any(|t| active.contains(&t.toolset))
                    || m.activation.iter().any(|a| {
                        matches!(a, plugin_api::manifest::Activation::OnToolset(t) if active.contains(t))
                    })
            })
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
        assert_eq!(
            keyed(registry.served_tools(&both)),
            [("t", "a"), ("u", "a")]
        );
        let only_b = ActiveSet::from_names(["b"]);
        assert_eq!(registry.served_tools(&only_b)[0].plugin, "b");
    }

    /// Each entry's key (name, URI) and plugin.
    fn keyed<D: Contribution>(entries: Vec<&Entry<D>>) -> Vec<(&str, &str)> {
        entries
            .into_iter()
            .map(|e| (e.decl.key(), e.plugin.as_str()))
            .collect()
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

    /// A plugin `name` with toolset `name` (off by default) holding these resources,
    /// templates, prompts and completions (JSON lists, toolset filled in).
    fn contributing(
        name: &str,
        resources: &str,
        templates: &str,
        prompts: &str,
    ) -> DiscoveredPlugin {
        let mut p = plugin(
            name,
            &format!(r#"[{{"name":"{name}","default":false}}]"#),
            "[]",
        );
        let with_toolset = |list: &str| -> serde_json::Value {
            let mut list: serde_json::Value = serde_json::from_str(list).unwrap();
            for item in list.as_array_mut().unwrap() {
                item["toolset"] = name.into();
            }
            list
        };
        let m = &mut p.manifest;
        m.resources = serde_json::from_value(with_toolset(resources)).unwrap();
        m.resource_templates = serde_json::from_value(with_toolset(templates)).unwrap();
        m.prompts = serde_json::from_value(with_toolset(prompts)).unwrap();
        p
    }

    #[test]
    fn resources_templates_and_prompts_are_served_first_come_with_conflicts_listed() {
        let registry = Registry::new(vec![
            contributing(
                "a",
                r#"[{"uri": "test://x", "name": "x"}, {"uri": "test://a", "name": "a"}]"#,
                r#"[{"uri_template": "test://t/{id}", "name": "t"}]"#,
                r#"[{"name": "p"}]"#,
            ),
            contributing(
                "b",
                r#"[{"uri": "test://x", "name": "x from b"}]"#,
                r#"[{"uri_template": "test://t/{id}", "name": "t"}]"#,
                r#"[{"name": "p"}, {"name": "q"}]"#,
            ),
        ]);
        let kinds: Vec<(&str, &str, &str)> = registry
            .conflicts()
            .iter()
            .map(|c| (c.kind, c.name.as_str(), c.kept.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("resource", "test://x", "a"),
                ("resource template", "test://t/{id}", "a"),
                ("prompt", "p", "a")
            ]
        );
        let both = ActiveSet::from_names(["a", "b"]);
        assert_eq!(
            keyed(registry.served_resources(&both)),
            [("test://x", "a"), ("test://a", "a")]
        );
        assert_eq!(
            keyed(registry.served_prompts(&both)),
            [("p", "a"), ("q", "b")]
        );
        let only_b = ActiveSet::from_names(["b"]);
        assert_eq!(registry.served_resources(&only_b)[0].plugin, "b");
        assert_eq!(registry.served_resource_templates(&only_b)[0].plugin, "b");
        assert!(registry.served_prompts(&ActiveSet::default()).is_empty());
    }

    #[test]
    fn a_read_goes_to_the_resource_then_the_first_template_of_an_active_toolset() {
        let registry = Registry::new(vec![
            contributing(
                "a",
                r#"[{"uri": "test://t/static", "name": "s"}]"#,
                r#"[{"uri_template": "test://t/{id}", "name": "t"}]"#,
                "[]",
            ),
            contributing(
                "b",
                "[]",
                r#"[{"uri_template": "test://{+any}", "name": "u"}]"#,
                "[]",
            ),
        ]);
        let owner = |active: &[&str], uri: &str| {
            registry
                .resource_owner(&ActiveSet::from_names(active.iter().copied()), uri)
                .map(|o| match o {
                    ResourceOwner::Resource(r) => format!("{} {}", r.plugin, r.decl.uri),
                    ResourceOwner::Template(t) => format!("{} {}", t.plugin, t.decl.uri_template),
                })
        };
        assert_eq!(
            owner(&["a", "b"], "test://t/static").unwrap(),
            "a test://t/static"
        );
        assert_eq!(owner(&["a", "b"], "test://t/7").unwrap(), "a test://t/{id}");
        assert_eq!(
            owner(&["a", "b"], "test://t/7/x").unwrap(),
            "b test://{+any}"
        );
        assert_eq!(owner(&["b"], "test://t/static").unwrap(), "b test://{+any}");
        assert_eq!(owner(&["a"], "other://x"), None);
        assert_eq!(owner(&[], "test://t/static"), None);
    }

    #[test]
    fn a_completion_goes_to_the_plugin_of_its_prompt_if_it_completes_that_argument() {
        let mut a = contributing(
            "a",
            "[]",
            "[]",
            r#"[{"name": "p", "arguments": [{"name": "x"}]}]"#,
        );
        a.manifest.completions = serde_json::from_str(
            r#"[{"ref": {"type": "ref/prompt", "name": "p"}, "argument": "x"}]"#,
        )
        .unwrap();
        let registry = Registry::new(vec![a]);
        let active = ActiveSet::from_names(["a"]);
        let prompt = CompletionRef::Prompt { name: "p".into() };
        assert_eq!(
            registry.completion_owner(&active, &prompt, "x"),
            CompletionOwner::Plugin("a")
        );
        assert_eq!(
            registry.completion_owner(&active, &prompt, "y"),
            CompletionOwner::Nobody
        );
        assert_eq!(
            registry.completion_owner(&ActiveSet::default(), &prompt, "x"),
            CompletionOwner::Unknown
        );
        let template = CompletionRef::Resource {
            uri: "test://{id}".into(),
        };
        assert_eq!(
            registry.completion_owner(&active, &template, "id"),
            CompletionOwner::Unknown
        );
    }

    #[test]
    fn a_tool_table_does_not_open_a_plugin_with_only_resources_and_prompts_there() {
        let only_resources = contributing("r", r#"[{"uri": "test://r", "name": "r"}]"#, "[]", "[]");
        let mut asked_for = contributing("e", "[]", "[]", r#"[{"name": "p"}]"#);
        asked_for
            .manifest
            .activation
            .push(plugin_api::manifest::Activation::OnToolset("e".into()));
        let registry = Registry::new(vec![base(), only_resources, asked_for]);
        let active = ActiveSet::from_names(["base", "r", "e"]);
        assert_eq!(registry.plugins_for(&active).len(), 3);
        let opened: Vec<&str> = registry
            .tool_plugins_for(&active)
            .iter()
            .map(|p| p.manifest.name.as_str())
            .collect();
        assert_eq!(opened, ["base", "e"]);
    }
}
