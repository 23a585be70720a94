//! Private copies of plugin libraries: the host never maps a file someone else can change.
//!
//! Before a library is opened, its file is copied (in the kernel, `copy_file_range`) to a fresh
//! folder of the host's own (mode 0700, under the temporary folder, `TMPDIR`), and the copy is
//! checked as discovery checks a file (a whole library, a manifest this host can load), against
//! the manifest discovery read, and against the digest trust checked. The library is opened from
//! there, so a copy over the file in `plugins/` or a truncation of it can no longer crash the
//! host, and a replaced file gets a path of its own (the C library caches libraries by path).
//!
//! A copy that was opened stays on disk while the process lives ([`PrivateCopy::keep`]; a
//! library is never unloaded), so `/proc/PID/maps` names a file that exists, not a deleted one,
//! and `perf`, `gdb` and crash backtraces read the library's symbols from it. Nobody else can
//! change it: its folder is the host user's alone (0700), the file is read-only (0500), and its
//! bytes are those that were checked. A clean exit removes the copies ([`RemoveOnExit`]).
//!
//! The folder's name is `reactor-mcp-TAG-PID-RANDOM`, where `TAG` ([`tag`]) is made from the
//! original file's path, so a test can tell which plugin file a mapped copy came from, and `PID`
//! is the host's: a host killed (or an isolated plugin's child ended) leaves its folders behind,
//! and the next host to start, or a host ending cleanly, removes the folders of processes that no
//! longer run ([`sweep_stale`]). Elsewhere than Unix no folder is swept, since whether a process
//! runs is not asked there; and Windows cannot delete a library while it is loaded, so there
//! each copy stays until it is removed by hand.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use plugin_manifest::Manifest;
use sha2::{Digest as _, Sha256};

use super::ActivationError;
use crate::discovery::{self, SkipReason, trust::Checked};
use crate::util::{hash::sha256_of_file, lock::lock};

/// The prefix of every private copy's folder name.
pub const FOLDER_PREFIX: &str = "reactor-mcp-";

/// Why a library's private copy could not be made.
#[derive(Debug, thiserror::Error)]
enum CopyError {
    /// The original cannot be read.
    #[error("{} cannot be read", path.display())]
    Read {
        /// The original.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The original is no longer a library with a manifest this host can load.
    #[error("{} is no longer a usable plugin (it is read again when it changes)", path.display())]
    Unusable {
        /// The original.
        path: PathBuf,
        /// What discovery says of it now.
        source: SkipReason,
    },
    /// The private folder cannot be made.
    #[error("cannot make a private folder for its copy")]
    Folder {
        /// The cause.
        source: std::io::Error,
    },
    /// The copy cannot be written.
    #[error("cannot write its private copy {}", path.display())]
    Write {
        /// The copy.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// A library's private copy; removed (with its folder) when dropped.
#[derive(Debug)]
pub(crate) struct PrivateCopy {
    /// Deleted with the copy in it when dropped.
    _folder: tempfile::TempDir,
    path: PathBuf,
    /// The copy's size in bytes: what opening it maps.
    size: u64,
}

impl PrivateCopy {
    /// Copies the library at `original` whose manifest discovery read as `manifest`, and whose
    /// bytes discovery checked to be `checked` (their signature, their lock entry) when it did.
    pub(crate) fn make(
        original: &Path,
        manifest: &Manifest,
        checked: Option<&Checked>,
    ) -> Result<Self, ActivationError> {
        let failed = |error: CopyError| ActivationError::Open {
            plugin: manifest.name.clone(),
            source: Arc::new(error),
        };
        let mut source = std::fs::File::open(original).map_err(|source| {
            failed(CopyError::Read {
                path: original.to_owned(),
                source,
            })
        })?;
        let folder =
            private_folder(original).map_err(|source| failed(CopyError::Folder { source }))?;
        let name = original.file_name().unwrap_or(original.as_os_str());
        let path = folder.path().join(name);
        let size = copy_new(&mut source, &path).map_err(|source| {
            failed(CopyError::Write {
                path: path.clone(),
                source,
            })
        })?;
        let found = discovery::read(&path).map_err(|source| {
            failed(CopyError::Unusable {
                path: original.to_owned(),
                source,
            })
        })?;
        if found != *manifest {
            return Err(ActivationError::mismatch(
                &manifest.name,
                format!(
                    "{} changed since discovery read it (its manifest differs); it is read again \
                     when it changes",
                    original.display()
                ),
            ));
        }
        if let Some(checked) = checked {
            let sha256 = sha256_of_file(&path).map_err(|source| {
                failed(CopyError::Read {
                    path: path.clone(),
                    source,
                })
            })?;
            if sha256 != checked.sha256 {
                return Err(ActivationError::mismatch(
                    &manifest.name,
                    format!(
                        "{} changed since its signature or lock entry was checked (SHA-256 {} \
                         then, {sha256} now): it is not opened, and is checked again when it \
                         changes",
                        original.display(),
                        checked.sha256
                    ),
                ));
            }
        }
        Ok(Self {
            _folder: folder,
            path,
            size,
        })
    }

    /// Where the copy is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The copy's size in bytes, read when it was made (the original may have changed since).
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Keeps the copy on disk until the process ends cleanly ([`RemoveOnExit`]): its library is
    /// mapped from now on, for good.
    pub(crate) fn keep(self) {
        lock(&KEPT).push(self);
    }
}

/// The copies of the libraries this process opened.
static KEPT: Mutex<Vec<PrivateCopy>> = Mutex::new(Vec::new());

/// Removes the private copies this process kept when dropped, at the end of a command: the
/// mappings stay (shown as deleted from then on). With `sweep`, the folders of processes that
/// no longer run (isolated plugins' children, ended by then) go too.
#[derive(Debug)]
pub struct RemoveOnExit {
    /// Whether to sweep the folders of processes that no longer run as well.
    pub sweep: bool,
}

impl Drop for RemoveOnExit {
    fn drop(&mut self) {
        let kept = std::mem::take(&mut *lock(&KEPT));
        drop(kept);
        if self.sweep {
            sweep_stale();
        }
    }
}

/// A new folder of this process's for what comes of the library at `library` (mode 0700, in the
/// temporary folder), named as [the module](self) says.
pub(crate) fn private_folder(library: &Path) -> std::io::Result<tempfile::TempDir> {
    let prefix = format!("{FOLDER_PREFIX}{}-{}-", tag(library), std::process::id());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
    builder.tempdir()
}

/// Copies `source` to `path`, a file that must not exist yet, readable by the owner alone, in
/// the kernel where it can (`copy_file_range`: no pass through the host's memory); the bytes
/// copied. Not synced: the copy is read back from the page cache at once.
fn copy_new(source: &mut std::fs::File, path: &Path) -> std::io::Result<u64> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o500);
    std::io::copy(source, &mut options.open(path)?)
}

/// Removes, from the temporary folder, the copy folders of processes that no longer run (hosts
/// killed, isolated plugins' children ended); how many it removed.
pub(crate) fn sweep_stale() -> usize {
    sweep_stale_in(&std::env::temp_dir())
}

/// [`sweep_stale`] in `dir`.
fn sweep_stale_in(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut swept = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(owner) else {
            continue;
        };
        if pid == std::process::id() || runs(pid) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => swept += 1,
            Err(error) => tracing::debug!(
                "cannot remove {}, left by process {pid}: {error}",
                entry.path().display()
            ),
        }
    }
    if swept > 0 {
        tracing::info!(
            "removed {swept} private copy folder(s) left in {} by hosts that no longer run",
            dir.display()
        );
    }
    swept
}

/// The process that made the copy folder named `folder` (`reactor-mcp-TAG-PID-RANDOM`).
fn owner(folder: &str) -> Option<u32> {
    let mut parts = folder.strip_prefix(FOLDER_PREFIX)?.split('-');
    let _tag = parts.next()?;
    parts.next()?.parse().ok()
}

/// Whether process `pid` runs (`kill(pid, 0)` finds it, ours or not).
#[cfg(unix)]
fn runs(pid: u32) -> bool {
    use rustix::{io::Errno, process};
    i32::try_from(pid)
        .ok()
        .and_then(process::Pid::from_raw)
        .is_some_and(|pid| process::test_kill_process(pid) != Err(Errno::SRCH))
}

/// Whether process `pid` runs: assumed so where it cannot be told, so nothing is swept.
#[cfg(not(unix))]
fn runs(_pid: u32) -> bool {
    true
}

/// The tag of a plugin file in its copies' folder names: 12 hex digits of the SHA-256 of its
/// path, made absolute when it can be.
pub fn tag(original: &Path) -> String {
    let path = original
        .canonicalize()
        .unwrap_or_else(|_| original.to_owned());
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    crate::util::hash::hex(&digest[..6])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_a_library_is_not_copied() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("libx.so");
        std::fs::write(&file, b"not a library").unwrap();
        let manifest = Manifest::from_json(r#"{"abi":"0.1.0","name":"x","version":"1"}"#).unwrap();
        let error = PrivateCopy::make(&file, &manifest, None).unwrap_err();
        assert!(matches!(error, ActivationError::Open { .. }), "{error:?}");
        let line = crate::util::error::chain(&error);
        assert!(
            line.starts_with("plugin `x`: the library could not be opened: "),
            "{line}"
        );
        assert!(
            line.contains("libx.so is no longer a usable plugin"),
            "{line}"
        );
        assert!(
            line.contains("(it is read again when it changes): not a shared library"),
            "{line}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_folders_of_processes_that_no_longer_run_are_swept_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        // Above the largest pid Linux hands out (2^22).
        let gone = dir
            .path()
            .join(format!("{FOLDER_PREFIX}0123456789ab-4999999-x1"));
        let mine = dir.path().join(format!(
            "{FOLDER_PREFIX}0123456789ab-{}-x2",
            std::process::id()
        ));
        let other = dir.path().join("reactor-other-4999999-x3");
        for folder in [&gone, &mine, &other] {
            std::fs::create_dir(folder).unwrap();
            std::fs::write(folder.join("libx.so"), b"copy").unwrap();
        }
        assert_eq!(sweep_stale_in(dir.path()), 1);
        assert!(!gone.exists());
        assert!(mine.exists() && other.exists());
        assert_eq!(
            owner(&format!("{FOLDER_PREFIX}0123456789ab-42-x")),
            Some(42)
        );
        assert_eq!(owner(&format!("{FOLDER_PREFIX}0123456789ab-abc")), None);
    }

    #[test]
    fn the_tag_is_the_same_for_the_same_file() {
        assert_eq!(tag(Path::new("/a/libx.so")), tag(Path::new("/a/libx.so")));
        assert_ne!(tag(Path::new("/a/libx.so")), tag(Path::new("/b/libx.so")));
        assert_eq!(tag(Path::new("/a/libx.so")).len(), 12);
    }
}
