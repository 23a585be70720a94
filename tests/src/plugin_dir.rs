//! A plugin folder of its own for each test, and the bad plugin files tests put in it.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::build::library;

/// A temporary plugin folder, deleted on drop.
#[derive(Debug)]
pub struct PluginDir {
    // Held for its drop, which deletes the folder.
    _dir: TempDir,
    path: PathBuf,
}

impl Default for PluginDir {
    fn default() -> Self {
        Self::new()
    }
}

impl PluginDir {
    /// An empty plugin folder.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("reactor-e2e-")
            .tempdir()
            .expect("a temporary folder can be made");
        // Canonical, so it compares equal to the paths the kernel reports in /proc/<pid>/maps.
        let path = dir
            .path()
            .canonicalize()
            .expect("a new temporary folder has a canonical path");
        Self { _dir: dir, path }
    }

    /// A plugin folder holding the built libraries of these crates.
    pub fn with(crates: &[&str]) -> Self {
        let dir = Self::new();
        for krate in crates {
            dir.add(krate);
        }
        dir
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `file_name` in the folder.
    pub fn file(&self, file_name: &str) -> PathBuf {
        self.path.join(file_name)
    }

    /// Copies the built library of `crate_name` in, under its own file name.
    pub fn add(&self, crate_name: &str) -> PathBuf {
        let source = library(crate_name);
        let name = source
            .file_name()
            .expect("a library path ends in a file name")
            .to_string_lossy()
            .into_owned();
        self.add_as(crate_name, &name)
    }

    /// Copies the built library of `crate_name` in, as `file_name`.
    pub fn add_as(&self, crate_name: &str, file_name: &str) -> PathBuf {
        let target = self.file(file_name);
        std::fs::copy(library(crate_name), &target)
            .unwrap_or_else(|e| panic!("cannot copy {crate_name} to {}: {e}", target.display()));
        target
    }

    /// Writes `bytes` as `file_name`.
    pub fn write(&self, file_name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let target = self.file(file_name);
        std::fs::write(&target, bytes)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", target.display()));
        target
    }
}

/// The bytes of the built library of `crate_name`.
pub fn library_bytes(crate_name: &str) -> Vec<u8> {
    let path = library(crate_name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The first half of the built library of `crate_name`: what an interrupted copy leaves.
pub fn truncated(crate_name: &str) -> Vec<u8> {
    let mut bytes = library_bytes(crate_name);
    bytes.truncate(bytes.len() / 2);
    bytes
}

/// The built library of `crate_name` with its manifest claiming another ABI version.
///
/// Patches `"abi":"<ours>"` in place; `version` must be as long as ours, so every
/// offset in the file stays valid and only the manifest's claim changes.
pub fn with_abi_version(crate_name: &str, version: &str) -> Vec<u8> {
    patched(
        crate_name,
        &format!(r#""abi":"{}""#, plugin_abi::VERSION),
        &format!(r#""abi":"{version}""#),
    )
}

/// The built library of `crate_name` with every `from` replaced by `to`, which must be as long,
/// so every offset in the file stays valid: another build, as far as the bytes go.
///
/// # Panics
///
/// If the lengths differ or the library holds no `from`.
pub fn patched(crate_name: &str, from: &str, to: &str) -> Vec<u8> {
    patch(library_bytes(crate_name), from, to)
}

/// `bytes` with every `from` replaced by `to`, which must be as long ([`patched`]).
///
/// # Panics
///
/// If the lengths differ or `bytes` hold no `from`.
pub fn patch(mut bytes: Vec<u8>, from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len(), "a patch must keep the file's length");
    let starts: Vec<usize> = memchr::memmem::find_iter(&bytes, from.as_bytes()).collect();
    assert!(!starts.is_empty(), "the library holds no {from}");
    for start in starts {
        bytes[start..start + to.len()].copy_from_slice(to.as_bytes());
    }
    bytes
}
