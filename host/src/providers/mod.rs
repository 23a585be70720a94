//! The providers: the ways a discovered plugin is opened, each an [`Opener`], and
//! [`ProviderOpener`], which opens each plugin as its provider says.
//!
//! - [`library`]: a library in this process (through `build`'s one `dlopen`).
//! - [`isolated`]: a library in a child process of the host's own binary (`--isolate`).
//! - [`bridged`]: an MCP server an `mcp.json` declares; also the client isolated children are
//!   reached through.

pub(crate) mod bridged;
pub(crate) mod isolated;
pub(crate) mod library;
mod sources;

use crate::{
    build::{ActivationError, Opened, Opener},
    discovery::{DiscoveredPlugin, Provider},
    reload::Triggers,
};

pub(crate) use library::LibraryOpener;
pub(crate) use sources::PluginSources;

/// Opens each plugin as its provider says: libraries with `LibraryOpener`, bridged MCP
/// servers and isolated libraries by starting them (`bridged::open`, from a blocking
/// thread of the host's runtime), each bridged server with one connection however often it is
/// opened. When given `Triggers`, a bridged server saying its tools changed triggers a new
/// scan once its new list is cached.
#[derive(Debug, Default)]
pub struct ProviderOpener {
    upstreams: bridged::Upstreams,
}

impl ProviderOpener {
    /// An opener whose bridged servers trigger a scan through `triggers` when their tools
    /// change.
    pub(crate) fn relisting(triggers: Triggers) -> Self {
        Self {
            upstreams: bridged::Upstreams::new(Some(triggers)),
        }
    }
}

impl Opener for ProviderOpener {
    fn open(&self, plugin: &DiscoveredPlugin) -> Result<Opened, ActivationError> {
        let upstreams = &self.upstreams;
        match &plugin.provider {
            Provider::Library => LibraryOpener.open(plugin),
            Provider::Bridged { server, cache } => {
                bridged::open(server, Some(cache), plugin, upstreams)
            }
            Provider::Isolated { server } => bridged::open(server, None, plugin, upstreams),
        }
    }
}

/// Opens a discovered plugin as its provider says and checks its code against its manifest.
pub fn activate(
    discovered: &DiscoveredPlugin,
) -> Result<crate::build::LoadedPlugin, ActivationError> {
    crate::build::activate_with(&ProviderOpener::default(), discovered)
}
