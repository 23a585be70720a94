//! The lock file (`plugins.lock`): the plugin libraries a deployment serves with `--locked`,
//! each by name, version, ABI, file name and the SHA-256 of its bytes.
//!
//! `reactor-mcp-server lock` writes it from what the folder serves; review it, commit it, and a
//! server started with `--locked` serves a library only if the lock holds its plugin with the
//! same SHA-256. TOML, one `[[plugin]]` table per library, sorted by name:
//!
//! ```toml
//! version = 1
//!
//! [[plugin]]
//! name = "benchmarks"
//! version = "0.1.0"
//! abi = "0.2.1"
//! file = "libbenchmarks.so"
//! sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//! ```

use std::path::{Path, PathBuf};

use plugin_manifest::Manifest;
use serde::{Deserialize, Serialize};

use crate::discovery::SkipReason;

/// The format's version, written in the file.
const FORMAT_VERSION: u32 = 1;

/// One locked library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockEntry {
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// The plugin-abi version it was built against.
    pub abi: String,
    /// Its file name in the plugin folder (informative: a renamed file of the same bytes is
    /// the same plugin).
    pub file: String,
    /// The SHA-256 of its bytes, in hex.
    pub sha256: String,
}

impl LockEntry {
    /// The entry of the library `file` whose manifest is `manifest` and SHA-256 `sha256`.
    pub fn new(file: &Path, manifest: &Manifest, sha256: String) -> Self {
        Self {
            name: manifest.name.clone(),
            version: manifest.version.clone(),
            abi: manifest.abi.clone(),
            file: file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256,
        }
    }
}

/// The file as written.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LockFile {
    version: u32,
    #[serde(default, rename = "plugin")]
    plugins: Vec<LockEntry>,
}

/// A lock file, as read.
#[derive(Debug, Clone, Default)]
pub struct Lock {
    path: PathBuf,
    entries: Vec<LockEntry>,
}

/// Why a lock file cannot be used or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// It cannot be read (with `--locked`, a missing lock serves nothing: write it first).
    #[error(
        "cannot read the lock file {} that --locked serves from (write it with \
         `reactor-mcp-server lock`)",
        path.display()
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// It does not parse, or is of another format version.
    #[error("lock file {}: {reason}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line.
        reason: String,
    },
    /// It cannot be written.
    #[error("cannot write the lock file {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl Lock {
    /// Reads the lock file at `path`.
    ///
    /// # Errors
    ///
    /// If it cannot be read or parsed, or two entries name one plugin.
    pub fn read(path: &Path) -> Result<Self, LockError> {
        let text = std::fs::read_to_string(path).map_err(|source| LockError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// The lock of `text`, the content of the file at `path`.
    fn parse(path: &Path, text: &str) -> Result<Self, LockError> {
        let bad = |reason: String| LockError::Parse {
            path: path.to_owned(),
            reason,
        };
        let file: LockFile = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        if file.version != FORMAT_VERSION {
            return Err(bad(format!(
                "format version {} (this host reads version {FORMAT_VERSION})",
                file.version
            )));
        }
        for (index, entry) in file.plugins.iter().enumerate() {
            if file.plugins[..index].iter().any(|e| e.name == entry.name) {
                return Err(bad(format!("plugin `{}` is locked twice", entry.name)));
            }
        }
        Ok(Self {
            path: path.to_owned(),
            entries: file.plugins,
        })
    }

    /// The text of a lock file holding `entries`, sorted by name.
    pub fn render(mut entries: Vec<LockEntry>) -> String {
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let file = LockFile {
            version: FORMAT_VERSION,
            plugins: entries,
        };
        let body = toml::to_string(&file).expect("a lock file is plain strings and numbers");
        format!(
            "# The plugin libraries served with --locked, written by `reactor-mcp-server lock`.\n\
             # Review it and keep it with the deployment; write it again when a plugin changes.\n\
             {body}"
        )
    }

    /// Writes a lock file of `entries` to `path`, replacing it at once (a reader sees the old
    /// file or the new one, never half of one).
    ///
    /// # Errors
    ///
    /// If it cannot be written.
    pub fn write(path: &Path, entries: Vec<LockEntry>) -> Result<(), LockError> {
        let failed = |source| LockError::Write {
            path: path.to_owned(),
            source,
        };
        let folder = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut file = tempfile::NamedTempFile::new_in(folder).map_err(failed)?;
        std::io::Write::write_all(&mut file, Self::render(entries).as_bytes()).map_err(failed)?;
        file.persist(path).map_err(|e| failed(e.error))?;
        Ok(())
    }

    /// Checks that the library of `manifest`, whose bytes have the SHA-256 `sha256`, is locked.
    pub(crate) fn check(&self, manifest: &Manifest, sha256: &str) -> Result<(), SkipReason> {
        let Some(entry) = self.entries.iter().find(|e| e.name == manifest.name) else {
            return Err(SkipReason::NotLocked {
                lock: self.path.clone(),
            });
        };
        if entry.sha256 == sha256 {
            return Ok(());
        }
        Err(SkipReason::LockMismatch {
            lock: self.path.clone(),
            detail: format!(
                "locked: version {} (ABI {}, {}) with SHA-256 {}; this file: version {} (ABI {}) \
                 with SHA-256 {sha256}",
                entry.version, entry.abi, entry.file, entry.sha256, manifest.version, manifest.abi
            ),
        })
    }

    /// Warns about each locked plugin that `served` does not hold.
    pub(crate) fn warn_missing<'a>(&self, served: impl Iterator<Item = &'a Manifest>) {
        let served: Vec<&str> = served.map(|m| m.name.as_str()).collect();
        for entry in self
            .entries
            .iter()
            .filter(|e| !served.contains(&e.name.as_str()))
        {
            tracing::warn!(
                "plugin `{}` {} is in the lock file {}, and no library of the plugin folder \
                 serves it",
                entry.name,
                entry.version,
                self.path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(name: &str, version: &str) -> Manifest {
        Manifest::from_json(&format!(
            r#"{{"abi":"0.2.1","name":"{name}","version":"{version}"}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_written_lock_reads_back_and_checks_each_library() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plugins.lock");
        let entries = vec![
            LockEntry::new(
                Path::new("/p/libb.so"),
                &manifest("b", "1.0.0"),
                "bb".into(),
            ),
            LockEntry::new(
                Path::new("/p/liba.so"),
                &manifest("a", "2.0.0"),
                "aa".into(),
            ),
        ];
        Lock::write(&path, entries).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.find("name = \"a\"").unwrap() < text.find("name = \"b\"").unwrap(),
            "{text}"
        );
        let lock = Lock::read(&path).unwrap();
        assert!(lock.check(&manifest("a", "2.0.0"), "aa").is_ok());
        let other = lock.check(&manifest("a", "2.0.1"), "cc").unwrap_err();
        let text = other.to_string();
        assert!(
            text.contains("locked: version 2.0.0 (ABI 0.2.1, liba.so) with SHA-256 aa; this file: version 2.0.1"),
            "{text}"
        );
        assert!(matches!(
            lock.check(&manifest("c", "1"), "aa"),
            Err(SkipReason::NotLocked { .. })
        ));
    }

    #[test]
    fn a_bad_lock_file_is_named_with_what_is_wrong() {
        let path = Path::new("/srv/plugins.lock");
        let twice = "version = 1\n[[plugin]]\nname = \"a\"\nversion = \"1\"\nabi = \"0.2.1\"\n\
                     file = \"liba.so\"\nsha256 = \"aa\"\n[[plugin]]\nname = \"a\"\nversion = \"1\"\n\
                     abi = \"0.2.1\"\nfile = \"liba.so\"\nsha256 = \"bb\"\n";
        assert_eq!(
            Lock::parse(path, twice).unwrap_err().to_string(),
            "lock file /srv/plugins.lock: plugin `a` is locked twice"
        );
        let future = Lock::parse(path, "version = 2\n").unwrap_err().to_string();
        assert!(future.contains("format version 2"), "{future}");
        let missing = Lock::parse(path, "version = 1\n[[plugin]]\nname = \"a\"\n")
            .unwrap_err()
            .to_string();
        assert!(missing.contains("missing field `version`"), "{missing}");
    }
}
