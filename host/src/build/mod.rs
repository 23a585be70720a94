//! Build: open the plugins an active set needs, check them, and assemble its tool table.
//!
//! A plugin is opened at most once per process ([`Builder::plugin`]), through the builder's
//! [`Opener`]: the seam between building and the ways a plugin is provided. [`LibraryOpener`]
//! opens a library in process; tests open plugin types directly. [`Builder::table`] builds the
//! tool table of an active set; `serve` keeps one per set. A plugin that fails to open is
//! reported once and left out; everything else is still served.
//! Building a table applies each tool's extensions (`extend`): a plugin that only extends
//! tools is opened when a table holds a tool it wraps, and then only; a wrap that fails drops
//! that one tool from that table.
//!
//! Opening a plugin ([`activate`]) checks its code against its manifest: the same tools, in
//! order, and the same resources, templates, prompts and completions. A live plugin also reads
//! resources, gets prompts and completes arguments for `serve` ([`LoadedPlugin::read_resource`]
//! and the rest, in `contributions`); a plugin needed only for those is opened on first use.

mod contributions;
pub(crate) mod crash_note;
mod extend;
pub(crate) mod load;
pub mod private_copy;
pub(crate) mod table;
#[cfg(test)]
mod tests;
mod traced;

use std::{
    collections::{BTreeSet, HashMap},
    error::Error,
    sync::{Arc, Mutex, OnceLock},
};

use abi_stable::std_types::RString;
use plugin_abi::{
    FfiError, FfiOutput, HostContextBox, OutputKind, PluginInstanceBox, ToolHandlerBox,
    detached_host, share_handler,
};
use plugin_manifest::{Manifest, ToolDecl};
use serde_json::{Map, Value};

pub(crate) use table::{ToolTable, instructions};

use crate::observe::{metrics, traces};
use crate::util::{
    backoff::backoff,
    error::{Report, chain},
    lock::lock,
};
use crate::{
    call::{CallError, CallOutput, Process, ProcessStatus},
    discovery::{DiscoveredPlugin, Provider},
    registry::Registry,
    selection::ActiveSet,
};

/// Why a plugin could not be activated. Kept once per plugin and cloned to every caller, so
/// its causes are shared ([`Arc`]); each is its source, never repeated in its message.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ActivationError {
    /// No plugin of that name was discovered.
    #[error("no plugin `{plugin}` was discovered")]
    NotDiscovered {
        /// The name asked for.
        plugin: String,
    },
    /// The library could not be copied, read or opened.
    #[error("plugin `{plugin}`: the library could not be opened")]
    Open {
        /// The plugin.
        plugin: String,
        /// Why: an I/O error, the loader's error, a file no longer usable.
        #[source]
        source: Arc<dyn Error + Send + Sync>,
    },
    /// The library's ABI is not the host's.
    #[error("plugin `{plugin}`: incompatible ABI")]
    Abi {
        /// The plugin.
        plugin: String,
        /// The loader's error.
        #[source]
        source: Arc<dyn Error + Send + Sync>,
    },
    /// The plugin's constructor or tool listing failed or panicked.
    #[error("plugin `{plugin}` failed to start")]
    Instantiate {
        /// The plugin.
        plugin: String,
        /// What the plugin answered.
        #[source]
        source: CallError,
    },
    /// A bridged MCP server (or an isolated library's child) did not start or list its tools;
    /// the error names the server.
    #[error(transparent)]
    Upstream(Arc<dyn Error + Send + Sync>),
    /// The code does not match the manifest discovery read.
    #[error("plugin `{plugin}`: {reason}")]
    Mismatch {
        /// The plugin.
        plugin: String,
        /// What differs.
        reason: String,
        /// The error behind it, when something did not parse.
        #[source]
        source: Option<Arc<dyn Error + Send + Sync>>,
    },
}

impl ActivationError {
    /// The plugin's constructor or tool listing answered `error`.
    pub(crate) fn instantiate(plugin: &str, error: FfiError) -> Self {
        Self::Instantiate {
            plugin: plugin.to_owned(),
            source: CallError::from(error),
        }
    }

    /// The code of `plugin` does not match its manifest: `reason` says how.
    pub(crate) fn mismatch(plugin: &str, reason: impl Into<String>) -> Self {
        Self::Mismatch {
            plugin: plugin.to_owned(),
            reason: reason.into(),
            source: None,
        }
    }
}

/// Why a tool is left out of a tool table: one of its extensions could not be applied.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "tool `{tool}` (plugin `{target}`) is not served here: extension {index} of plugin `{plugin}` failed"
)]
#[non_exhaustive]
pub(crate) struct ExtensionError {
    /// The tool.
    pub(crate) tool: String,
    /// The plugin offering it.
    pub(crate) target: String,
    /// The extending plugin.
    pub(crate) plugin: String,
    /// The extension's index in that plugin's `extends`.
    pub(crate) index: u32,
    /// Why: the plugin did not open ([`ActivationError`]), or its wrap returned an error or
    /// panicked ([`CallError`]).
    #[source]
    pub(crate) source: Arc<dyn Error + Send + Sync>,
}

/// A live plugin: its instance and its tools, in order.
///
/// It is stopped once: at shutdown (`Builder::stop_all`), or, in process, when the last
/// reference to it goes: hot reload replaced or removed it and the last call on it finished.
pub struct LoadedPlugin {
    manifest: Manifest,
    instance: Arc<PluginInstanceBox>,
    tools: Vec<LoadedTool>,
    process: Option<Arc<dyn Process>>,
    stopped: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.manifest.name)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl LoadedPlugin {
    /// The plugin's tools: its manifest's in order, then dynamic ones.
    pub fn tools(&self) -> &[LoadedTool] {
        &self.tools
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&LoadedTool> {
        self.tools.iter().find(|t| t.decl.name == name)
    }

    /// Its process or connection, when it runs out of process.
    pub(crate) fn process(&self) -> Option<&Arc<dyn Process>> {
        self.process.as_ref()
    }

    /// Its process or connection's state, when it runs out of process.
    pub(crate) fn process_status(&self) -> Option<ProcessStatus> {
        self.process.as_ref().map(|p| p.status())
    }

    /// Tells the plugin the host is stopping; only the first time counts.
    pub(crate) fn stop(&self) {
        if !self.stopped.swap(true, std::sync::atomic::Ordering::AcqRel) {
            self.instance.stop();
            tracing::info!(plugin = %self.manifest.name, "stopped plugin");
        }
    }

    /// Applies the plugin's extension number `index` (in its manifest's `extends`) to `tool`'s
    /// handler: the same tool, answered by the handler the plugin returns. The declaration is
    /// left as it is; the registry's static changes are applied by the caller.
    pub(crate) fn wrap(&self, index: u32, tool: &LoadedTool) -> Result<LoadedTool, FfiError> {
        let mut handler = self
            .instance
            .wrap(index, share_handler(&tool.handler))
            .into_result()?;
        if traces::on() {
            handler = traced::traced(handler, &self.manifest.name, &tool.decl.name);
        }
        Ok(LoadedTool {
            decl: tool.decl.clone(),
            plugin: tool.plugin.clone(),
            handler: Arc::new(handler),
        })
    }
}

impl Drop for LoadedPlugin {
    /// Stops an in-process plugin nobody uses any more (hot reload replaced or removed it)
    /// unless it was stopped already, and retires its library (its runtime's threads end);
    /// within a runtime, on the blocking pool, since a stop hook may block. A process (bridged server, isolated library) is not stopped here: the
    /// next generation may serve it on (a bridged server whose tools changed), and it is ended
    /// when the last plugin value serving it goes (the process's own drop).
    fn drop(&mut self) {
        if *self.stopped.get_mut() || self.process.is_some() {
            return;
        }
        let instance = Arc::clone(&self.instance);
        let plugin = self.manifest.name.clone();
        let stop = move || {
            instance.stop();
            instance.retire();
            tracing::info!(%plugin, "stopped plugin: no generation serves this build any more");
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(stop)),
            Err(_) => stop(),
        }
    }
}

/// A tool ready to call: its full declaration (with its input schema) and its handler.
#[derive(Clone)]
pub struct LoadedTool {
    /// The declaration, with `input_schema` filled in.
    pub decl: ToolDecl,
    /// The plugin that offers it.
    pub plugin: String,
    handler: Arc<ToolHandlerBox>,
}

impl std::fmt::Debug for LoadedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedTool")
            .field("name", &self.decl.name)
            .field("plugin", &self.plugin)
            .finish_non_exhaustive()
    }
}

impl LoadedTool {
    /// Calls the tool with JSON arguments, outside any MCP request (no client to log to or
    /// ask), and returns its answer as JSON ([`CallOutput::into_json`]).
    pub async fn call(&self, arguments: &Map<String, Value>) -> Result<Value, CallError> {
        let text = serde_json::to_string(arguments).unwrap_or_else(|_| "{}".to_owned());
        self.call_json(text).await
    }

    /// [`LoadedTool::call`] with arguments already serialised as a JSON object.
    pub async fn call_json(&self, arguments: String) -> Result<Value, CallError> {
        self.call_with(arguments, detached_host())
            .await
            .map(CallOutput::into_json)
    }

    /// Calls the tool with arguments serialised as a JSON object, serving the request that
    /// `context` stands for. Dropping the future cancels the call.
    pub(crate) async fn call_with(
        &self,
        arguments: String,
        context: HostContextBox,
    ) -> Result<CallOutput, CallError> {
        match self
            .handler
            .call(RString::from(arguments), context)
            .await
            .into_result()
        {
            Ok(FfiOutput {
                kind: OutputKind::Result,
                json,
            }) => Ok(CallOutput::Result(json.into())),
            Ok(FfiOutput { json, .. }) => serde_json::from_str(&json)
                .map(CallOutput::Value)
                .map_err(|e| CallError::BadOutput {
                    tool: self.decl.name.clone(),
                    reason: e.to_string(),
                }),
            Err(error) => Err(CallError::from(error)),
        }
    }
}

/// A plugin's activation, done at most once.
type PluginSlot = Arc<OnceLock<Opening>>;

/// How a plugin's opening went.
#[derive(Debug)]
struct Opening {
    result: Result<Arc<LoadedPlugin>, ActivationError>,
    /// For a bridged server that failed: when a request may try it again, and how many times
    /// it was tried before.
    retry: Option<(std::time::Instant, u32)>,
}

/// A plugin's code, opened: what `activate` checks against the manifest.
pub struct Opened {
    /// The manifest JSON the code itself carries.
    pub manifest_json: String,
    /// The live plugin.
    pub instance: PluginInstanceBox,
    /// The process or connection it runs behind (a bridged server, an isolated library).
    pub process: Option<Arc<dyn Process>>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened").finish_non_exhaustive()
    }
}

/// Opens a discovered plugin: gives its code's manifest and a live instance. The one seam
/// between building and how a plugin is provided (a library in process, a child process, a
/// bridged server); everything after it (the checks, tool tables, extensions) is shared.
pub trait Opener: Send + Sync + std::fmt::Debug {
    /// Opens `plugin`. Called at most once per plugin by a [`Builder`].
    fn open(&self, plugin: &DiscoveredPlugin) -> Result<Opened, ActivationError>;
}

/// Opens plugins on demand, each once, and builds tool tables from them.
#[derive(Debug)]
pub struct Builder {
    registry: Arc<Registry>,
    opener: Arc<dyn Opener>,
    plugins: Mutex<HashMap<String, PluginSlot>>,
}

impl Builder {
    /// A builder over `registry` that opens plugins with `opener`.
    pub fn with_opener(registry: Arc<Registry>, opener: Arc<dyn Opener>) -> Self {
        Self {
            registry,
            opener,
            plugins: Mutex::default(),
        }
    }

    /// The registry it builds from.
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The builder of the next generation, over `registry`, with the same opener. It keeps what
    /// this one opened, or failed to open, of each plugin from the same source
    /// ([`DiscoveredPlugin::same_source`]) unless `reopen` names it; any other plugin is opened
    /// anew on first need, so a plugin that failed is tried again once its file changed.
    pub(crate) fn next(&self, registry: Arc<Registry>, reopen: &BTreeSet<String>) -> Self {
        let opened = lock(&self.plugins);
        let kept = registry
            .plugins()
            .iter()
            .filter(|p| !reopen.contains(&p.manifest.name))
            .filter(|p| {
                self.registry
                    .plugin(&p.manifest.name)
                    .is_some_and(|before| before.same_source(p))
            })
            .filter_map(|p| {
                let name = &p.manifest.name;
                opened
                    .get(name)
                    .map(|slot| (name.clone(), Arc::clone(slot)))
            })
            .collect();
        Self {
            registry,
            opener: Arc::clone(&self.opener),
            plugins: Mutex::new(kept),
        }
    }

    /// The live plugin called `name`, opening it on first use. Blocks while it opens. A
    /// bridged server that failed is tried again once its backoff has passed. A failure is
    /// logged once, and handed to every caller as a [`Report`]: shown whole, typed within.
    pub fn plugin(&self, name: &str) -> Result<Arc<LoadedPlugin>, Report<ActivationError>> {
        let discovered = self.registry.plugin(name).ok_or_else(|| {
            Report::from(ActivationError::NotDiscovered {
                plugin: name.to_owned(),
            })
        })?;
        let (slot, attempt) = {
            let mut plugins = lock(&self.plugins);
            let slot = plugins.entry(name.to_owned()).or_default();
            let attempt = match slot.get().and_then(|o| o.retry) {
                Some((at, attempt)) if at <= std::time::Instant::now() => {
                    *slot = PluginSlot::default();
                    attempt + 1
                }
                _ => 0,
            };
            (Arc::clone(slot), attempt)
        };
        let opening = slot.get_or_init(|| {
            let span = traces::child_span(&format!("open {name}"), "internal", name);
            let _in_span = span.enter();
            let started = std::time::Instant::now();
            let result = activate_with(self.opener.as_ref(), discovered).map(Arc::new);
            match &result {
                Ok(p) => {
                    if p.process.is_none() {
                        crash_note::opened(name);
                    }
                    tracing::info!(plugin = name, tools = p.tools.len(), elapsed = ?started.elapsed(), "opened plugin");
                }
                Err(e) => tracing::error!("{}", chain(e)),
            }
            metrics::plugin_opened(
                name,
                discovered.provider.kind(),
                result.is_ok(),
                started.elapsed(),
            );
            let retry = (discovered.provider.is_out_of_process() && result.is_err())
                .then(|| (std::time::Instant::now() + backoff(attempt), attempt));
            Opening { result, retry }
        });
        opening.result.clone().map_err(Report::from)
    }

    /// When the plugin called `name`, which failed to open, may be tried again; `None` if it
    /// opened, was not tried, or is a library (whose failure is final).
    pub(crate) fn retry_at(&self, name: &str) -> Option<std::time::Instant> {
        let plugins = lock(&self.plugins);
        Some(plugins.get(name)?.get()?.retry?.0)
    }

    /// Opens the bridged servers among `plugins` not tried yet, all at once, so each start is
    /// bounded by its own `connect_timeout` rather than by the sum. Blocks until each is tried.
    pub(crate) fn open_bridged(&self, plugins: &[&DiscoveredPlugin]) {
        let untried: Vec<&str> = {
            let opened = lock(&self.plugins);
            plugins
                .iter()
                .filter(|p| p.provider.is_out_of_process())
                .map(|p| p.manifest.name.as_str())
                .filter(|name| opened.get(*name).is_none_or(|slot| slot.get().is_none()))
                .collect()
        };
        if untried.len() < 2 {
            return;
        }
        // Each opener blocks its thread on the host's runtime, which the threads must know.
        let runtime = tokio::runtime::Handle::try_current().ok();
        std::thread::scope(|scope| {
            for name in untried {
                let runtime = runtime.clone();
                scope.spawn(move || {
                    let _entered = runtime.as_ref().map(tokio::runtime::Handle::enter);
                    let _ = self.plugin(name);
                });
            }
        });
    }

    /// Why the plugin called `name` did not open, if it was tried and failed.
    pub(crate) fn failure(&self, name: &str) -> Option<Report<ActivationError>> {
        let plugins = lock(&self.plugins);
        let error = plugins.get(name)?.get()?.result.as_ref().err()?;
        Some(Report::from(error.clone()))
    }

    /// Whether the plugin called `name` is open.
    pub(crate) fn is_open(&self, name: &str) -> bool {
        self.loaded(name).is_some()
    }

    /// The plugin called `name` if it is open; never opens it.
    pub(crate) fn loaded(&self, name: &str) -> Option<Arc<LoadedPlugin>> {
        let plugins = lock(&self.plugins);
        plugins.get(name)?.get()?.result.as_ref().ok().cloned()
    }

    /// The plugins tried that failed to open, in load order, with why.
    pub(crate) fn failures(&self) -> Vec<(String, Report<ActivationError>)> {
        self.registry
            .plugins()
            .iter()
            .filter_map(|p| {
                let name = &p.manifest.name;
                self.failure(name).map(|error| (name.clone(), error))
            })
            .collect()
    }

    /// The plugins opened so far, in load order.
    pub fn opened(&self) -> Vec<Arc<LoadedPlugin>> {
        let plugins = lock(&self.plugins);
        self.registry
            .plugins()
            .iter()
            .filter_map(|p| {
                plugins
                    .get(&p.manifest.name)?
                    .get()?
                    .result
                    .as_ref()
                    .ok()
                    .cloned()
            })
            .collect()
    }

    /// Builds the tool table of `active`, opening the plugins it needs. Blocks while they
    /// open. Not cached here: the caller keeps the tables it serves.
    pub fn table(&self, active: &ActiveSet) -> ToolTable {
        ToolTable::build(self, active)
    }

    /// Opens every plugin with an `on_startup` event.
    pub(crate) fn open_startup_plugins(&self) {
        for plugin in self.registry.startup_plugins() {
            let _ = self.plugin(&plugin.manifest.name);
        }
    }

    /// The state of each opened plugin's process or connection (bridged servers, isolated
    /// libraries).
    pub(crate) fn processes(&self) -> Vec<ProcessStatus> {
        self.opened()
            .iter()
            .filter_map(|p| p.process_status())
            .collect()
    }

    /// Tells every opened plugin that the host is stopping.
    pub(crate) fn stop_all(&self) {
        for plugin in self.opened() {
            plugin.stop();
        }
    }
}

/// Opens a discovered plugin with `opener` and checks its code against its manifest: the same
/// manifest, the same tools in order, the same resources, templates, prompts and completions.
pub(crate) fn activate_with(
    opener: &dyn Opener,
    discovered: &DiscoveredPlugin,
) -> Result<LoadedPlugin, ActivationError> {
    let manifest = &discovered.manifest;
    let mismatch = |reason: String| ActivationError::mismatch(&manifest.name, reason);
    let unparsed = |what: &str, error: serde_json::Error| ActivationError::Mismatch {
        plugin: manifest.name.clone(),
        reason: format!("{what} does not parse"),
        source: Some(Arc::new(error)),
    };
    let opened = opener.open(discovered)?;
    let listed = opened
        .instance
        .tools()
        .into_result()
        .map_err(|e| ActivationError::instantiate(&manifest.name, e))?;
    let embedded = Manifest::from_json(&opened.manifest_json)
        .map_err(|e| unparsed("the library's own manifest", e))?;
    if embedded != *manifest {
        return Err(mismatch(
            "the library's manifest differs from the one discovery read (was the file replaced?)"
                .to_owned(),
        ));
    }
    let mut tools = Vec::with_capacity(listed.len());
    for tool in listed {
        let decl: ToolDecl =
            serde_json::from_str(&tool.spec).map_err(|e| unparsed("a tool's declaration", e))?;
        tools.push(LoadedTool {
            decl,
            plugin: manifest.name.clone(),
            handler: Arc::new(tool.handler),
        });
    }
    check_tools(&static_tools(discovered), &tools).map_err(mismatch)?;
    contributions::check_contributions(manifest, &opened.instance).map_err(mismatch)?;
    Ok(LoadedPlugin {
        manifest: manifest.clone(),
        instance: Arc::new(opened.instance),
        tools,
        process: opened.process,
        stopped: std::sync::atomic::AtomicBool::new(false),
    })
}

/// What the code's tools are checked against: the manifest, except that what a process lists
/// (a bridged server's tools, of which the disk cache is a hint; an isolated library's, with
/// its own extensions applied in the child) is served as it is: its tools are all dynamic.
fn static_tools(discovered: &DiscoveredPlugin) -> std::borrow::Cow<'_, Manifest> {
    match discovered.provider {
        Provider::Library => std::borrow::Cow::Borrowed(&discovered.manifest),
        Provider::Bridged { .. } | Provider::Isolated { .. } => std::borrow::Cow::Owned(Manifest {
            tools: Vec::new(),
            dynamic_tools: true,
            ..discovered.manifest.clone()
        }),
    }
}

/// The code's tools must be the manifest's, in order, then (if declared) dynamic ones, each in
/// a toolset the plugin declares and with a name not used twice.
fn check_tools(manifest: &Manifest, tools: &[LoadedTool]) -> Result<(), String> {
    if tools.len() < manifest.tools.len() {
        return Err(format!(
            "the manifest declares {} tools, the code registers {}",
            manifest.tools.len(),
            tools.len()
        ));
    }
    for (declared, code) in manifest.tools.iter().zip(tools) {
        let mut code = code.decl.clone();
        code.input_schema = declared.input_schema.clone();
        if code != *declared {
            return Err(format!(
                "tool `{}` in code differs from the manifest's `{}`",
                code.name, declared.name
            ));
        }
    }
    let dynamic = &tools[manifest.tools.len()..];
    if !dynamic.is_empty() && !manifest.dynamic_tools {
        return Err(format!(
            "the code registers tools the manifest does not declare: {}",
            dynamic
                .iter()
                .map(|t| t.decl.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for (i, tool) in tools.iter().enumerate() {
        if tool.decl.name.is_empty() {
            return Err("a tool has an empty name".to_owned());
        }
        if tools[..i].iter().any(|t| t.decl.name == tool.decl.name) {
            return Err(format!("tool `{}` is registered twice", tool.decl.name));
        }
        if manifest.toolset(&tool.decl.toolset).is_none() {
            return Err(format!(
                "tool `{}` is in toolset `{}`, which the plugin does not declare",
                tool.decl.name, tool.decl.toolset
            ));
        }
    }
    Ok(())
}
