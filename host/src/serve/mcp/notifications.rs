//! Who hears that a list changed: `notifications/tools/list_changed`, and the resources and
//! prompts ones, sent when a new generation changes what a session's URL is served.
//!
//! A session registers at `initialize` (2025-11-25 and earlier: its peer, its URL's query and
//! selection headers), and a 2026-07-28 `subscriptions/listen` stream while it is open (its
//! sink, the lists its filter accepted). The registration ends with the session (its handler is
//! dropped) or the stream. When the server swaps generations, [`Listeners::announce`] compares,
//! for each distinct selection, what the old and the new generation serve it (from manifests:
//! nothing is opened) and which plugins serve it: a list changed when its entries differ, or
//! when a plugin serving it was added, replaced or removed (the same manifest may come with
//! other code). Only the sessions whose lists changed hear of it; each send is a task of its
//! own, so a slow client delays no other.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use rmcp::{
    RoleServer,
    model::{
        PromptListChangedNotification, ResourceListChangedNotification, ServerNotification,
        ToolListChangedNotification,
    },
    service::{Peer, SubscriptionSink},
};
use serde_json::Value;

use crate::serve::{
    generation::Generation,
    generation::availability::Hidden,
    mcp::{prompts, resources},
};
use crate::util::lock::lock;
use crate::{
    registry::Registry,
    selection::{Query, Resolution, ToolFilter},
};

/// A session's selection: its URL's query and selection headers' values, within its caller's
/// bound.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Selection {
    /// The URL's query.
    pub(crate) query: String,
    /// The selection headers' values ([`crate::serve::selection_headers`]).
    pub(crate) headers: [Option<String>; 4],
    /// The caller's bound, when authentication is on.
    pub(crate) bound: Option<crate::auth::Bound>,
}

/// Which lists: as a session wants to hear of them, or as they changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Lists {
    /// Tools.
    pub(crate) tools: bool,
    /// Resources and resource templates.
    pub(crate) resources: bool,
    /// Prompts.
    pub(crate) prompts: bool,
}

impl Lists {
    /// Every list.
    pub(crate) const ALL: Self = Self {
        tools: true,
        resources: true,
        prompts: true,
    };

    fn any(self) -> bool {
        self.tools || self.resources || self.prompts
    }

    fn and(self, other: Self) -> Self {
        Self {
            tools: self.tools && other.tools,
            resources: self.resources && other.resources,
            prompts: self.prompts && other.prompts,
        }
    }
}

/// How a listener is told.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A session, through its peer.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 `subscriptions/listen` stream.
    Stream(SubscriptionSink),
}

impl Target {
    /// Sends the notification of each list in `lists`; why not, at the first that failed.
    async fn tell(&self, lists: Lists) -> Result<(), String> {
        let mut notifications = Vec::new();
        if lists.tools {
            notifications.push(ServerNotification::ToolListChangedNotification(
                ToolListChangedNotification::default(),
            ));
        }
        if lists.resources {
            notifications.push(ServerNotification::ResourceListChangedNotification(
                ResourceListChangedNotification::default(),
            ));
        }
        if lists.prompts {
            notifications.push(ServerNotification::PromptListChangedNotification(
                PromptListChangedNotification::default(),
            ));
        }
        for notification in notifications {
            match self {
                Self::Session(peer) => peer
                    .send_notification(notification)
                    .await
                    .map_err(|e| e.to_string())?,
                Self::Stream(sink) => sink.send(notification).await.map_err(|e| e.to_string())?,
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct Listener {
    selection: Selection,
    target: Target,
    wants: Lists,
}

/// Every registered listener.
#[derive(Debug, Default)]
pub(crate) struct Listeners {
    next: AtomicU64,
    entries: Mutex<BTreeMap<u64, Listener>>,
}

/// One listener's registration; dropping it ends it.
#[derive(Debug)]
pub(crate) struct Registration {
    id: u64,
    listeners: Arc<Listeners>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.listeners.lock().remove(&self.id);
    }
}

impl Listeners {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Listener>> {
        lock(&self.entries)
    }

    /// Registers `target`, served `selection`, to hear of changes to the lists in `wants`.
    pub(crate) fn register(
        self: &Arc<Self>,
        selection: Selection,
        target: Target,
        wants: Lists,
    ) -> Registration {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(
            id,
            Listener {
                selection,
                target,
                wants,
            },
        );
        Registration {
            id,
            listeners: Arc::clone(self),
        }
    }

    /// How many listeners are registered.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Tells each listener whose lists differ between `old` and `new` which of them changed;
    /// `changed` names the plugins whose code may differ. Returns how many were told.
    pub(crate) fn announce(
        &self,
        old: &Generation,
        new: &Generation,
        changed: &BTreeSet<String>,
        fallback: Option<&Query>,
        bounds: &ToolFilter,
    ) -> usize {
        let listeners: Vec<Listener> = self.lock().values().cloned().collect();
        let mut differs: BTreeMap<&Selection, Lists> = BTreeMap::new();
        let mut told = 0;
        for listener in &listeners {
            let lists = *differs.entry(&listener.selection).or_insert_with(|| {
                let resolve = |generation: &Generation| {
                    let selection = &listener.selection;
                    let resolved = generation.resolve(
                        &selection.query,
                        &selection.headers,
                        fallback,
                        bounds,
                        selection.bound.as_ref(),
                    );
                    ServedLists::of(
                        generation.registry(),
                        &resolved.resolution,
                        generation.hidden(),
                    )
                };
                resolve(old).differs(&resolve(new), changed)
            });
            told += usize::from(listener.tell(lists));
        }
        told
    }

    /// Tells every listener that wants to hear of them that `lists` may have changed, for a
    /// change no generation shows (a policy's rules); how many were told.
    pub(crate) fn announce_to_all(&self, lists: Lists) -> usize {
        let listeners: Vec<Listener> = self.lock().values().cloned().collect();
        listeners
            .iter()
            .filter(|listener| listener.tell(lists))
            .count()
    }
}

impl Listener {
    /// Sends, in a task of its own, the notifications of the lists in `changed` this listener
    /// wants; whether there were any.
    fn tell(&self, changed: Lists) -> bool {
        let tell = changed.and(self.wants);
        if !tell.any() {
            return false;
        }
        let target = self.target.clone();
        tokio::spawn(async move {
            if let Err(error) = target.tell(tell).await {
                tracing::debug!("a session did not hear that its lists changed: {error}");
            }
        });
        true
    }
}

/// What a selection is served in one generation, from manifests, and by which plugins.
#[derive(Debug, PartialEq)]
struct ServedLists {
    tools: Value,
    tool_plugins: BTreeSet<String>,
    resources: Value,
    resource_plugins: BTreeSet<String>,
    prompts: Value,
    prompt_plugins: BTreeSet<String>,
}

impl ServedLists {
    /// `hidden` says which prompts, resources and templates their plugins turned off.
    fn of(registry: &Registry, resolution: &Resolution, hidden: &Hidden) -> Self {
        let active = &resolution.active;
        let tools = registry.shown_tools(resolution);
        let mut tool_plugins: BTreeSet<String> = registry
            .tool_plugins_for(active)
            .iter()
            .map(|p| p.manifest.name.clone())
            .collect();
        for tool in &tools {
            tool_plugins.extend(
                registry
                    .extensions_of(&tool.name)
                    .iter()
                    .map(|e| e.plugin.clone()),
            );
        }
        let owners = |plugins: Vec<&String>| plugins.into_iter().cloned().collect();
        Self {
            tools: serde_json::to_value(&tools).unwrap_or_default(),
            tool_plugins,
            resources: serde_json::json!([
                resources::list_resources(registry, active, hidden),
                resources::list_resource_templates(registry, active, hidden),
            ]),
            resource_plugins: owners(
                registry
                    .served_resources(active)
                    .into_iter()
                    .map(|r| &r.plugin)
                    .chain(
                        registry
                            .served_resource_templates(active)
                            .into_iter()
                            .map(|t| &t.plugin),
                    )
                    .collect(),
            ),
            prompts: serde_json::to_value(prompts::list_prompts(registry, active, hidden))
                .unwrap_or_default(),
            prompt_plugins: owners(
                registry
                    .served_prompts(active)
                    .into_iter()
                    .map(|p| &p.plugin)
                    .collect(),
            ),
        }
    }

    /// Which lists differ from `self` to `new`, `changed` naming the plugins whose code may.
    fn differs(&self, new: &Self, changed: &BTreeSet<String>) -> Lists {
        let touched = |old: &BTreeSet<String>, new: &BTreeSet<String>| {
            old.union(new).any(|name| changed.contains(name))
        };
        Lists {
            tools: self.tools != new.tools || touched(&self.tool_plugins, &new.tool_plugins),
            resources: self.resources != new.resources
                || touched(&self.resource_plugins, &new.resource_plugins),
            prompts: self.prompts != new.prompts
                || touched(&self.prompt_plugins, &new.prompt_plugins),
        }
    }
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Manifest;

    use super::*;
    use crate::{
        discovery::DiscoveredPlugin,
        selection::{Query, resolve},
    };

    fn registry(tools: &str) -> Registry {
        let json = format!(
            r#"{{"abi":"0.1.0","name":"p","version":"1",
                "toolsets":[{{"name":"s","default":true}}],
                "tools":[{tools}],
                "prompts":[{{"name":"greet","toolset":"s"}}]}}"#
        );
        Registry::new(vec![DiscoveredPlugin::library(
            "libp.so",
            Manifest::from_json(&json).unwrap(),
        )])
    }

    fn served(registry: &Registry) -> ServedLists {
        let resolution = resolve(&Query::parse(""), &registry.declared(), None);
        ServedLists::of(registry, &resolution, &Hidden::default())
    }

    #[test]
    fn a_new_tool_changes_the_tools_alone() {
        let before = served(&registry(r#"{"name":"a","toolset":"s"}"#));
        let after = served(&registry(
            r#"{"name":"a","toolset":"s"},{"name":"b","toolset":"s"}"#,
        ));
        let lists = before.differs(&after, &BTreeSet::new());
        assert_eq!(
            lists,
            Lists {
                tools: true,
                resources: false,
                prompts: false
            }
        );
        assert!(!before.differs(&before, &BTreeSet::new()).any());
    }

    #[test]
    fn new_code_under_the_same_manifest_changes_what_that_plugin_serves() {
        let before = served(&registry(r#"{"name":"a","toolset":"s"}"#));
        let lists = before.differs(&before, &BTreeSet::from(["p".to_owned()]));
        assert_eq!(
            lists,
            Lists {
                tools: true,
                resources: false,
                prompts: true
            }
        );
        assert!(
            !before
                .differs(&before, &BTreeSet::from(["other".to_owned()]))
                .any()
        );
    }
}
