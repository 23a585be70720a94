//! Reload: noticing that the plugins changed, and saying what changed between two registries.
//!
//! Four things make the plugins be discovered again ([`Trigger`]): an event in the plugin
//! folder or on a watched `mcp.json` ([`watch`], with the `notify` crate; off with
//! `--no-watch`), `SIGHUP` ([`on_hangup`], for file systems without events), a bridged
//! server saying its tools changed (its new list is then in the cache), and the pins of a
//! server with changed tools being rewritten (`pins accept`; [`on_accepted_pins`] polls them).
//! Triggers are batched ([`next_batch`]): a scan starts once no trigger came for [`DEBOUNCE`],
//! so a file being written is not read half-way, and a burst of changes makes one scan; changes
//! that never stop (a file rewritten faster than the debounce) still get a scan every
//! [`MAX_BATCH`]. [`Changes`] says which plugins a new scan added, replaced and removed; `serve`
//! makes it a new generation.
//!
//! Nothing here opens a library or knows about MCP.

use std::{
    collections::BTreeSet,
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use tokio::sync::mpsc;

use crate::{
    discovery::servers::{
        config::{FOLDER_FILE, FOLDER_SUFFIX},
        pinning::Pins,
    },
    discovery::trust::signature::SIGNATURE_SUFFIX,
    discovery::{DiscoveredPlugin, Discovery, DiscoveryError, LIBRARY_EXTENSION, Skipped},
    registry::Registry,
    util::{error::Report, names::Shown},
};

/// How long no change may come before the plugins are discovered again.
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(100);

/// The longest a batch of changes waits for a quiet period: a scan then starts anyway.
pub(crate) const MAX_BATCH: Duration = Duration::from_secs(1);

/// Why the plugins may have changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// A watched file or folder changed.
    Files,
    /// `SIGHUP`: discover again by hand.
    Signal,
    /// A bridged server said its tools changed; its new list is in the cache.
    Relisted(String),
}

/// Where the sending ends of triggers are: cloned into each thing that may trigger a scan.
#[derive(Debug, Clone)]
pub(crate) struct Triggers(mpsc::UnboundedSender<Trigger>);

impl Triggers {
    /// A sender and the receiving end [`next_batch`] reads.
    pub(crate) fn channel() -> (Self, mpsc::UnboundedReceiver<Trigger>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self(sender), receiver)
    }

    /// Asks for a scan; returns at once, from any thread. Nothing happens once the server is
    /// stopping.
    pub(crate) fn send(&self, trigger: Trigger) {
        let _ = self.0.send(trigger);
    }
}

/// The function that discovers the plugins again (the plugin folder and the `mcp.json` files),
/// given those the last scan found; its error is a [`Report`], shown whole in the log line that
/// says the scan failed.
pub(crate) type Discover =
    Arc<dyn Fn(&[DiscoveredPlugin]) -> Result<Discovery, Report<DiscoveryError>> + Send + Sync>;

/// Where a running server's plugins come from, so it can discover them again.
#[derive(Clone)]
pub(crate) struct Source {
    /// Discovers them again, without warnings: the caller warns about what is new.
    pub(crate) discover: Discover,
    /// What the first scan skipped (warned about once).
    pub(crate) skipped: Vec<Skipped>,
    /// The plugin folder.
    pub(crate) plugin_dir: PathBuf,
    /// Further `mcp.json` files, watched beside the folder.
    pub(crate) config_files: Vec<PathBuf>,
    /// The trusted keys file and the lock file, watched beside the folder.
    pub(crate) trust_files: Vec<PathBuf>,
    /// Whether files are watched for changes (`--no-watch` turns it off; `SIGHUP` still works).
    pub(crate) watch: bool,
    /// The pins of bridged servers' tools, whose files [`on_accepted_pins`] polls.
    pub(crate) pins: Pins,
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("plugin_dir", &self.plugin_dir)
            .field("config_files", &self.config_files)
            .field("watch", &self.watch)
            .finish_non_exhaustive()
    }
}

/// Watches the plugin folder and `config_files` (further `mcp.json` files, the trusted keys
/// file, the lock file) for changes to libraries, their signatures and those files, sending
/// [`Trigger::Files`] for each; watching stops when the watcher is dropped.
///
/// # Errors
///
/// If a folder cannot be watched.
pub(crate) fn watch(
    plugin_dir: &Path,
    config_files: &[PathBuf],
    triggers: Triggers,
) -> notify::Result<notify::RecommendedWatcher> {
    use notify::Watcher as _;
    let plugin_dir = absolute(plugin_dir);
    let config_files: Vec<PathBuf> = config_files.iter().map(|f| absolute(f)).collect();
    let mut folders: BTreeSet<PathBuf> = BTreeSet::from([plugin_dir.clone()]);
    folders.extend(
        config_files
            .iter()
            .filter_map(|f| f.parent().map(Path::to_owned)),
    );
    let relevant = Watched {
        plugin_dir,
        config_files,
    };
    let mut watcher =
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            Ok(event) if relevant.concerns(&event) => triggers.send(Trigger::Files),
            Ok(_) => {}
            Err(error) => {
                tracing::warn!("watching the plugins: {error}; scanning them again");
                triggers.send(Trigger::Files);
            }
        })?;
    for folder in &folders {
        watcher.watch(folder, notify::RecursiveMode::NonRecursive)?;
    }
    Ok(watcher)
}

/// The files whose changes matter.
struct Watched {
    plugin_dir: PathBuf,
    config_files: Vec<PathBuf>,
}

impl Watched {
    /// Whether `event` may change what is discovered: a change (not a mere read) of a library,
    /// a library's signature or an `mcp.json` file of the plugin folder, or of a watched file,
    /// or lost events.
    fn concerns(&self, event: &notify::Event) -> bool {
        use notify::event::{AccessKind, AccessMode, EventKind};
        if event.need_rescan() {
            return true;
        }
        let changes = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            _ => true,
        };
        changes && event.paths.iter().any(|path| self.names(path))
    }

    /// Whether `path` is a file discovery reads.
    fn names(&self, path: &Path) -> bool {
        if self.config_files.iter().any(|f| f == path) {
            return true;
        }
        let in_folder = path.parent() == Some(self.plugin_dir.as_path());
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let library = |name: &str| {
            Path::new(name)
                .extension()
                .is_some_and(|e| e == LIBRARY_EXTENSION)
        };
        in_folder
            && (library(name)
                || name.strip_suffix(SIGNATURE_SUFFIX).is_some_and(library)
                || name == FOLDER_FILE
                || name.ends_with(FOLDER_SUFFIX))
    }
}

/// `path` made absolute (the watcher reports absolute paths), symlinks resolved when it exists.
fn absolute(path: &Path) -> PathBuf {
    path.canonicalize()
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_owned())
}

/// Sends [`Trigger::Signal`] on each `SIGHUP`, for as long as the process runs.
pub(crate) async fn on_hangup(triggers: Triggers) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::hangup()) {
            Ok(mut hangups) => {
                while hangups.recv().await.is_some() {
                    tracing::info!("SIGHUP: scanning the plugins again");
                    triggers.send(Trigger::Signal);
                }
            }
            Err(error) => tracing::warn!("cannot listen for SIGHUP: {error}"),
        }
    }
    #[cfg(not(unix))]
    drop(triggers);
}

/// How often the pin files of servers with changed tools are looked at.
pub(crate) const PIN_POLL: Duration = Duration::from_secs(1);

/// Sends [`Trigger::Relisted`] for each bridged server whose pin file changed while some of
/// its tools differed from their pins (the operator accepted them), so it is opened again
/// and serves them; looks every [`PIN_POLL`] (a `stat` per such server, nothing when there is
/// none), until no scan is listening.
pub(crate) async fn on_accepted_pins(pins: Pins, triggers: Triggers) {
    while !triggers.0.is_closed() {
        tokio::time::sleep(PIN_POLL).await;
        for server in pins.stale() {
            tracing::info!(
                "server `{}`: its pins changed; opening it again",
                Shown(&server)
            );
            triggers.send(Trigger::Relisted(server));
        }
    }
}

/// Waits for a trigger, then until `quiet` passes without one, or `longest` since the first;
/// returns the bridged servers that said their tools changed meanwhile. `None` once every
/// sender is gone.
pub(crate) async fn next_batch(
    receiver: &mut mpsc::UnboundedReceiver<Trigger>,
    quiet: Duration,
    longest: Duration,
) -> Option<BTreeSet<String>> {
    let mut relisted = BTreeSet::new();
    let mut trigger = receiver.recv().await?;
    let deadline = tokio::time::Instant::now() + longest;
    loop {
        if let Trigger::Relisted(server) = trigger {
            relisted.insert(server);
        }
        let wait = quiet.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        match tokio::time::timeout(wait, receiver.recv()).await {
            Ok(Some(next)) => trigger = next,
            Ok(None) | Err(_) => return Some(relisted),
        }
    }
}

/// Which plugins differ between two registries, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    /// Plugins only the new registry has.
    pub(crate) added: BTreeSet<String>,
    /// Plugins from another source, or a changed file (or a bridged server whose tools
    /// changed): opened anew.
    pub(crate) replaced: BTreeSet<String>,
    /// Plugins from the same source whose manifest differs (a bridged server's cached tools):
    /// what was opened still serves.
    pub(crate) redescribed: BTreeSet<String>,
    /// Plugins only the old registry has.
    pub(crate) removed: BTreeSet<String>,
}

impl Changes {
    /// What changed from `old` to `new`; `relisted` bridged servers count as replaced.
    pub(crate) fn between(old: &Registry, new: &Registry, relisted: &BTreeSet<String>) -> Self {
        let mut changes = Self::default();
        for plugin in new.plugins() {
            let name = &plugin.manifest.name;
            match old.plugin(name) {
                None => {
                    changes.added.insert(name.clone());
                }
                Some(before) if !before.same_source(plugin) || relisted.contains(name) => {
                    changes.replaced.insert(name.clone());
                }
                Some(before) if before.manifest != plugin.manifest => {
                    changes.redescribed.insert(name.clone());
                }
                Some(_) => {}
            }
        }
        changes.removed = old
            .plugins()
            .iter()
            .map(|p| p.manifest.name.clone())
            .filter(|name| new.plugin(name).is_none())
            .collect();
        changes
    }

    /// Whether nothing changed.
    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.replaced.is_empty()
            && self.redescribed.is_empty()
            && self.removed.is_empty()
    }

    /// The plugins whose code may differ: added, replaced and removed ones.
    pub(crate) fn code(&self) -> BTreeSet<String> {
        let mut names = self.added.clone();
        names.extend(self.replaced.iter().cloned());
        names.extend(self.removed.iter().cloned());
        names
    }
}

impl fmt::Display for Changes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = [
            ("added", &self.added),
            ("replaced", &self.replaced),
            ("described anew", &self.redescribed),
            ("removed", &self.removed),
        ];
        let said: Vec<String> = parts
            .iter()
            .filter(|(_, names)| !names.is_empty())
            .map(|(what, names)| {
                let names: Vec<String> = names.iter().map(|n| Shown(n).to_string()).collect();
                format!("{what} {}", names.join(", "))
            })
            .collect();
        if said.is_empty() {
            f.write_str("nothing changed")
        } else {
            f.write_str(&said.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Manifest;

    use super::*;
    use crate::discovery::{DiscoveredPlugin, FileStamp};

    fn plugin(name: &str, version: &str, stamp: Option<FileStamp>) -> DiscoveredPlugin {
        let json = format!(r#"{{"abi":"0.1.0","name":"{name}","version":"{version}"}}"#);
        DiscoveredPlugin {
            stamp,
            ..DiscoveredPlugin::library(
                format!("lib{name}.so"),
                Manifest::from_json(&json).unwrap(),
            )
        }
    }

    #[test]
    fn changes_name_what_was_added_replaced_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "1").unwrap();
        let first = FileStamp::of(&std::fs::metadata(&file).unwrap());
        std::fs::write(&file, "22").unwrap();
        let second = FileStamp::of(&std::fs::metadata(&file).unwrap());
        let old = Registry::new(vec![
            plugin("kept", "1", Some(first)),
            plugin("copied-over", "1", Some(first)),
            plugin("rebuilt", "1", Some(first)),
            plugin("gone", "1", None),
        ]);
        let new = Registry::new(vec![
            plugin("kept", "1", Some(first)),
            plugin("copied-over", "1", Some(second)),
            plugin("rebuilt", "2", Some(first)),
            plugin("new", "1", None),
        ]);
        let changes = Changes::between(&old, &new, &BTreeSet::new());
        let names = |n: &[&str]| n.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
        assert_eq!(changes.added, names(&["new"]));
        assert_eq!(changes.replaced, names(&["copied-over", "rebuilt"]));
        assert_eq!(changes.removed, names(&["gone"]));
        assert!(changes.redescribed.is_empty());
        assert_eq!(
            changes.to_string(),
            "added new; replaced copied-over, rebuilt; removed gone"
        );
        assert!(Changes::between(&new, &new, &BTreeSet::new()).is_empty());
        let relisted = Changes::between(&new, &new, &names(&["kept"]));
        assert_eq!(relisted.replaced, names(&["kept"]));
    }

    #[tokio::test]
    async fn a_burst_of_triggers_is_one_batch() {
        let (triggers, mut receiver) = Triggers::channel();
        for _ in 0..100 {
            triggers.send(Trigger::Files);
        }
        triggers.send(Trigger::Relisted("search".to_owned()));
        let batch = next_batch(&mut receiver, Duration::from_millis(20), MAX_BATCH).await;
        assert_eq!(batch, Some(BTreeSet::from(["search".to_owned()])));
        assert!(receiver.try_recv().is_err(), "every trigger was taken");
        drop(triggers);
        assert_eq!(
            next_batch(&mut receiver, Duration::from_millis(20), MAX_BATCH).await,
            None
        );
    }

    #[tokio::test(start_paused = true)]
    async fn triggers_that_never_stop_still_end_a_batch() {
        let (triggers, mut receiver) = Triggers::channel();
        let feeding = tokio::spawn(async move {
            loop {
                triggers.send(Trigger::Files);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        let started = tokio::time::Instant::now();
        let batch = next_batch(&mut receiver, Duration::from_millis(20), MAX_BATCH).await;
        assert_eq!(batch, Some(BTreeSet::new()));
        assert!(started.elapsed() <= MAX_BATCH + Duration::from_millis(20));
        feeding.abort();
    }

    #[test]
    fn only_libraries_their_signatures_and_watched_files_concern_the_watcher() {
        let watched = Watched {
            plugin_dir: PathBuf::from("/p"),
            config_files: vec![PathBuf::from("/etc/extra.json")],
        };
        let lib = format!("/p/libx.{LIBRARY_EXTENSION}");
        assert!(watched.names(Path::new(&lib)));
        assert!(watched.names(Path::new(&format!("{lib}.minisig"))));
        assert!(!watched.names(Path::new("/p/notes.minisig")));
        assert!(watched.names(Path::new("/p/mcp.json")));
        assert!(watched.names(Path::new("/p/search.mcp.json")));
        assert!(watched.names(Path::new("/etc/extra.json")));
        assert!(!watched.names(Path::new("/p/libx.so.tmp")));
        assert!(!watched.names(Path::new("/p/sub/mcp.json")));
        assert!(!watched.names(Path::new("/etc/other.json")));
    }
}
