//! Discovery: which plugin files a folder holds, and what their manifests say.
//!
//! Scans one folder (not recursively) for the platform's library extension, in file-name order,
//! and reads each manifest from its link section. No library is ever opened here. A file that
//! cannot be used is skipped with the reason; the first plugin with a name wins; a narrowing to
//! named plugins (`REACTOR_MCP_EXTENSIONS`, `--extension`) reports the names that match nothing.
//! Each library is read, never mapped, and stamped ([`FileStamp`]) so a later scan
//! can tell a replaced file from the same one.

mod object_file;
pub(crate) mod servers;
pub(crate) mod skills;
pub mod trust;

use std::{
    collections::BTreeSet,
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
    time::SystemTime,
};

use plugin_manifest::Manifest;
use serde::{Serialize, Serializer};

use crate::util::names::{Shown, check_name};
use servers::{cache::ToolCache, config::ServerEntry};
use trust::{Checked, Trust};

/// The library extension of this platform.
pub(crate) const LIBRARY_EXTENSION: &str = std::env::consts::DLL_EXTENSION;

/// A plugin whose manifest was read: a library file, or an MCP server an `mcp.json` declares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiscoveredPlugin {
    /// The library file, or the `mcp.json` declaring the server.
    pub path: PathBuf,
    /// What the manifest says.
    pub manifest: Manifest,
    /// What provides it, and so what opens it.
    pub provider: Provider,
    /// The library file as it was when its manifest was read; `None` for a bridged server.
    #[serde(skip)]
    pub stamp: Option<FileStamp>,
    /// What was checked of the library's bytes (its signature, its lock entry); `None` when
    /// nothing was ([`trust`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<Checked>,
}

impl DiscoveredPlugin {
    /// A library file and its manifest.
    pub fn library(path: impl Into<PathBuf>, manifest: Manifest) -> Self {
        Self {
            path: path.into(),
            manifest,
            provider: Provider::Library,
            stamp: None,
            checked: None,
        }
    }

    /// Whether `other` is the same plugin from the same source, so that what was opened for one
    /// serves the other: the same library file (in process or isolated), unchanged, with the
    /// same manifest, or the same bridged server entry (whose listed tools may differ: they are
    /// its cache's).
    pub(crate) fn same_source(&self, other: &Self) -> bool {
        self.path == other.path
            && self.provider == other.provider
            && match self.provider {
                Provider::Library | Provider::Isolated { .. } => {
                    self.stamp == other.stamp && self.manifest == other.manifest
                }
                Provider::Bridged { .. } => self.manifest.name == other.manifest.name,
            }
    }
}

/// What tells one version of a file from another without reading it: its size, modification
/// time and (on Unix) device and inode, so a copy over it, a rename onto it and a rewrite all
/// change the stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    device: u64,
    inode: u64,
}

impl FileStamp {
    /// The stamp of `meta`.
    pub(crate) fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let (device, inode) = {
            use std::os::unix::fs::MetadataExt as _;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (device, inode) = (0, 0);
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            device,
            inode,
        }
    }
}

/// What provides a plugin: the one thing an opener dispatches on.
#[derive(Debug, Clone, PartialEq)]
pub enum Provider {
    /// A library opened in process.
    Library,
    /// An MCP server bridged from an `mcp.json` entry.
    Bridged {
        /// Its entry.
        server: Arc<ServerEntry>,
        /// Where its tool list is kept once read.
        cache: ToolCache,
    },
    /// A library served by a child process of the host (`--isolate`), reached as an MCP
    /// server over the child's stdio.
    Isolated {
        /// How the child is started and bounded.
        server: Arc<ServerEntry>,
    },
}

impl Provider {
    /// Whether it runs out of process (a bridged server or an isolated library): it can be
    /// started again after it failed.
    pub(crate) fn is_out_of_process(&self) -> bool {
        !matches!(self, Self::Library)
    }

    /// Its kind: `library`, `mcp_server` or `isolated_library`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Library => "library",
            Self::Bridged { .. } => "mcp_server",
            Self::Isolated { .. } => "isolated_library",
        }
    }
}

/// Serialised as its kind alone: an entry's expanded variables may hold secrets.
impl Serialize for Provider {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.kind())
    }
}

/// A file that discovery did not take, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why it was skipped.
    pub reason: SkipReason,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = format!("{}: {}", self.path.display(), self.reason);
        write!(f, "{}", Shown(&line))
    }
}

/// Why a file is not served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkipReason {
    /// The file could not be read.
    #[error("cannot be read: {0}")]
    Unreadable(String),
    /// The entry has a library's name but is not a regular file.
    #[error("not a regular file: {0}")]
    NotAFile(String),
    /// The file is not a shared library.
    #[error("not a shared library: {0}")]
    NotALibrary(String),
    /// The file is shorter than its headers say: a partial copy.
    #[error("truncated: its headers need {needs} bytes, the file has {has}")]
    Truncated {
        /// Bytes the headers describe.
        needs: u64,
        /// Bytes the file holds.
        has: u64,
    },
    /// The library carries no reactor-mcp manifest: not a plugin.
    #[error("no plugin manifest (no .rmcpmf section): not built with plugin-api")]
    NoManifest,
    /// The manifest is there but unusable.
    #[error("bad manifest: {0}")]
    BadManifest(String),
    /// Built against a version of the ABI crate (`plugin-abi`) of another line than the host's.
    #[error(
        "built against plugin-abi {plugin}, which this host (plugin-abi {host}) cannot load: it \
         loads plugins of its own ABI line only, older or newer ({})",
        plugin_abi::line_name(host)
    )]
    IncompatibleAbi {
        /// The plugin's plugin-abi version.
        plugin: String,
        /// The host's.
        host: String,
    },
    /// Another file has the same plugin name, at a higher version (or the same version, and
    /// earlier in name order): that one is served.
    #[error(
        "plugin `{name}` {version} is also in {}, at version {served_version}, which is served \
         (the highest version; the first file of equal versions)",
        first.display()
    )]
    DuplicateName {
        /// The plugin name.
        name: String,
        /// This file's version of it.
        version: String,
        /// The served file's version.
        served_version: String,
        /// The file that has it.
        first: PathBuf,
    },
    /// The plugin's name, or one of its toolsets', breaks the rule for names
    /// ([`crate::util::names::NAME_RULE`]): no URL could select it.
    #[error("{what} `{name}`: {reason}")]
    BadName {
        /// `plugin name` or `toolset name`.
        what: &'static str,
        /// The name.
        name: String,
        /// Which part of the rule it breaks, and the rule.
        reason: String,
    },
    /// Not among the plugins named by `REACTOR_MCP_EXTENSIONS` / `--extension`.
    #[error("not among the extensions asked for")]
    NotSelected,
    /// `--require-signed`, and the library has no signature.
    #[error(
        "not signed: --require-signed serves only libraries with a signature of a trusted key \
         beside them, and {} is missing (sign it with `reactor-mcp-server sign` or `minisign -S`)",
        signature.display()
    )]
    Unsigned {
        /// Where its signature would be.
        signature: PathBuf,
    },
    /// Its signature cannot be read, is from a key not trusted, or does not verify.
    #[error("bad signature {}: {reason}", signature.display())]
    BadSignature {
        /// The signature file.
        signature: PathBuf,
        /// Why it does not count.
        reason: String,
    },
    /// `--locked`, and the lock file does not hold the plugin.
    #[error(
        "not in the lock file {} (--locked serves what it holds alone: review the library, then \
         run `reactor-mcp-server lock`)",
        lock.display()
    )]
    NotLocked {
        /// The lock file.
        lock: PathBuf,
    },
    /// `--locked`, and the library's SHA-256 differs from the lock file's.
    #[error("differs from the lock file {} (--locked): {detail}", lock.display())]
    LockMismatch {
        /// The lock file.
        lock: PathBuf,
        /// What the lock holds, and what the file is.
        detail: String,
    },
    /// An `mcp.json` file, or one server entry in it, cannot be used.
    #[error("{}{reason}", server.as_ref().map(|s| format!("server `{s}`: ")).unwrap_or_default())]
    BadServer {
        /// The entry, when not the whole file is skipped.
        server: Option<String>,
        /// Why.
        reason: String,
    },
}

/// What a folder holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Discovery {
    /// Usable plugins, in file-name order.
    pub plugins: Vec<DiscoveredPlugin>,
    /// Files not taken, with reasons.
    pub skipped: Vec<Skipped>,
    /// Names in the narrowing that match no plugin.
    pub unmatched: Vec<String>,
}

/// For a relative plugin folder, what it was relative to and what to do.
fn relative_hint(path: &Path) -> String {
    if path.is_absolute() {
        return String::new();
    }
    format!(
        " (`{}`, relative to the working directory; a client that starts the server over stdio \
         starts it in a directory of its own: give --plugin-dir an absolute path)",
        path.display()
    )
}

/// Why a folder could not be scanned at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// The folder cannot be listed. A relative path is named as the working directory makes
    /// it, with a hint: a desktop client starts the server in a directory of its own.
    #[error("cannot read the plugin folder {}{}", absolute.display(), relative_hint(path))]
    Folder {
        /// The folder, as given.
        path: PathBuf,
        /// The folder, absolute.
        absolute: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// `--isolate` needs the host's own executable, and it cannot be found.
    #[error("cannot find the host's own executable to run isolated plugins")]
    OwnExecutable {
        /// The cause.
        source: std::io::Error,
    },
    /// The trusted keys file or the lock file cannot be used.
    #[error(transparent)]
    Trust(#[from] trust::TrustError),
    /// With `--strict-config`, an `mcp.json` file or entry that cannot be used.
    #[error("bad MCP server configuration (--strict-config): {}", skipped.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    StrictConfig {
        /// What was wrong.
        skipped: Vec<Skipped>,
    },
}

/// From how many library files manifests are read on every core (a thread costs about as much
/// as reading a few dozen manifests).
const PARALLEL_FROM: usize = 64;

/// Scans `dir` for plugins. `only`, when given, narrows discovery to those plugin names.
pub fn discover(dir: &Path, only: Option<&[String]>) -> Result<Discovery, DiscoveryError> {
    discover_trusted(dir, only, &Trust::default())
}

/// [`discover`], serving only the libraries `trust` accepts: the others are skipped with the
/// reason.
pub fn discover_trusted(
    dir: &Path,
    only: Option<&[String]>,
    trust: &Trust,
) -> Result<Discovery, DiscoveryError> {
    discover_again(dir, only, trust, &[])
}

/// [`discover_trusted`] again, `known` being the plugins an earlier scan found: a library
/// whose file is unchanged (its [`FileStamp`]) keeps the manifest read then, unread, unless
/// `trust` checks libraries (a key may have been revoked since). A rescan after one file
/// changed then reads that file, and only stats the others.
pub(crate) fn discover_again(
    dir: &Path,
    only: Option<&[String]>,
    trust: &Trust,
    known: &[DiscoveredPlugin],
) -> Result<Discovery, DiscoveryError> {
    let folder_error = |source| DiscoveryError::Folder {
        path: dir.to_owned(),
        absolute: std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned()),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(folder_error)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == LIBRARY_EXTENSION))
        .collect();
    files.sort();
    let known: std::collections::HashMap<&Path, &DiscoveredPlugin> = known
        .iter()
        .filter(|p| trust.is_off() && p.stamp.is_some())
        .map(|p| (p.path.as_path(), p))
        .collect();
    let read = |path: PathBuf| {
        let meta = std::fs::metadata(&path);
        let stamp = meta.as_ref().ok().map(FileStamp::of);
        if let Some(same) = known.get(path.as_path()).filter(|p| p.stamp == stamp) {
            let read = Ok((same.manifest.clone(), same.checked.clone()));
            return (path, stamp, read);
        }
        let read = not_a_file(&path, meta).map_or_else(|| read_trusted(&path, trust), Err);
        (path, stamp, read)
    };
    // Checking signatures and digests reads and hashes each whole library, and a large folder
    // is many reads: on every core.
    let read = if trust.is_off() && files.len() < PARALLEL_FROM {
        files.into_iter().map(read).collect()
    } else {
        crate::util::parallel::map(files, read)
    };
    let mut discovery = Discovery::default();
    for (path, stamp, read) in read {
        match read {
            Ok((manifest, checked)) => discovery.plugins.push(DiscoveredPlugin {
                stamp,
                checked,
                ..DiscoveredPlugin::library(path, manifest)
            }),
            Err(reason) => discovery.skipped.push(Skipped { path, reason }),
        }
    }
    take_highest_of_each_name(&mut discovery);
    trust.warn_missing(discovery.plugins.iter().map(|p| &p.manifest));
    if let Some(only) = only {
        narrow(&mut discovery, only);
    }
    for name in &discovery.unmatched {
        tracing::warn!(
            "extension `{name}` was asked for, and no plugin in {} has that name",
            dir.display()
        );
    }
    Ok(discovery)
}

/// Logs each file or entry of `discovery` that is skipped for a reason worth a warning (a
/// plugin left out by `--extension` is not), unless `before` skipped it for the same reason:
/// a bad file is warned about once, and again when it changes.
pub(crate) fn warn_skipped(discovery: &Discovery, before: Option<&[Skipped]>) {
    let known = |s: &Skipped| before.is_some_and(|b| b.contains(s));
    for skipped in discovery.skipped.iter().filter(|s| !known(s)) {
        match skipped.reason {
            SkipReason::NotSelected => {}
            SkipReason::BadServer { .. } => {
                tracing::warn!("skipping MCP server configuration {skipped}");
            }
            _ => tracing::warn!("skipping plugin file {skipped}"),
        }
    }
}

/// Why an entry named like a library is not a regular file (following symlinks), if it is not.
/// `meta` is what `std::fs::metadata` said of `path`.
fn not_a_file(path: &Path, meta: std::io::Result<std::fs::Metadata>) -> Option<SkipReason> {
    let what = match meta {
        Ok(meta) if meta.is_file() => return None,
        Ok(meta) if meta.is_dir() => "a directory",
        Ok(meta) => special_file_kind(&meta.file_type()),
        Err(_) if path.is_symlink() => "a symlink to nothing",
        Err(error) => return Some(SkipReason::Unreadable(error.to_string())),
    };
    Some(SkipReason::NotAFile(what.to_owned()))
}

/// What kind of special file this is, in words.
#[cfg_attr(not(unix), allow(unused_variables))]
fn special_file_kind(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    "a special file"
}

/// Reads one file's manifest and checks it can be loaded by this host.
pub fn read(path: &Path) -> Result<Manifest, SkipReason> {
    checked(&object_file::read_manifest(path)?)
}

/// Reads one file's manifest, as [`read`] does, and checks the file as `trust` asks: then the
/// whole file is read once, and its manifest and its checks are of the same bytes.
fn read_trusted(path: &Path, trust: &Trust) -> Result<(Manifest, Option<Checked>), SkipReason> {
    if trust.is_off() {
        return Ok((read(path)?, None));
    }
    let bytes = std::fs::read(path).map_err(|e| SkipReason::Unreadable(e.to_string()))?;
    let manifest = manifest_of(&bytes)?;
    let checked = trust.check(path, &bytes, &manifest)?;
    Ok((manifest, Some(checked)))
}

/// The manifest of a library's bytes, checked as [`read`] checks a file's.
pub(crate) fn manifest_of(bytes: &[u8]) -> Result<Manifest, SkipReason> {
    checked(&object_file::manifest_from(bytes)?)
}

/// The manifest `json` says, if this host can load it.
fn checked(json: &str) -> Result<Manifest, SkipReason> {
    let manifest = Manifest::from_json(json).map_err(|e| SkipReason::BadManifest(e.to_string()))?;
    if !plugin_manifest::abi_compatible(plugin_abi::VERSION, &manifest.abi) {
        return Err(SkipReason::IncompatibleAbi {
            plugin: manifest.abi,
            host: plugin_abi::VERSION.to_owned(),
        });
    }
    if manifest.name.trim().is_empty() {
        return Err(SkipReason::BadManifest(
            "the plugin name is empty".to_owned(),
        ));
    }
    check_names(&manifest)?;
    Ok(manifest)
}

/// Checks the plugin's name and its toolsets' against the rule for names.
fn check_names(manifest: &Manifest) -> Result<(), SkipReason> {
    let toolsets = manifest.toolsets.iter().map(|t| ("toolset name", &t.name));
    for (what, name) in std::iter::once(("plugin name", &manifest.name)).chain(toolsets) {
        check_name(name).map_err(|reason| SkipReason::BadName {
            what,
            name: name.clone(),
            reason,
        })?;
    }
    Ok(())
}

/// Keeps one file of each plugin name: the highest version (`major.minor.patch`; one that
/// does not read ranks below any that does), the first in name order among equal ones. Each other file
/// is skipped with a reason naming the one served.
fn take_highest_of_each_name(discovery: &mut Discovery) {
    let mut kept: Vec<DiscoveredPlugin> = Vec::new();
    let mut shadowed = Vec::new();
    for plugin in std::mem::take(&mut discovery.plugins) {
        match kept
            .iter_mut()
            .find(|k| k.manifest.name == plugin.manifest.name)
        {
            Some(served) if rank(&plugin) > rank(served) => {
                shadowed.push(std::mem::replace(served, plugin));
            }
            Some(_) => shadowed.push(plugin),
            None => kept.push(plugin),
        }
    }
    for plugin in shadowed {
        let Some(served) = kept
            .iter()
            .find(|k| k.manifest.name == plugin.manifest.name)
        else {
            continue;
        };
        discovery.skipped.push(Skipped {
            reason: SkipReason::DuplicateName {
                name: plugin.manifest.name.clone(),
                version: plugin.manifest.version.clone(),
                served_version: served.manifest.version.clone(),
                first: served.path.clone(),
            },
            path: plugin.path,
        });
    }
    discovery.plugins = kept;
}

/// How a plugin's version ranks among files of the same plugin.
fn rank(plugin: &DiscoveredPlugin) -> Option<(u64, u64, u64)> {
    plugin_abi::load::parse_version(plugin.manifest.version.trim_start_matches('v'))
}

fn narrow(discovery: &mut Discovery, only: &[String]) {
    let wanted: BTreeSet<&str> = only.iter().map(String::as_str).collect();
    let (kept, dropped) = std::mem::take(&mut discovery.plugins)
        .into_iter()
        .partition::<Vec<_>, _>(|p| wanted.contains(p.manifest.name.as_str()));
    discovery.unmatched = wanted
        .iter()
        .filter(|name| !kept.iter().any(|p| p.manifest.name == **name))
        .map(|name| (*name).to_owned())
        .collect();
    discovery.plugins = kept;
    discovery
        .skipped
        .extend(dropped.into_iter().map(|p| Skipped {
            path: p.path,
            reason: SkipReason::NotSelected,
        }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(file: &str, name: &str) -> DiscoveredPlugin {
        plugin_at(file, name, "1")
    }

    fn plugin_at(file: &str, name: &str, version: &str) -> DiscoveredPlugin {
        DiscoveredPlugin::library(
            file,
            Manifest::from_json(&format!(
                r#"{{"abi":"0.1.0","name":"{name}","version":"{version}"}}"#
            ))
            .unwrap(),
        )
    }

    #[test]
    fn a_plugin_or_toolset_name_no_url_can_select_is_skipped_naming_the_rule() {
        let manifest = |name: &str, toolset: &str| {
            Manifest::from_json(&format!(
                r#"{{"abi":"{}","name":"{name}","version":"1","toolsets":[{{"name":"{toolset}"}}]}}"#,
                plugin_abi::VERSION
            ))
            .unwrap()
        };
        assert_eq!(check_names(&manifest("good-name", "tools.v2")), Ok(()));
        let skipped = Skipped {
            path: PathBuf::from("libp.so"),
            reason: check_names(&manifest("p", "a b")).unwrap_err(),
        };
        assert_eq!(
            skipped.to_string(),
            format!(
                "libp.so: toolset name `a b`: the name holds a space, which no URL can select: {}",
                crate::util::names::NAME_RULE
            )
        );
        let skipped = Skipped {
            path: PathBuf::from("libp.so"),
            reason: check_names(&manifest("p\\u202e", "t")).unwrap_err(),
        };
        assert!(
            skipped
                .to_string()
                .starts_with("libp.so: plugin name `p\\u{202e}`: the name holds the invisible"),
            "{skipped}"
        );
    }

    #[test]
    fn the_highest_version_of_a_plugin_wins_and_the_first_file_of_equal_ones() {
        let mut d = Discovery {
            plugins: vec![
                plugin_at("libweather.so", "weather", "0.1.0"),
                plugin("a.so", "x"),
                plugin("b.so", "x"),
                plugin_at("libzweather.so", "weather", "0.3.0"),
                plugin_at("libzzweather.so", "weather", "not a version"),
            ],
            ..Default::default()
        };
        take_highest_of_each_name(&mut d);
        let files = |list: Vec<&PathBuf>| {
            list.into_iter()
                .map(|p| p.to_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            files(d.plugins.iter().map(|p| &p.path).collect()),
            ["libzweather.so", "a.so"]
        );
        assert_eq!(
            files(d.skipped.iter().map(|s| &s.path).collect()),
            ["b.so", "libweather.so", "libzzweather.so"]
        );
        assert_eq!(
            d.skipped[1].reason.to_string(),
            "plugin `weather` 0.1.0 is also in libzweather.so, at version 0.3.0, which is served \
             (the highest version; the first file of equal versions)"
        );
        assert!(
            d.skipped[0]
                .reason
                .to_string()
                .contains("also in a.so, at version 1")
        );
    }

    #[test]
    fn a_folder_that_cannot_be_read_keeps_the_io_error_as_its_source() {
        let error = discover(Path::new("/nonexistent/plugins"), None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot read the plugin folder /nonexistent/plugins"
        );
        let io = std::error::Error::source(&error)
            .and_then(|source| source.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind);
        assert_eq!(io, Some(std::io::ErrorKind::NotFound));
    }

    #[test]
    fn narrowing_reports_names_that_match_nothing() {
        let mut d = Discovery {
            plugins: vec![plugin("a.so", "x"), plugin("c.so", "y")],
            ..Default::default()
        };
        narrow(&mut d, &["y".into(), "nope".into()]);
        assert_eq!(d.plugins.len(), 1);
        assert_eq!(d.plugins[0].manifest.name, "y");
        assert_eq!(d.unmatched, ["nope"]);
        assert_eq!(d.skipped[0].reason, SkipReason::NotSelected);
    }

    #[test]
    fn a_rescan_keeps_the_manifest_of_an_unchanged_file_and_reads_a_changed_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("libknown.{LIBRARY_EXTENSION}"));
        std::fs::write(&path, "not a library").unwrap();
        let stamp = |path: &Path| Some(FileStamp::of(&std::fs::metadata(path).unwrap()));
        let known = DiscoveredPlugin {
            stamp: stamp(&path),
            ..plugin_at(path.to_str().unwrap(), "known", "1")
        };
        let trust = Trust::default();
        let again = discover_again(dir.path(), None, &trust, std::slice::from_ref(&known)).unwrap();
        assert_eq!(
            again.plugins,
            vec![known.clone()],
            "unchanged: not read again"
        );

        std::fs::write(&path, "still not a library").unwrap();
        let again = discover_again(dir.path(), None, &trust, &[known]).unwrap();
        assert!(again.plugins.is_empty());
        assert!(
            matches!(again.skipped[0].reason, SkipReason::NotALibrary(_)),
            "changed: read again, {:?}",
            again.skipped
        );
    }

    #[test]
    fn a_text_file_is_not_a_library() {
        assert!(matches!(
            object_file::manifest_from(&b"hello"[..]),
            Err(SkipReason::NotALibrary(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn entries_named_like_libraries_that_are_not_files_are_skipped_with_what_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let name = |stem: &str| format!("lib{stem}.{LIBRARY_EXTENSION}");
        std::fs::create_dir(dir.path().join(name("dir"))).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("nowhere"),
            dir.path().join(name("dangling")),
        )
        .unwrap();
        let fifo = dir.path().join(name("fifo"));
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        std::fs::create_dir(dir.path().join("crate-sources")).unwrap();
        let found = discover(dir.path(), None).unwrap();
        let mut skipped: Vec<String> = found.skipped.iter().map(ToString::to_string).collect();
        skipped.sort();
        let at = |stem: &str| dir.path().join(name(stem)).display().to_string();
        let mut expected = vec![
            format!(
                "{}: not a regular file: a symlink to nothing",
                at("dangling")
            ),
            format!("{}: not a regular file: a directory", at("dir")),
        ];
        if made.is_ok_and(|s| s.success()) {
            expected.push(format!("{}: not a regular file: a FIFO", at("fifo")));
        }
        assert_eq!(skipped, expected);
        assert!(found.plugins.is_empty());
    }
}
