//! Opening a plugin library: the one place the host `dlopen`s.
//!
//! The library is opened from a private copy ([`super::private_copy`]), never from the file in
//! the plugin folder, kept on disk while the process lives so profilers and debuggers find it. abi_stable opens the copy; `plugin_abi::root_module` checks the root
//! module's layout against ours (older or newer, within one ABI line) and initialises it; then
//! the library is handed the host's log sink (plugin-abi 0.2.1 on; its events from outside any
//! call go there) and the plugin's constructor runs. `lib_header_from_path` is used rather than
//! `RootModule::load_from_file`, which caches one library per root-module type and would hand
//! every plugin the first one. Libraries are never unloaded: each in-process replace of a
//! plugin keeps the old library mapped, so opening one plugin many times is warned about.

use std::{
    collections::HashMap,
    path::Path,
    sync::{Arc, Mutex},
};

use abi_stable::library::lib_header_from_path;
use plugin_abi::OpenError;
use plugin_manifest::Manifest;

use super::{ActivationError, Opened, private_copy::PrivateCopy};
use crate::{discovery::trust::Checked, util::lock::lock};

/// Every this many opens of one plugin's library, a warning says the old ones stay mapped.
const OPENS_WARNED_EVERY: u32 = 10;

/// How many times each plugin's library was opened in this process: libraries are never
/// unloaded, so this is process-wide.
static OPENS: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

/// Opens a private copy of `path`, checks its ABI and instantiates the plugin.
///
/// Only call this on a file whose manifest discovery read: the copy's bytes are checked to be
/// a whole library with the same manifest (and, when discovery checked its signature or lock
/// entry, the bytes it checked: `checked`), so opening it cannot crash the host.
pub(crate) fn open(
    path: &Path,
    manifest: &Manifest,
    checked: Option<&Checked>,
) -> Result<Opened, ActivationError> {
    let name = &manifest.name;
    let copy = PrivateCopy::make(path, manifest, checked)?;
    let header = lib_header_from_path(copy.path()).map_err(|e| ActivationError::Open {
        plugin: name.clone(),
        source: Arc::new(e),
    })?;
    count_open(name, copy.size());
    let module = plugin_abi::root_module(header).map_err(|e| {
        if let OpenError::Layout { details, .. } = &e {
            tracing::debug!(plugin = %name, "the layout check's account: {details}");
        }
        ActivationError::Abi {
            plugin: name.clone(),
            source: Arc::new(e),
        }
    })?;
    let manifest_json = module.manifest()().to_string();
    if let Some(log_to) = module.log_to() {
        log_to(crate::observe::plugin_logs::sink(name));
    }
    let instance = module.instantiate()()
        .into_result()
        .map_err(|e| ActivationError::instantiate(name, e))?;
    copy.keep();
    Ok(Opened {
        process: None,
        manifest_json,
        instance,
    })
}

/// Counts one more open of plugin `name`, whose build maps `mapped` bytes, warning every
/// [`OPENS_WARNED_EVERY`] opens.
fn count_open(name: &str, mapped: u64) {
    let mut opens = lock(&OPENS);
    let count = opens
        .get_or_insert_with(HashMap::new)
        .entry(name.to_owned())
        .or_default();
    *count += 1;
    if let Some(warning) = opens_warning(name, *count, mapped) {
        tracing::warn!(plugin = name, "{warning}");
    }
}

/// The warning for the `count`th open of plugin `name`, if it warrants one, sizing each build
/// as `mapped` bytes (the size of the copy opened, not of the file in the folder now).
fn opens_warning(name: &str, count: u32, mapped: u64) -> Option<String> {
    count.is_multiple_of(OPENS_WARNED_EVERY).then(|| {
        format!(
            "plugin `{name}` was loaded {count} times in this process: a replaced library is \
             never unloaded, so about {count} x {mapped} bytes stay mapped; restart the server \
             to release them"
        )
    })
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;
    use crate::util::error::chain;

    #[test]
    fn a_library_that_is_gone_keeps_the_io_error_as_its_source() {
        let manifest = Manifest::from_json(r#"{"abi":"0.1.0","name":"x","version":"1"}"#).unwrap();
        let error = open(Path::new("/nonexistent/libx.so"), &manifest, None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugin `x`: the library could not be opened"
        );
        let io = error
            .source()
            .and_then(|copy| copy.source())
            .and_then(|io| io.downcast_ref::<std::io::Error>())
            .expect("the I/O error is kept");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(
            chain(&error),
            format!(
                "plugin `x`: the library could not be opened: /nonexistent/libx.so cannot be \
                 read: {io}"
            )
        );
    }

    #[test]
    fn every_tenth_open_warns_with_the_size_of_the_build_mapped() {
        assert_eq!(opens_warning("x", 9, 4096), None);
        let warning = opens_warning("x", 10, 4096).expect("the tenth open warns");
        assert!(
            warning.contains("about 10 x 4096 bytes stay mapped"),
            "{warning}"
        );
        assert_eq!(opens_warning("x", 11, 4096), None);
    }
}
