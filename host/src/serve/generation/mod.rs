//! A generation of the plugins: one registry, the builder opening its plugins, and what is built
//! and cached from them (tool tables per active set, each URL's resolution, the tools mirroring
//! an argument into a header).
//!
//! The server holds the current generation behind an atomic swap ([`crate::serve::ServeState`]): each
//! request takes the one current when it arrives and keeps it to its end, so a call in flight
//! finishes on the plugins it started with while the next request sees the new ones. A new
//! generation starts with empty caches: its tool tables are built lazily, per active set, on
//! first need, from plugins carried over when unchanged ([`crate::build::Builder::next`]).

pub(crate) mod availability;
pub(crate) mod queue;
pub(crate) mod served;
pub(crate) mod swap;

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock, RwLock},
    time::SystemTime,
};

use rmcp::model::Tool;

use crate::serve::{
    RESOLVED_QUERIES,
    generation::{availability::Hidden, served::Resolved},
    state::{cache_key, header_tools, mirrors_a_header},
};
use crate::util::lock::{read, write};
use crate::{
    auth::Bound,
    build::Builder,
    discovery::skills::PluginSkills,
    registry::Registry,
    reports::{GenerationInfo, search::ToolIndex},
    selection::{self, Headers, Query, ToolFilter},
};

/// One generation: what every request that took it is served from.
#[derive(Debug)]
pub(crate) struct Generation {
    number: u64,
    since: SystemTime,
    builder: Arc<Builder>,
    /// Its tool tables, per active set.
    pub(crate) sets: served::Sets,
    /// The resolution of each URL query and selection headers seen so far (at most
    /// [`RESOLVED_QUERIES`], keyed by [`cache_key`]): it depends only on them, the registry and
    /// the server's options.
    resolved: RwLock<HashMap<String, Arc<Resolved>>>,
    /// The tools with an argument mirrored into a header (`x-mcp-header`, SEP-2243), as
    /// declared (extensions applied), by name.
    header_tools: HashMap<String, Tool>,
    /// The tools and prompts plugins turned off when it was made.
    hidden: Arc<Hidden>,
    /// The search index of its declared tools, built on the first search.
    tool_index: OnceLock<ToolIndex>,
    /// The skills beside its plugins' libraries and bridged servers' cached ones, read when it
    /// was made.
    skills: PluginSkills,
}

impl Generation {
    /// Generation 1, over `builder`.
    pub(crate) fn first(builder: Arc<Builder>, toolsets_tool: bool) -> Self {
        Self::numbered(1, builder, toolsets_tool, Arc::default())
    }

    /// The generation after this one, over `builder`, with what plugins turned off.
    pub(crate) fn next(
        &self,
        builder: Arc<Builder>,
        toolsets_tool: bool,
        hidden: Arc<Hidden>,
    ) -> Self {
        Self::numbered(self.number + 1, builder, toolsets_tool, hidden)
    }

    fn numbered(
        number: u64,
        builder: Arc<Builder>,
        toolsets_tool: bool,
        hidden: Arc<Hidden>,
    ) -> Self {
        Self {
            hidden,
            number,
            since: SystemTime::now(),
            header_tools: header_tools(builder.registry()),
            skills: PluginSkills::discover(builder.registry().plugins()),
            sets: served::Sets::new(Arc::clone(&builder), toolsets_tool),
            builder,
            resolved: RwLock::default(),
            tool_index: OnceLock::new(),
        }
    }

    /// Its number and when it was made.
    pub(crate) fn info(&self) -> GenerationInfo {
        GenerationInfo {
            number: self.number,
            since: chrono::DateTime::<chrono::Utc>::from(self.since)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        }
    }

    /// The builder opening its plugins.
    pub(crate) fn builder(&self) -> &Arc<Builder> {
        &self.builder
    }

    /// The tools and prompts plugins turned off when it was made.
    pub(crate) fn hidden(&self) -> &Arc<Hidden> {
        &self.hidden
    }

    /// Its registry.
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        self.builder.registry()
    }

    /// The resolution of a request's URL query and selection headers' values
    /// ([`crate::serve::selection_headers`]), with the `--toolsets` fallback and the tool bounds,
    /// narrowed to the caller's `bound`; a request seen before costs one lookup.
    pub(crate) fn resolve(
        &self,
        query: &str,
        values: &[Option<String>; 4],
        fallback: Option<&Query>,
        bounds: &ToolFilter,
        bound: Option<&Bound>,
    ) -> Arc<Resolved> {
        let key = cache_key(query, values, bound);
        if let Some(resolved) = read(&self.resolved).get(key.as_ref()) {
            return Arc::clone(resolved);
        }
        let headers = Headers::from_values(values.each_ref().map(Option::as_deref));
        let resolution = selection::resolve_request(
            &Query::parse(query),
            &Query::from_headers(&headers),
            &self.registry().declared(),
            fallback,
            bounds,
        );
        let mut resolution = match bound {
            Some(bound) => bound.narrow(resolution),
            None => resolution,
        };
        // A tool a plugin turned off is one more excluded name of every URL.
        (resolution.filter.exclude).extend(self.hidden.tools.iter().cloned());
        let resolved = Arc::new(Resolved::new(resolution));
        let mut cache = write(&self.resolved);
        if cache.len() < RESOLVED_QUERIES {
            cache.insert(key.into_owned(), Arc::clone(&resolved));
        }
        resolved
    }

    /// The skills beside its plugins' libraries and bridged servers' cached ones.
    pub(crate) fn skills(&self) -> &PluginSkills {
        &self.skills
    }

    /// The skills `active` is served, ordered by URI.
    pub(crate) fn skills_for(&self, active: &selection::ActiveSet) -> Vec<rmcp::model::Skill> {
        self.skills
            .skills(|plugin| self.serves_skills_of(active, plugin), &|server| {
                self.live_skills(server)
            })
    }

    /// The skills the bridged server `server` listed (as served), when it is open in this
    /// generation and has listed since its cached listing was read.
    pub(crate) fn live_skills(&self, server: &str) -> Option<Vec<rmcp::model::Skill>> {
        let provider = &self.registry().plugin(server)?.provider;
        let bridged = matches!(provider, crate::discovery::Provider::Bridged { .. });
        let plugin = self.builder.loaded(server).filter(|_| bridged)?;
        plugin.process()?.skills()
    }

    /// Whether `active` is served the skills of `plugin`: one of the plugin's toolsets is
    /// active.
    pub(crate) fn serves_skills_of(&self, active: &selection::ActiveSet, plugin: &str) -> bool {
        self.registry().plugin(plugin).is_some_and(|p| {
            let m = &p.manifest;
            m.toolsets.iter().any(|t| active.contains(&t.name))
                || m.tools.iter().any(|t| active.contains(&t.toolset))
        })
    }

    /// The search index of its declared tools, built from the manifests on first use.
    pub(crate) fn tool_index(&self) -> &ToolIndex {
        self.tool_index.get_or_init(|| {
            let started = std::time::Instant::now();
            let index = ToolIndex::new(self.registry());
            tracing::debug!(
                tools = index.len(),
                "built the tool search index in {:?}",
                started.elapsed()
            );
            index
        })
    }

    /// A tool with an argument mirrored into a header, by name, as served: from its opened
    /// plugin (whose generated schemas are known only once it is open), else from the
    /// manifests (schemas written verbatim).
    pub(crate) fn header_tool(&self, name: &str) -> Option<Tool> {
        let registry = self.registry();
        let opened = self.builder.opened();
        let loaded = opened
            .iter()
            .flat_map(|plugin| plugin.tools())
            .find(|tool| tool.decl.name == name);
        match loaded {
            Some(tool) => {
                let decl = registry.extensions().apply_to(&tool.decl);
                mirrors_a_header(&decl).then(|| served::mcp_tool(&decl))
            }
            None => self.header_tools.get(name).cloned(),
        }
    }
}

/// The plugins of `generation` that failed to open, each with why.
pub(crate) fn failed_plugins(generation: &Generation) -> Vec<crate::reports::FailedPlugin> {
    generation
        .builder()
        .failures()
        .into_iter()
        .map(|(plugin, error)| crate::reports::FailedPlugin {
            plugin,
            reason: error.to_string(),
        })
        .collect()
}
