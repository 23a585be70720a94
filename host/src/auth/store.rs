//! The keys file as the server holds it: read at start-up, and read again when it changes.
//!
//! [`KeyStore::watch`] looks at the file's modification time and length every
//! [`crate::util::watched::POLL`]; when either changed it reads the file again and swaps the new keys in. A file that
//! no longer reads (gone, or not TOML/JSON) keeps the keys in force, with an error in the log
//! naming the file and the reason; bad entries are skipped with a warning each. At start-up,
//! a file that others than its owner may read or write is warned about once ([`too_open`]).

use std::{
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
};

use tokio_util::sync::CancellationToken;

use super::keys::{KeySet, KeysError};
use crate::util::{
    error::chain,
    lock::{read, write},
    watched::{Stamp, poll, stamp},
};

/// The keys of a file, kept current.
#[derive(Debug)]
pub(crate) struct KeyStore {
    path: PathBuf,
    keys: RwLock<Arc<KeySet>>,
    stamp: RwLock<Stamp>,
}

impl KeyStore {
    /// Reads `path`: an error when it cannot be read at all; bad entries are logged.
    pub(crate) fn open(path: &Path) -> Result<Self, KeysError> {
        let stamp = stamp(path);
        let keys = read_logging(path)?;
        warn_if_open(path);
        tracing::info!(
            "{} API key(s) from {}",
            keys.entries().len(),
            path.display()
        );
        Ok(Self {
            path: path.to_owned(),
            keys: RwLock::new(Arc::new(keys)),
            stamp: RwLock::new(stamp),
        })
    }

    /// The keys in force.
    pub(crate) fn keys(&self) -> Arc<KeySet> {
        Arc::clone(&read(&self.keys))
    }

    /// Reads the file again if it changed since last read; whether the keys changed.
    pub(crate) fn refresh(&self) -> bool {
        let now = stamp(&self.path);
        if *read(&self.stamp) == now {
            return false;
        }
        *write(&self.stamp) = now;
        match read_logging(&self.path) {
            Ok(keys) => {
                tracing::info!(
                    "the keys file {} changed: {} API key(s)",
                    self.path.display(),
                    keys.entries().len()
                );
                *write(&self.keys) = Arc::new(keys);
                true
            }
            Err(error) => {
                tracing::error!("{}; the keys read before stay in force", chain(&error));
                false
            }
        }
    }

    /// Refreshes the store every [`crate::util::watched::POLL`] until `cancel`.
    pub(crate) async fn watch(store: Arc<Self>, cancel: CancellationToken) {
        poll(
            move || {
                store.refresh();
                true
            },
            cancel,
        )
        .await;
    }
}

/// Reads `path`, logging each skipped entry.
fn read_logging(path: &Path) -> Result<KeySet, KeysError> {
    let (keys, problems) = KeySet::read(path)?;
    for problem in problems {
        tracing::warn!("{problem}");
    }
    Ok(keys)
}

/// Warns when others than the file's owner may read or write it (Unix).
fn warn_if_open(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        let mode = meta.permissions().mode() & 0o7777;
        if too_open(mode) {
            tracing::warn!(
                "the keys file {} has mode {mode:04o}: its group or others may read the key \
                 hashes or add keys; run `chmod 600 {}`",
                path.display(),
                path.display()
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Whether a keys file of Unix `mode` is open to its group or others.
#[cfg_attr(not(unix), allow(dead_code))]
fn too_open(mode: u32) -> bool {
    mode & 0o077 != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{auth::keys::Lookup, util::hash::sha256_hex};

    fn entry(name: &str, key: &str) -> String {
        format!(
            "[[keys]]\nname = \"{name}\"\nsha256 = \"{}\"\ntoolsets = [\"*\"]\n",
            sha256_hex(key)
        )
    }

    #[test]
    fn a_file_others_may_read_or_write_is_too_open() {
        for mode in [0o600, 0o400, 0o700, 0o4600] {
            assert!(!too_open(mode), "{mode:o}");
        }
        for mode in [0o644, 0o640, 0o604, 0o620, 0o602, 0o666, 0o610] {
            assert!(too_open(mode), "{mode:o}");
        }
    }

    #[test]
    fn a_changed_file_is_read_again_and_a_broken_one_keeps_the_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        std::fs::write(&path, entry("alice", "a")).unwrap();
        let store = KeyStore::open(&path).unwrap();
        assert!(matches!(store.keys().find("a", 0), Lookup::Valid(_)));
        assert!(!store.refresh(), "unchanged");

        std::fs::write(
            &path,
            format!("{}{}", entry("alice", "a"), entry("bob", "b")),
        )
        .unwrap();
        assert!(store.refresh());
        assert!(matches!(store.keys().find("b", 0), Lookup::Valid(_)));

        std::fs::write(&path, "[[keys]").unwrap();
        assert!(!store.refresh());
        assert!(
            matches!(store.keys().find("b", 0), Lookup::Valid(_)),
            "kept"
        );

        std::fs::write(&path, entry("carol", "c")).unwrap();
        assert!(store.refresh());
        assert_eq!(store.keys().find("a", 0), Lookup::Unknown, "removed");
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let error = KeyStore::open(Path::new("/nonexistent/keys.toml")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot read the keys file /nonexistent/keys.toml"
        );
        let line = chain(&error);
        assert!(
            line.starts_with("cannot read the keys file /nonexistent/keys.toml: ")
                && line.len() > error.to_string().len() + 2,
            "the I/O error follows: {line}"
        );
    }
}
