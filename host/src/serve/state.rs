//! What every request handler shares ([`ServeState`]): the current generation behind an atomic
//! swap, the server-wide hubs (subscriptions, list listeners, tasks), and how a request's URL
//! query and selection headers are resolved (cached per distinct key).

use std::{borrow::Cow, collections::HashMap, sync::Arc};

use arc_swap::ArcSwap;
use axum::http::{HeaderMap, HeaderName};
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};

use crate::{
    auth::Bound,
    build::Builder,
    registry::Registry,
    selection::{self, Query, ToolFilter},
    serve::{
        Options, SessionLimits,
        generation::{Generation, availability, served},
        host_context::rounds,
        mcp::{notifications, subscriptions, tasks},
    },
};

/// What every request handler shares.
#[derive(Debug)]
pub(crate) struct ServeState {
    /// The generation requests are served from; swapped whole when the plugins change.
    pub(super) current: ArcSwap<Generation>,
    pub(super) fallback: Option<Query>,
    /// The operator's tool bounds.
    pub(super) bounds: ToolFilter,
    pub(super) toolsets_tool: bool,
    /// See [`Options::for_parent`].
    pub(super) for_parent: bool,
    pub(super) info: ServerConfig,
    /// The bounds on sessions.
    pub(super) limits: SessionLimits,
    /// Every session's resource subscriptions.
    pub(super) subscriptions: Arc<subscriptions::ServerHub>,
    /// Where plugins say a resource changed; [`subscriptions::dispatch`] sends it on.
    pub(super) updates: subscriptions::Updates,
    /// The sessions and streams to tell when their lists change.
    pub(super) listeners: Arc<notifications::Listeners>,
    /// Whether sessions are kept (not `--stateless`): only then is a session told anything.
    pub(super) sessions: bool,
    /// Where plugins turn their tools and prompts on and off ([`availability`]).
    pub(super) availability: availability::Toggles,
    /// Held while a new generation is made from the current one (a scan, a plugin turning
    /// something off), so that one never builds on a generation another replaced meanwhile.
    pub(super) changing: tokio::sync::Mutex<()>,
    /// Seals the state of 2026-07-28 input-required results.
    pub(super) sealer: rounds::Sealer,
    /// The files the last scan of the plugin folder skipped, each with why (a second file of
    /// one plugin, a library that is not a plugin, a name no URL can select): `/healthz` says.
    pub(crate) skipped: ArcSwap<Vec<crate::reports::SkippedRow>>,
    /// The calls run as tasks (the tasks extension), server-wide: a task outlives the request,
    /// and the session (none under 2026-07-28), that created it.
    pub(super) tasks: tasks::Tasks,
    /// The policy file, when there is one.
    pub(crate) policy: Option<Arc<crate::policy::PolicyStore>>,
    /// What `/readyz` answers.
    pub(crate) readiness: crate::serve::edge::readiness::Readiness,
    /// The state shared with the other replicas, with `--redis-url`.
    pub(crate) shared: Option<Arc<crate::shared::Shared>>,
}

impl ServeState {
    /// What `GET /toolsets` and `list_server_toolsets` answer for `resolution` in
    /// `generation`: the manifests' view, the generation, and the state of opened plugins'
    /// processes; to a caller, only the toolsets it may use are listed.
    pub(crate) fn toolsets_report(
        &self,
        generation: &Generation,
        resolution: &crate::selection::Resolution,
        caller: Option<&crate::auth::Identity>,
    ) -> crate::reports::ToolsetsReport {
        let mut report = crate::reports::ToolsetsReport::new(
            generation.registry(),
            resolution,
            self.toolsets_tool,
        )
        .with_generation(generation.info());
        let builder = generation.builder();
        report = report.with_open(|plugin| builder.is_open(plugin));
        // Discovery mode lists the same tools however many plugins are open.
        if !resolution.mode.discover
            && let Some(mut served) = generation.sets.served_names(resolution)
        {
            let search = crate::reports::search::SEARCH_TOOL;
            if resolution.mode.search && resolution.filter.allows(search, true) {
                served.retain(|name| name != search);
                served.push(search.to_owned());
                served.sort();
            }
            report.tools = served;
        }
        report.skills = (generation.skills_for(&resolution.active).into_iter())
            .map(|s| s.uri)
            .collect();
        report.processes = generation.builder().processes();
        report.failed = crate::serve::generation::failed_plugins(generation);
        let registry = generation.registry();
        report.off = generation.hidden().report(registry, |plugin| {
            caller.is_none_or(|c| c.bound.sees_plugin(registry, plugin))
        });
        report.breakers = self
            .breakers()
            .into_iter()
            .filter(|row| caller.is_none_or(|c| c.bound.sees_plugin(registry, &row.plugin)))
            .collect();
        match caller {
            Some(caller) => report.within(&caller.bound, registry),
            None => report,
        }
    }

    /// `GET /contributions` on `generation`; to a caller, only the tools it may be served
    /// (of toolsets it may use, read-only ones if it is bound to those, as their extensions
    /// leave them) with every extension applied to them, and the pending extensions of plugins
    /// it may use.
    pub(crate) fn contributions_report(
        generation: &Generation,
        caller: Option<&crate::auth::Identity>,
    ) -> crate::reports::ContributionsReport {
        let registry = generation.registry();
        let report = crate::reports::ContributionsReport::new(registry);
        match caller {
            Some(caller) => report.within(&caller.bound, registry),
            None => report,
        }
    }

    #[allow(deprecated)] // logging is deprecated by SEP-2577, still in 2025-11-25
    /// The state, serving generation 1 over `builder`, and the receiving end of its
    /// [`subscriptions::Updates`] for [`subscriptions::dispatch`].
    pub(super) fn new(
        builder: Arc<Builder>,
        args: &Options,
        sealer: rounds::Sealer,
        policy: Option<Arc<crate::policy::PolicyStore>>,
        shared: Option<Arc<crate::shared::Shared>>,
    ) -> (
        Self,
        tokio::sync::mpsc::UnboundedReceiver<String>,
        tokio::sync::mpsc::UnboundedReceiver<availability::Toggle>,
    ) {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_tasks()
            .build();
        let info = ServerConfig::new(capabilities).with_server_info(Implementation::new(
            args.name.clone(),
            env!("CARGO_PKG_VERSION"),
        ));
        // With shared state, the replica has a name: the one given, or one made at start-up.
        let replica = shared
            .as_ref()
            .map(|shared| shared.replica().to_owned())
            .or_else(|| args.replica_id.clone());
        let (updates, receiver) = subscriptions::Updates::channel();
        let updates = updates.mirrored(shared.as_ref().map(crate::serve::replicas::mirror_updates));
        let (availability, changes) = availability::Toggles::channel();
        let availability =
            availability.mirrored(shared.as_ref().map(crate::serve::replicas::mirror_toggles));
        let state = Self {
            current: ArcSwap::from_pointee(Generation::first(builder, args.toolsets_tool)),
            availability,
            changing: tokio::sync::Mutex::default(),
            fallback: args.fallback.clone(),
            bounds: args.tool_bounds.clone(),
            toolsets_tool: args.toolsets_tool,
            for_parent: args.for_parent,
            info,
            limits: args.sessions,
            subscriptions: subscriptions::Hub::new(subscriptions::Bounds {
                per_session: args.sessions.max_subscriptions,
                uri_bytes: args.sessions.max_uri_bytes,
            }),
            updates,
            listeners: Arc::default(),
            sessions: !args.stateless,
            sealer,
            skipped: ArcSwap::default(),
            tasks: tasks::Tasks::new(
                tasks::TaskLimits {
                    max_running: args.sessions.max_tasks,
                    per_owner: args.sessions.max_tasks_per_session,
                    per_caller: args.sessions.max_tasks_per_caller,
                    ttl: args.sessions.task_ttl,
                },
                tasks::TaskIds::new(replica.clone()),
                shared.clone(),
            ),
            policy,
            readiness: crate::serve::edge::readiness::Readiness::new(replica),
            shared,
        };
        (state, receiver, changes)
    }

    /// The policy in force: the file's, or the one without a file (everything allowed,
    /// nothing counted, the default result cap).
    pub(crate) fn policy(&self) -> Arc<crate::policy::Policy> {
        static NONE: std::sync::OnceLock<Arc<crate::policy::Policy>> = std::sync::OnceLock::new();
        match &self.policy {
            Some(store) => store.current(),
            None => Arc::clone(NONE.get_or_init(Arc::default)),
        }
    }

    /// The state of the policy's circuit breakers that have seen a failure, by plugin.
    pub(crate) fn breakers(&self) -> Vec<crate::reports::toolsets::BreakerRow> {
        let policy = self.policy();
        policy
            .breakers
            .phases(std::time::Instant::now())
            .into_iter()
            .map(
                |(plugin, phase, breaker)| crate::reports::toolsets::BreakerRow {
                    plugin,
                    state: phase.as_str(),
                    breaker,
                },
            )
            .collect()
    }

    /// Makes the generation after `old`, over `builder` with what plugins turned off, the
    /// current one.
    pub(crate) fn advance(
        &self,
        old: &Generation,
        builder: Arc<Builder>,
        hidden: availability::Hidden,
    ) -> Arc<Generation> {
        let next = Arc::new(old.next(builder, self.toolsets_tool, Arc::new(hidden)));
        self.swap(Arc::clone(&next));
        crate::observe::metrics::generation_made();
        next
    }

    /// Tells the sessions whose lists differ from `old` to `next` (`code` naming the plugins
    /// whose code may differ); how many were told.
    pub(crate) fn announce(
        &self,
        old: &Generation,
        next: &Generation,
        code: &std::collections::BTreeSet<String>,
    ) -> usize {
        self.listeners
            .announce(old, next, code, self.fallback.as_ref(), &self.bounds)
    }

    /// Tells every session that its tool list may have changed: the policy's rules did, and a
    /// rule hides tools from `tools/list`. How many were told.
    pub(crate) fn announce_policy_change(&self) -> usize {
        self.listeners.announce_to_all(notifications::Lists {
            tools: true,
            ..notifications::Lists::default()
        })
    }

    /// The current generation: a request takes it once and is served from it to its end.
    pub(crate) fn generation(&self) -> Arc<Generation> {
        self.current.load_full()
    }

    /// Makes `next` the current generation; requests that took the previous one finish on it.
    pub(crate) fn swap(&self, next: Arc<Generation>) -> Arc<Generation> {
        self.current.swap(next)
    }

    /// The toolset that declares the tool `name` in the current generation, if a plugin does.
    pub(crate) fn toolset_of(&self, name: &str) -> Option<String> {
        self.generation()
            .registry()
            .tools()
            .iter()
            .find(|entry| entry.decl.name == name)
            .map(|entry| entry.decl.toolset.clone())
    }

    /// The resolution of a request's URL query and selection headers in `generation`, narrowed
    /// to the caller's `bound`.
    pub(crate) fn resolve(
        &self,
        generation: &Generation,
        query: &str,
        headers: &HeaderMap,
        bound: Option<&Bound>,
    ) -> Arc<served::Resolved> {
        generation.resolve(
            query,
            &selection_headers(headers),
            self.fallback.as_ref(),
            &self.bounds,
            bound,
        )
    }
}

/// [`selection::HEADER_NAMES`] as header names, made once: a lookup by name then skips parsing
/// it.
static SELECTION_HEADERS: [HeaderName; 4] = [
    HeaderName::from_static(selection::HEADER_NAMES[0]),
    HeaderName::from_static(selection::HEADER_NAMES[1]),
    HeaderName::from_static(selection::HEADER_NAMES[2]),
    HeaderName::from_static(selection::HEADER_NAMES[3]),
];

/// The values of the selection headers, a repeated one joined with commas.
pub(crate) fn selection_headers(headers: &HeaderMap) -> [Option<String>; 4] {
    let mut values: [Option<String>; 4] = Default::default();
    for (value, name) in values.iter_mut().zip(&SELECTION_HEADERS) {
        for given in headers.get_all(name) {
            let given = String::from_utf8_lossy(given.as_bytes());
            match value {
                None => *value = Some(given.into_owned()),
                Some(all) => {
                    all.push(',');
                    all.push_str(&given);
                }
            }
        }
    }
    values
}

/// The resolution cache's key: the query alone when no selection header is present and no
/// caller is bounded, else the query and each header's value on lines of their own (`\0` for an
/// absent one), then the bound's key on a line of its own. Neither a query nor a header value
/// can hold a newline or a NUL, so distinct requests never share a key.
pub(crate) fn cache_key<'a>(
    query: &'a str,
    headers: &[Option<String>; 4],
    bound: Option<&Bound>,
) -> Cow<'a, str> {
    if headers.iter().all(Option::is_none) && bound.is_none() {
        return Cow::Borrowed(query);
    }
    let mut key = query.to_owned();
    for value in headers {
        key.push('\n');
        key.push_str(value.as_deref().unwrap_or("\0"));
    }
    if let Some(bound) = bound {
        key.push('\n');
        key.push_str(&bound.cache_key());
    }
    Cow::Owned(key)
}

/// The declared tools whose manifest's input schema mirrors an argument into a header, as
/// served, by name.
pub(crate) fn header_tools(registry: &Registry) -> HashMap<String, rmcp::model::Tool> {
    registry
        .tools()
        .iter()
        .map(|entry| registry.extensions().apply_to(&entry.decl))
        .filter(mirrors_a_header)
        .map(|decl| (decl.name.clone(), served::mcp_tool(&decl)))
        .collect()
}

/// Whether a property of the tool's input schema says `x-mcp-header`.
pub(crate) fn mirrors_a_header(decl: &plugin_manifest::ToolDecl) -> bool {
    decl.input_schema
        .as_ref()
        .and_then(|schema| schema.get("properties"))
        .and_then(serde_json::Value::as_object)
        .is_some_and(|properties| {
            properties
                .values()
                .any(|property| property.get("x-mcp-header").is_some())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_differing_in_a_selection_header_do_not_share_a_cache_key() {
        let mut headers = HeaderMap::new();
        let none = selection_headers(&headers);
        assert_eq!(cache_key("a", &none, None), "a");
        headers.append("X-MCP-Tools", "echo".parse().unwrap());
        headers.append("x-mcp-tools", "add".parse().unwrap());
        let tools = selection_headers(&headers);
        assert_eq!(tools[1].as_deref(), Some("echo,add"));
        let mut empty = HeaderMap::new();
        empty.append("x-mcp-tools", "".parse().unwrap());
        let bound = Bound::new(&["benchmarks"], false);
        let keys = [
            cache_key("a", &none, None),
            cache_key("a", &tools, None),
            cache_key("a", &selection_headers(&empty), None),
            cache_key("b", &tools, None),
            cache_key("a", &none, Some(&bound)),
            cache_key("a", &tools, Some(&bound)),
            cache_key("a", &none, Some(&Bound::new(&["*"], false))),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
