//! Tools, prompts, resources and resource templates a plugin turned off while it runs
//! (`Context::set_tool_available` and its siblings), as the TypeScript SDK's `disable()` does.
//!
//! The server keeps what is turned off ([`Hidden`]); each generation holds a snapshot of it, in
//! which a hidden tool is one more excluded name of every URL's tool filter (so it is neither
//! listed nor callable); a hidden prompt is neither listed, got nor completed; a hidden resource
//! or template is neither listed, read, subscribed to nor completed (a URI it served may fall to
//! a template that is still on). A change makes the next generation over the same plugins, and
//! the sessions whose lists changed hear of it as after any other change
//! ([`crate::serve::mcp::notifications`]). A plugin may turn off only its own; what a plugin turned off is on
//! again once the plugin is replaced or removed (hot reload).

use std::{collections::BTreeSet, sync::Arc};

use plugin_manifest::CompletionRef;
use tokio::sync::mpsc;

use crate::registry::{Registry, ResourceOwner};
use crate::serve::ServeState;

/// What is turned off, by served name (URI for resources, URI template for templates): the
/// same value `/toolsets` reports.
pub(crate) type Hidden = crate::reports::TurnedOff;

/// What a plugin's contribution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A tool.
    Tool,
    /// A prompt.
    Prompt,
    /// A static resource, by URI.
    Resource,
    /// A resource template, by URI template.
    ResourceTemplate,
}

impl Kind {
    /// `tool`, `prompt`, `resource` or `resource_template`, as the ABI names them.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        [
            Self::Tool,
            Self::Prompt,
            Self::Resource,
            Self::ResourceTemplate,
        ]
        .into_iter()
        .find(|kind| kind.name() == name)
    }

    /// Its name: `tool`, `prompt`, `resource` or `resource_template`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::Resource => "resource",
            Self::ResourceTemplate => "resource_template",
        }
    }
}

/// A plugin turning one of its contributions on or off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Toggle {
    /// The plugin asking.
    pub(crate) plugin: String,
    /// A tool or a prompt.
    pub(crate) kind: Kind,
    /// Its served name.
    pub(crate) name: String,
    /// On or off.
    pub(crate) available: bool,
}

/// Where changes go: [`apply_changes`] reads them.
pub(crate) type Toggles = crate::serve::generation::queue::Queue<Toggle>;

impl Hidden {
    /// `self` with `change` applied, if `registry` says the plugin serves what it names;
    /// otherwise why not.
    pub(crate) fn with(&self, change: &Toggle, registry: &Registry) -> Result<Self, String> {
        let names = change.kind.name();
        if owner(registry, change.kind, &change.name) != Some(change.plugin.as_str()) {
            return Err(format!(
                "plugin `{}` cannot turn {} the {names} `{}`: it does not serve it",
                change.plugin,
                if change.available { "on" } else { "off" },
                change.name
            ));
        }
        let mut next = self.clone();
        let set = match change.kind {
            Kind::Tool => &mut next.tools,
            Kind::Prompt => &mut next.prompts,
            Kind::Resource => &mut next.resources,
            Kind::ResourceTemplate => &mut next.resource_templates,
        };
        if change.available {
            set.remove(&change.name);
        } else {
            set.insert(change.name.clone());
        }
        Ok(next)
    }

    /// Whether a read or subscription may go to `owner`: it is not turned off.
    pub(crate) fn shows(&self, owner: &ResourceOwner<'_>) -> bool {
        match owner {
            ResourceOwner::Resource(r) => !self.resources.contains(&r.decl.uri),
            ResourceOwner::Template(t) => !self.resource_templates.contains(&t.decl.uri_template),
        }
    }

    /// Whether the prompt or template a completion refers to is turned off.
    pub(crate) fn hides(&self, reference: &CompletionRef) -> bool {
        match reference {
            CompletionRef::Prompt { name } => self.prompts.contains(name),
            CompletionRef::Resource { uri } => self.resource_templates.contains(uri),
        }
    }

    /// `self` without what the `plugins` (by name, as `registry` knows them) turned off: a
    /// plugin replaced or removed starts anew, everything on.
    pub(crate) fn forgetting(&self, registry: &Registry, plugins: &BTreeSet<String>) -> Self {
        self.kept_by_owner(registry, |owner| {
            !owner.is_some_and(|owner| plugins.contains(owner))
        })
    }

    /// What is off, of the plugins (by name) `shown` keeps, as `/toolsets` reports it.
    pub(crate) fn report(&self, registry: &Registry, shown: impl Fn(&str) -> bool) -> Self {
        self.kept_by_owner(registry, |owner| owner.is_some_and(&shown))
    }

    /// The names whose plugin (as `registry` says; `None` when it serves none) `keep` keeps.
    fn kept_by_owner(&self, registry: &Registry, keep: impl Fn(Option<&str>) -> bool) -> Self {
        let kept = |kind: Kind, names: &BTreeSet<String>| {
            names
                .iter()
                .filter(|name| keep(owner(registry, kind, name)))
                .cloned()
                .collect()
        };
        Self {
            tools: kept(Kind::Tool, &self.tools),
            prompts: kept(Kind::Prompt, &self.prompts),
            resources: kept(Kind::Resource, &self.resources),
            resource_templates: kept(Kind::ResourceTemplate, &self.resource_templates),
        }
    }
}

/// The plugin serving the `kind` named `name`, as `registry` says.
fn owner<'r>(registry: &'r Registry, kind: Kind, name: &str) -> Option<&'r str> {
    match kind {
        Kind::Tool => registry
            .tools()
            .iter()
            .find(|t| t.decl.name == name)
            .map(|t| t.plugin.as_str()),
        Kind::Prompt => registry
            .prompts()
            .iter()
            .find(|p| p.decl.name == name)
            .map(|p| p.plugin.as_str()),
        Kind::Resource => registry
            .resources()
            .iter()
            .find(|r| r.decl.uri == name)
            .map(|r| r.plugin.as_str()),
        Kind::ResourceTemplate => registry
            .resource_templates()
            .iter()
            .find(|t| t.decl.uri_template == name)
            .map(|t| t.plugin.as_str()),
    }
}

/// Applies each change the plugins send, until the server stops: a change that turns something
/// on or off makes the next generation, and the sessions whose lists changed are told.
pub(crate) async fn apply_changes(
    state: Arc<ServeState>,
    mut changes: mpsc::UnboundedReceiver<Toggle>,
) {
    while let Some(change) = changes.recv().await {
        let _changing = state.changing.lock().await;
        let old = state.generation();
        let hidden = old.hidden();
        let next = match hidden.with(&change, old.registry()) {
            Ok(next) => next,
            Err(refused) => {
                tracing::warn!("{refused}");
                continue;
            }
        };
        if next == **hidden {
            continue;
        }
        let generation = state.advance(&old, Arc::clone(old.builder()), next);
        let told = state.announce(&old, &generation, &BTreeSet::new());
        tracing::info!(
            plugin = change.plugin,
            "generation {}: {} `{}` turned {}; {told} session(s) told their lists changed",
            generation.info().number,
            change.kind.name(),
            change.name,
            if change.available { "on" } else { "off" },
        );
    }
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Manifest;

    use super::*;
    use crate::discovery::DiscoveredPlugin;

    /// Two plugins: `a` with the tool `ta` and the prompt `pa`, `b` with the tool `tb`.
    fn registry() -> Registry {
        let plugin = |json: &str, file: &str| {
            DiscoveredPlugin::library(file, Manifest::from_json(json).unwrap())
        };
        Registry::new(vec![
            plugin(
                r#"{"abi": "0.1.0", "name": "a", "version": "1", "toolsets": [{"name": "a"}],
                    "tools": [{"name": "ta", "toolset": "a"}],
                    "prompts": [{"name": "pa", "toolset": "a"}]}"#,
                "liba.so",
            ),
            plugin(
                r#"{"abi": "0.1.0", "name": "b", "version": "1", "toolsets": [{"name": "b"}],
                    "tools": [{"name": "tb", "toolset": "b"}]}"#,
                "libb.so",
            ),
        ])
    }

    fn change(plugin: &str, kind: Kind, name: &str, available: bool) -> Toggle {
        Toggle {
            plugin: plugin.to_owned(),
            kind,
            name: name.to_owned(),
            available,
        }
    }

    #[test]
    fn a_plugin_turns_its_own_tools_and_prompts_off_and_on_and_nobody_elses() {
        let registry = registry();
        let off = Hidden::default()
            .with(&change("a", Kind::Tool, "ta", false), &registry)
            .and_then(|h| h.with(&change("a", Kind::Prompt, "pa", false), &registry))
            .unwrap();
        assert!(off.tools.contains("ta") && off.prompts.contains("pa"));
        let on = off
            .with(&change("a", Kind::Tool, "ta", true), &registry)
            .unwrap();
        assert!(on.tools.is_empty() && on.prompts.contains("pa"));
        let refused = off
            .with(&change("a", Kind::Tool, "tb", false), &registry)
            .unwrap_err();
        assert_eq!(
            refused,
            "plugin `a` cannot turn off the tool `tb`: it does not serve it"
        );
        assert!(
            off.with(&change("a", Kind::Prompt, "ta", false), &registry)
                .is_err()
        );
    }

    #[test]
    fn an_off_template_hides_its_reads_and_completions() {
        let registry = Registry::new(vec![DiscoveredPlugin::library(
            "libc.so",
            Manifest::from_json(
                r#"{"abi": "0.1.0", "name": "c", "version": "1", "toolsets": [{"name": "c"}],
                    "resource_templates": [{"uri_template": "c://{id}", "name": "t",
                                            "toolset": "c"}]}"#,
            )
            .unwrap(),
        )]);
        let off = Hidden::default()
            .with(
                &change("c", Kind::ResourceTemplate, "c://{id}", false),
                &registry,
            )
            .unwrap();
        let template = &registry.resource_templates()[0];
        assert!(!off.shows(&ResourceOwner::Template(template)));
        assert!(Hidden::default().shows(&ResourceOwner::Template(template)));
        let reference = CompletionRef::Resource {
            uri: "c://{id}".to_owned(),
        };
        assert!(off.hides(&reference));
        assert!(!Hidden::default().hides(&reference));
        assert!(
            off.with(
                &change("a", Kind::ResourceTemplate, "c://{id}", true),
                &registry
            )
            .is_err(),
            "not plugin a's"
        );
    }

    #[test]
    fn a_plugin_starting_anew_has_everything_on() {
        let registry = registry();
        let hidden = Hidden {
            tools: BTreeSet::from(["ta".to_owned(), "tb".to_owned()]),
            prompts: BTreeSet::from(["pa".to_owned()]),
            ..Hidden::default()
        };
        let after = hidden.forgetting(&registry, &BTreeSet::from(["a".to_owned()]));
        assert_eq!(after.tools, BTreeSet::from(["tb".to_owned()]));
        assert!(after.prompts.is_empty());
    }
}
