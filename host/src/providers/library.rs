//! The library provider: a plugin library opened in this process.

use crate::{
    build::{ActivationError, Opened, Opener, load},
    discovery::DiscoveredPlugin,
};

/// Opens plugin libraries in this process (`dlopen` of a private copy, never unloaded).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LibraryOpener;

impl Opener for LibraryOpener {
    fn open(&self, plugin: &DiscoveredPlugin) -> Result<Opened, ActivationError> {
        load::open(&plugin.path, &plugin.manifest, plugin.checked.as_ref())
    }
}
