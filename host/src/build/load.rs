//! Opening a plugin library: the one place the host `dlopen`s.
//!
//! abi_stable opens the file, checks the root module's layout against ours, and runs the
//! plugin's constructor. `lib_header_from_path` is used rather than `RootModule::load_from_file`,
//! which caches one library per root-module type and would hand every plugin the first one.
//! Libraries are never unloaded.

use std::path::Path;

use abi_stable::library::lib_header_from_path;
use plugin_abi::PluginModRef;
use plugin_manifest::Manifest;

use super::{ActivationError, Opened};

/// Opens `path`, checks its ABI and instantiates the plugin.
///
/// Only call this on a file whose manifest discovery read: discovery has checked it is a whole
/// library built against a compatible ABI, so opening it cannot crash the host.
pub(crate) fn open(path: &Path, manifest: &Manifest) -> Result<Opened, ActivationError> {
    let name = &manifest.name;
    let header = lib_header_from_path(path).map_err(|e| ActivationError::Open {
        plugin: name.clone(),
        reason: e.to_string(),
    })?;
    let module = header
        .init_root_module::<PluginModRef>()
        .map_err(|e| ActivationError::Abi {
            plugin: name.clone(),
            reason: e.to_string(),
        })?;
    let manifest_json = module.manifest()().to_string();
    let instance = module.instantiate()()
        .into_result()
        .map_err(|e| ActivationError::instantiate(name, e))?;
    Ok(Opened {
        process: None,
        manifest_json,
        instance,
    })
}
