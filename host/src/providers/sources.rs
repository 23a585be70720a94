//! Where a server's plugins come from ([`PluginSources`]): the plugin folder, the `mcp.json`
//! files of servers to bridge, which plugins run isolated; discovering them, and the
//! [`Source`] a running server discovers them again from when they change.

use std::{path::PathBuf, sync::Arc};

use crate::{
    discovery::{
        self, DiscoveredPlugin, Discovery, DiscoveryError, SkipReason, Skipped, servers,
        servers::pinning::Pins, trust::TrustOptions,
    },
    providers::isolated::{self, Isolation},
    reload::Source,
    util::error::Report,
};

/// Where the plugins come from: a plain value, from the command line or an embedding
/// application.
#[derive(Debug, Clone, Default)]
pub(crate) struct PluginSources {
    /// The folder scanned for plugin libraries (and its `mcp.json` and `*.mcp.json`).
    pub(crate) plugin_dir: PathBuf,
    /// Only the plugins with these names, when given.
    pub(crate) only: Option<Vec<String>>,
    /// Further `mcp.json` files of servers to bridge, read after the folder's.
    pub(crate) mcp_config: Vec<PathBuf>,
    /// Whether an `mcp.json` file or entry that cannot be used is an error (else skipped with a
    /// warning).
    pub(crate) strict_config: bool,
    /// Where the bridged servers' last tool lists are kept (default: the user's cache folder).
    pub(crate) cache_dir: Option<PathBuf>,
    /// Which plugins run out of process (sandboxed or not), and their call timeouts.
    pub(crate) isolation: Isolation,
    /// How bridged servers' tools are held to their pins (`--pin-tools`), and what the
    /// reviews found, shared by every scan.
    pub(crate) pins: Pins,
    /// Which libraries may be served: signatures and the lock file.
    pub(crate) trust: TrustOptions,
}

impl PluginSources {
    /// Discovers the plugin folder and the MCP servers to bridge, warning about each file or
    /// entry skipped. With `strict_config`, a bad `mcp.json` file or entry is an error.
    pub(crate) fn discover(&self) -> Result<Discovery, DiscoveryError> {
        let found = self.discover_quietly(&[])?;
        discovery::warn_skipped(&found, None);
        Ok(found)
    }

    /// [`PluginSources::discover`] without the warnings, for a caller that compares with an
    /// earlier scan ([`discovery::warn_skipped`]).
    /// `known` are the plugins an earlier scan found ([`discovery::discover_again`]).
    pub(crate) fn discover_quietly(
        &self,
        known: &[DiscoveredPlugin],
    ) -> Result<Discovery, DiscoveryError> {
        let only = self.only.as_deref();
        let trust = self.trust.load(&self.plugin_dir)?;
        let mut found = discovery::discover_again(&self.plugin_dir, only, &trust, known)?;
        let files = servers::config::files(&self.plugin_dir, &self.mcp_config);
        let declared = servers::config::load(&files, &|name| std::env::var(name).ok());
        servers::add_servers(&mut found, declared, &self.tool_cache(), only);
        if !self.isolation.is_empty() {
            let program = std::env::current_exe()
                .map_err(|source| DiscoveryError::OwnExecutable { source })?;
            isolated::isolate(&mut found, &self.isolation, &program);
        }
        let bad: Vec<Skipped> = found
            .skipped
            .iter()
            .filter(|s| matches!(s.reason, SkipReason::BadServer { .. }))
            .cloned()
            .collect();
        if self.strict_config && !bad.is_empty() {
            return Err(DiscoveryError::StrictConfig { skipped: bad });
        }
        Ok(found)
    }

    /// Where a running server's plugins come from, `skipped` being what its first scan skipped;
    /// files are watched when `watch`.
    pub(crate) fn source(&self, skipped: Vec<Skipped>, watch: bool) -> Source {
        let sources = self.clone();
        Source {
            discover: Arc::new(move |known| sources.discover_quietly(known).map_err(Report::from)),
            skipped,
            plugin_dir: self.plugin_dir.clone(),
            config_files: self.mcp_config.clone(),
            trust_files: self.trust.files(&self.plugin_dir),
            watch,
            pins: self.pins.clone(),
        }
    }

    /// The bridged servers' tool-list cache, their tools held to the pins beside it.
    pub(crate) fn tool_cache(&self) -> servers::cache::ToolCache {
        servers::cache::ToolCache::new(self.cache_dir.clone()).with_pins(self.pins.clone())
    }
}
