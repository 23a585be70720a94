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

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use plugin_manifest::{
    CompletionDecl, CompletionRef, PromptDecl, ResourceDecl, ResourceTemplateDecl, ToolDecl,
    ToolsetDecl, uri_template::UriTemplate,
};
use serde::Serialize;

mod extensions;

pub(crate) use extensions::{
    ExtensionEntry, ExtensionSummary, Extensions, TargetedExtension, apply_metadata,
};

use crate::{
    discovery::DiscoveredPlugin,
    selection::{ActiveSet, Declared, Resolution},
};

/// Every contribution of the discovered plugins.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    plugins: Vec<DiscoveredPlugin>,
    /// The index in `plugins` of the first plugin of each name.
    by_name: HashMap<String, usize>,
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
pub(crate) struct ToolsetEntry {
    /// The declaration.
    #[serde(flatten)]
    pub(crate) decl: ToolsetDecl,
    /// The plugin that declared it.
    pub(crate) plugin: String,
}

/// A contribution (a tool, resource, resource template, prompt or completion) and the plugin
/// that offers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Entry<D> {
    /// The declaration.
    #[serde(flatten)]
    pub(crate) decl: D,
    /// The plugin offering it.
    pub(crate) plugin: String,
}

/// A tool and the plugin that offers it.
pub(crate) type ToolEntry = Entry<ToolDecl>;
/// A resource and the plugin that offers it.
pub(crate) type ResourceEntry = Entry<ResourceDecl>;
/// A resource template and the plugin that offers it.
pub(crate) type ResourceTemplateEntry = Entry<ResourceTemplateDecl>;
/// A prompt and the plugin that offers it.
pub(crate) type PromptEntry = Entry<PromptDecl>;
/// A completion and the plugin that offers it.
pub(crate) type CompletionEntry = Entry<CompletionDecl>;

/// What the registry needs of a declaration served by name in a toolset.
pub(crate) trait Contribution {
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

/// Appends `plugin`'s `decls` to `entries`, recording a conflict for each key already there;
/// `firsts` maps each key to the index of its first entry.
fn collect<D: Contribution + Clone>(
    entries: &mut Vec<Entry<D>>,
    firsts: &mut HashMap<String, usize>,
    conflicts: &mut Vec<Conflict>,
    plugin: &str,
    decls: &[D],
) {
    for decl in decls {
        match firsts.get(decl.key()) {
            Some(&first) => conflicts.push(Conflict {
                kind: D::KIND,
                name: decl.key().to_owned(),
                kept: entries[first].plugin.clone(),
                shadowed: plugin.to_owned(),
            }),
            None => {
                firsts.insert(decl.key().to_owned(), entries.len());
            }
        }
        entries.push(Entry {
            decl: decl.clone(),
            plugin: plugin.to_owned(),
        });
    }
}

/// The entries served for `active`, in order, the first of each key only.
fn served<'a, D: Contribution>(entries: &'a [Entry<D>], active: &ActiveSet) -> Vec<&'a Entry<D>> {
    let mut keys = HashSet::new();
    entries
        .iter()
        .filter(|e| active.contains(e.decl.toolset()) && keys.insert(e.decl.key()))
        .collect()
}

/// Where a resource read goes: the plugin whose served resource or template the URI names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ResourceOwner<'a> {
    /// A static resource with that URI.
    Resource(&'a ResourceEntry),
    /// A template the URI fits.
    Template(&'a ResourceTemplateEntry),
}

impl<'a> ResourceOwner<'a> {
    /// The plugin offering it.
    pub(crate) fn plugin(&self) -> &'a str {
        match self {
            Self::Resource(e) => &e.plugin,
            Self::Template(e) => &e.plugin,
        }
    }
}

/// Where a completion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompletionOwner<'a> {
    /// No prompt or template served here has that name or URI template.
    Unknown,
    /// The plugin offering the prompt or template does not complete that argument: no values.
    Nobody,
    /// This plugin completes it.
    Plugin(&'a str),
}

/// Two plugins offering the same name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Conflict {
    /// `tool`, `toolset`, `resource`, `resource template` or `prompt`.
    pub(crate) kind: &'static str,
    /// The contested name.
    pub(crate) name: String,
    /// The plugin whose contribution wins (first in load order).
    pub(crate) kept: String,
    /// The plugin whose contribution loses where both are active.
    pub(crate) shadowed: String,
}

impl Registry {
    /// Builds the registry from discovered plugins, in their order.
    pub fn new(plugins: Vec<DiscoveredPlugin>) -> Self {
        let mut registry = Self::default();
        // The first entry of each tool name, resource URI, template and prompt name.
        let mut firsts = <(HashMap<_, _>, HashMap<_, _>, HashMap<_, _>, HashMap<_, _>)>::default();
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
            collect(
                &mut registry.tools,
                &mut firsts.0,
                conflicts,
                name,
                &m.tools,
            );
            collect(
                &mut registry.resources,
                &mut firsts.1,
                conflicts,
                name,
                &m.resources,
            );
            collect(
                &mut registry.resource_templates,
                &mut firsts.2,
                conflicts,
                name,
                &m.resource_templates,
            );
            collect(
                &mut registry.prompts,
                &mut firsts.3,
                conflicts,
                name,
                &m.prompts,
            );
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
        registry.extensions = Extensions::new(&plugins);
        for (i, plugin) in plugins.iter().enumerate() {
            registry
                .by_name
                .entry(plugin.manifest.name.clone())
                .or_insert(i);
        }
        registry.plugins = plugins;
        registry
    }

    /// Its conflicts that `before` (the registry it replaces, if any) did not have, each logged
    /// as a warning: a rescan that changes nothing, or changes something else, says nothing
    /// again.
    pub(crate) fn warn_of_new_conflicts(&self, before: Option<&Registry>) -> Vec<&Conflict> {
        let new: Vec<&Conflict> = self
            .conflicts
            .iter()
            .filter(|c| before.is_none_or(|b| !b.conflicts.contains(c)))
            .collect();
        for conflict in &new {
            tracing::warn!(
                "{} `{}` is offered by plugins `{}` and `{}`: `{}` is served where both are active",
                conflict.kind,
                conflict.name,
                conflict.kept,
                conflict.shadowed,
                conflict.kept
            );
        }
        new
    }

    /// The plugins, in load order.
    pub(crate) fn plugins(&self) -> &[DiscoveredPlugin] {
        &self.plugins
    }

    /// The plugin called `name`.
    pub(crate) fn plugin(&self, name: &str) -> Option<&DiscoveredPlugin> {
        self.by_name.get(name).map(|&i| &self.plugins[i])
    }

    /// Every toolset, sorted by name.
    pub(crate) fn toolsets(&self) -> impl Iterator<Item = &ToolsetEntry> {
        self.toolsets.values()
    }

    /// Every toolset as selection sees it, sorted by name.
    pub(crate) fn declared(&self) -> Vec<Declared<'_>> {
        self.toolsets()
            .map(|t| Declared {
                name: &t.decl.name,
                default: t.decl.default,
                always: t.decl.always,
            })
            .collect()
    }
    /// Every statically declared tool, in load then declaration order (shadowed ones too).
    pub(crate) fn tools(&self) -> &[ToolEntry] {
        &self.tools
    }

    /// Every extension, in applied order per tool.
    pub(crate) fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The extensions of `tool`, in the order they apply: the last is the outermost.
    pub(crate) fn extensions_of(&self, tool: &str) -> Vec<&ExtensionEntry> {
        self.extensions.of(tool)
    }

    /// The extensions whose target no discovered plugin declares (see the module docs).
    pub(crate) fn pending(&self) -> Vec<&ExtensionEntry> {
        self.extensions.pending()
    }

    /// Every conflict, in the order found.
    pub(crate) fn conflicts(&self) -> &[Conflict] {
        &self.conflicts
    }

    /// The statically declared tools served for `active`, in load then declaration order, the
    /// first of each name only.
    pub(crate) fn served_tools(&self, active: &ActiveSet) -> Vec<&ToolEntry> {
        served(&self.tools, active)
    }

    /// The statically declared tools `resolution` shows, as their extensions leave them: those
    /// of its active set that its filter lets through (by name and read-only annotation).
    pub(crate) fn shown_tools(&self, resolution: &Resolution) -> Vec<ToolDecl> {
        let filter = &resolution.filter;
        self.served_tools(&resolution.active)
            .into_iter()
            .map(|t| self.extensions().apply_to(&t.decl))
            .filter(|t| filter.allows(&t.name, t.annotations.read_only == Some(true)))
            .collect()
    }

    /// Every declared resource, in load then declaration order (shadowed ones too).
    pub(crate) fn resources(&self) -> &[ResourceEntry] {
        &self.resources
    }

    /// Every declared resource template, in load then declaration order (shadowed ones too).
    pub(crate) fn resource_templates(&self) -> &[ResourceTemplateEntry] {
        &self.resource_templates
    }

    /// Every declared prompt, in load then declaration order (shadowed ones too).
    pub(crate) fn prompts(&self) -> &[PromptEntry] {
        &self.prompts
    }

    /// The resources served for `active`, in order, the first of each URI only.
    pub(crate) fn served_resources(&self, active: &ActiveSet) -> Vec<&ResourceEntry> {
        served(&self.resources, active)
    }

    /// The resource templates served for `active`, in order, the first of each template only.
    pub(crate) fn served_resource_templates(
        &self,
        active: &ActiveSet,
    ) -> Vec<&ResourceTemplateEntry> {
        served(&self.resource_templates, active)
    }

    /// The prompts served for `active`, in order, the first of each name only.
    pub(crate) fn served_prompts(&self, active: &ActiveSet) -> Vec<&PromptEntry> {
        served(&self.prompts, active)
    }

    /// The prompt `name` as served for `active`.
    pub(crate) fn served_prompt(&self, active: &ActiveSet, name: &str) -> Option<&PromptEntry> {
        self.prompts
            .iter()
            .find(|p| p.decl.name == name && active.contains(&p.decl.toolset))
    }

    /// What serves a read of `uri` for `active`: the served resource with that URI, else the
    /// first served template `uri` fits; of those `shown` keeps (what a plugin turned off is
    /// not, and it does not bring what it shadows back). `None` when nothing does.
    pub(crate) fn resource_owner(
        &self,
        active: &ActiveSet,
        uri: &str,
        shown: impl Fn(&ResourceOwner<'_>) -> bool,
    ) -> Option<ResourceOwner<'_>> {
        let resource = self
            .resources
            .iter()
            .find(|r| r.decl.uri == uri && active.contains(&r.decl.toolset))
            .map(ResourceOwner::Resource)
            .filter(&shown);
        if resource.is_some() {
            return resource;
        }
        let mut served = BTreeSet::new();
        self.resource_templates
            .iter()
            .zip(&self.parsed_templates)
            .filter(|(t, _)| {
                active.contains(&t.decl.toolset) && served.insert(t.decl.uri_template.as_str())
            })
            .filter(|(_, parsed)| parsed.as_ref().is_some_and(|p| p.matches(uri).is_some()))
            .map(|(t, _)| ResourceOwner::Template(t))
            .find(shown)
    }

    /// Who completes `argument` of `reference` for `active`: the plugin of the prompt or
    /// template it refers to, if that plugin declares the completion.
    pub(crate) fn completion_owner(
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
    pub(crate) fn plugins_for(&self, active: &ActiveSet) -> Vec<&DiscoveredPlugin> {
        self.plugins
            .iter()
            .filter(|p| active.iter().any(|t| p.manifest.activated_by(t)))
            .collect()
    }

    /// The plugins a tool table for `active` opens: those of [`Registry::plugins_for`] that
    /// may serve a tool there (one declared in an active toolset, tools built at run time, or an
    /// `on_toolset` event naming an active toolset). A plugin that only offers resources and
    /// prompts there is opened when one of them is first read or got.
    pub(crate) fn tool_plugins_for(&self, active: &ActiveSet) -> Vec<&DiscoveredPlugin> {
        self.plugins_for(active)
            .into_iter()
            .filter(|p| {
                let m = &p.manifest;
                m.dynamic_tools
                    || m.tools.iter().any(|t| active.contains(&t.toolset))
                    || m.activation.iter().any(|a| {
                        matches!(a, plugin_manifest::Activation::OnToolset(t) if active.contains(t))
                    })
            })
            .collect()
    }

    /// The plugins with an `on_startup` event.
    pub(crate) fn startup_plugins(&self) -> Vec<&DiscoveredPlugin> {
        self.plugins
            .iter()
            .filter(|p| p.manifest.on_startup())
            .collect()
    }
}

#[cfg(test)]
mod tests;
