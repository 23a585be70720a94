//! What the host does with the pins of bridged servers' tools (`--pin-tools`): the pin files
//! beside the cached listings, the review of each listing against them, and the changes not
//! accepted yet, which `/toolsets`, `/healthz` and an unknown tool's error report.
//!
//! One pin file per server in the cache folder, `KEY.pins.json` beside its listing's
//! `KEY.json` (the same key: a hash of the name and how the server is reached). The first list
//! read from a server is pinned whole (trust on first use). Each later list is compared with
//! the pins ([`super::pins`]): a changed tool and a tool the pins do not know are logged once
//! each (server, tool, what changed) and reported until the operator accepts them
//! (`pins accept`, which rewrites the file); with [`PinMode::Block`] they are also held back,
//! left out of what is served. A pin file that cannot be read is not replaced: every tool then
//! counts as not pinned. A running server polls the files of servers with changes
//! ([`Pins::stale`], `crate::reload`), so an accepted tool is served again without a restart.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use rmcp::model::Tool;
use serde::Serialize;

use super::{
    cache::{Listing, ToolCache, now, write_whole},
    config::ServerEntry,
    names::served_name,
    pins::{ChangeKind, PinFile, PinMode, ToolChange},
};
use crate::{
    discovery::FileStamp,
    util::{lock::lock, names::Shown},
};

/// The pin mode, and the changes not accepted yet of every server reviewed under it: shared
/// by every [`ToolCache`] made from one set of plugin sources.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pins {
    mode: PinMode,
    board: Arc<Board>,
}

/// Pins compare by mode: the board is what was seen, not a setting.
impl PartialEq for Pins {
    fn eq(&self, other: &Self) -> bool {
        self.mode == other.mode
    }
}

impl Eq for Pins {}

/// What the reviews found.
#[derive(Debug, Default)]
struct Board {
    /// Each server with changes not accepted yet, by name.
    pending: Mutex<BTreeMap<String, Pending>>,
    /// The changes already logged: pin file, tool and new hash, so each is logged once.
    warned: Mutex<BTreeSet<(PathBuf, String, String)>>,
}

/// A server's changes not accepted yet.
#[derive(Debug, Clone)]
struct Pending {
    /// Its pin file, and that file as it was when the changes were found.
    file: PathBuf,
    stamp: Option<FileStamp>,
    /// How its tools are served: its toolset and whether their names are prefixed.
    toolset: String,
    namespace: bool,
    changes: Vec<ToolChange>,
}

/// A tool of a bridged server that differs from its pin, as reports show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ChangedTool {
    /// The server.
    pub(crate) server: String,
    /// Its toolset.
    pub(crate) toolset: String,
    /// The server's own name of the tool.
    pub(crate) tool: String,
    /// The name it is served under.
    pub(crate) served_name: String,
    /// `changed` or `added`.
    pub(crate) change: ChangeKind,
    /// The fields that changed (none for an added tool).
    pub(crate) fields: Vec<&'static str>,
    /// What changed, in a few words.
    pub(crate) what: String,
    /// Whether it is held back (`--pin-tools block`) until accepted.
    pub(crate) held_back: bool,
}

/// Why pins could not be read, written or accepted; each names the file or server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum PinError {
    /// There is no cache folder to keep them in.
    #[error(
        "there is no cache folder for the pins: give --cache-dir (or set $XDG_CACHE_HOME or $HOME)"
    )]
    NoCacheFolder,
    /// A pin file could not be read.
    #[error("cannot read the pins {}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A pin file is not valid.
    #[error("the pins {} are not valid", file.display())]
    Parse {
        /// The file.
        file: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// A pin file could not be written.
    #[error("cannot write the pins {}", file.display())]
    Write {
        /// The file.
        file: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The server's listing is not in the cache folder.
    #[error(
        "{server} has no listing in {}: serve it once (or run `list --refresh`) before \
         accepting its tools",
        dir.display()
    )]
    NotListed {
        /// The server's label.
        server: String,
        /// The cache folder.
        dir: PathBuf,
    },
    /// The tool is not in the server's listing.
    #[error("{server} lists no tool `{tool}`; it lists: {listed}")]
    NoSuchTool {
        /// The server's label.
        server: String,
        /// The tool asked for.
        tool: String,
        /// The tools it lists, comma-separated.
        listed: String,
    },
}

impl Pins {
    /// Pins in `mode`, nothing reviewed yet.
    pub(crate) fn new(mode: PinMode) -> Self {
        Self {
            mode,
            board: Arc::default(),
        }
    }

    /// The servers whose pin file changed since their changes were found (the operator
    /// accepted some): each is named once per change of its file.
    pub(crate) fn stale(&self) -> Vec<String> {
        let mut pending = lock(&self.board.pending);
        pending
            .iter_mut()
            .filter_map(|(server, entry)| {
                let now = stamp(&entry.file);
                (now != entry.stamp).then(|| {
                    entry.stamp = now;
                    server.clone()
                })
            })
            .collect()
    }

    /// Logs `change` of `server` (pin file `file`) unless it was logged before.
    fn warn_once(&self, server: &ServerEntry, file: &Path, change: &ToolChange) {
        let key = (file.to_owned(), change.tool.clone(), change.sha256.clone());
        if !lock(&self.board.warned).insert(key) {
            return;
        }
        let served = match self.mode {
            PinMode::Block => "held back until accepted",
            PinMode::Warn | PinMode::Off => "served (--pin-tools warn)",
        };
        let what = match change.kind {
            ChangeKind::Changed => format!("changed since it was pinned: {}", change.summary()),
            ChangeKind::Added => "is new: it is not pinned".to_owned(),
        };
        let line = format!(
            "{}: tool `{}` {what}; {served}; accept it with `reactor-mcp-server pins accept {}`",
            server.label(),
            change.tool,
            server.name
        );
        tracing::warn!(server = %server.name, tool = %change.tool, "{}", Shown(&line));
    }
}

impl ToolCache {
    /// `listing`, a list of `server`'s tools, reviewed against its pins: what to serve of it
    /// (all of it, but with [`PinMode::Block`] the tools that differ from their pins). Each
    /// change is logged once and reported until accepted. When `server` has no pins yet and
    /// `first_use` (the list was read from the server, or is about to be served), its tools are
    /// pinned as they are.
    pub(crate) fn reviewed(
        &self,
        server: &ServerEntry,
        listing: &Listing,
        first_use: bool,
    ) -> Listing {
        let pins = self.pins();
        let Some(file) = self.pins_file(server).filter(|_| pins.mode != PinMode::Off) else {
            lock(&pins.board.pending).remove(&server.name);
            return listing.clone();
        };
        let pinned = match read_pins(&file) {
            Ok(Some(pinned)) => pinned,
            Ok(None) => {
                if first_use {
                    let recorded = PinFile::record(&server.name, &listing.tools, now());
                    match write_pins(&file, &recorded) {
                        Ok(()) => tracing::info!(
                            "{}: pinned the definitions of its {} tools in {}",
                            server.label(),
                            listing.tools.len(),
                            file.display()
                        ),
                        Err(error) => tracing::warn!("{}", crate::util::error::chain(&error)),
                    }
                }
                lock(&pins.board.pending).remove(&server.name);
                return listing.clone();
            }
            Err(error) => {
                let key = (file.clone(), String::new(), error.to_string());
                if lock(&pins.board.warned).insert(key) {
                    tracing::warn!(
                        "{}; every tool of {} counts as not pinned until its tools are accepted",
                        crate::util::error::chain(&error),
                        server.label()
                    );
                }
                PinFile::record(&server.name, &[], 0)
            }
        };
        let changes = pinned.changes(&listing.tools);
        for change in &changes {
            pins.warn_once(server, &file, change);
        }
        let held: BTreeSet<&str> = match pins.mode {
            PinMode::Block => changes.iter().map(|c| c.tool.as_str()).collect(),
            PinMode::Warn | PinMode::Off => BTreeSet::new(),
        };
        let served = Listing {
            tools: listing
                .tools
                .iter()
                .filter(|t| !held.contains(&*t.name))
                .cloned()
                .collect(),
            ..listing.clone()
        };
        let mut pending = lock(&pins.board.pending);
        if changes.is_empty() {
            pending.remove(&server.name);
        } else {
            pending.insert(
                server.name.clone(),
                Pending {
                    stamp: stamp(&file),
                    file,
                    toolset: server.toolset.name.clone(),
                    namespace: server.namespace,
                    changes,
                },
            );
        }
        served
    }

    /// The tools of `server` that differ from their pins, as last reviewed.
    pub(crate) fn changed_tools(&self, server: &ServerEntry) -> Vec<ChangedTool> {
        let pins = self.pins();
        let pending = lock(&pins.board.pending);
        let Some(entry) = pending.get(&server.name) else {
            return Vec::new();
        };
        entry
            .changes
            .iter()
            .map(|change| ChangedTool {
                server: server.name.clone(),
                toolset: entry.toolset.clone(),
                tool: change.tool.clone(),
                served_name: served_name(&server.name, &change.tool, entry.namespace),
                change: change.kind,
                fields: change.fields.iter().map(|f| f.field).collect(),
                what: change.summary(),
                held_back: pins.mode == PinMode::Block,
            })
            .collect()
    }

    /// `server`'s pins (none if it has no pin file) and the changes of its cached listing
    /// from them (none without a listing), read from the files.
    pub(crate) fn pin_status(
        &self,
        server: &ServerEntry,
    ) -> Result<(Option<PinFile>, Vec<ToolChange>), PinError> {
        let file = self.pins_file(server).ok_or(PinError::NoCacheFolder)?;
        let pinned = read_pins(&file)?;
        let listed = self
            .read(server)
            .map(|c| c.listing.tools)
            .unwrap_or_default();
        let changes = pinned
            .as_ref()
            .map(|p| p.changes(&listed))
            .unwrap_or_default();
        Ok((pinned, changes))
    }

    /// Pins `server`'s tools as its cached listing has them (only `tool`, by its own or its
    /// served name, when given); pins of tools it no longer lists stay. Returns the changes
    /// accepted.
    pub(crate) fn accept(
        &self,
        server: &ServerEntry,
        tool: Option<&str>,
    ) -> Result<Vec<ToolChange>, PinError> {
        let file = self.pins_file(server).ok_or(PinError::NoCacheFolder)?;
        let listed = self
            .read(server)
            .ok_or_else(|| PinError::NotListed {
                server: server.label(),
                dir: file.parent().unwrap_or(Path::new(".")).to_owned(),
            })?
            .listing
            .tools;
        let chosen: Vec<&Tool> = match tool {
            None => listed.iter().collect(),
            Some(name) => {
                let found = listed.iter().find(|t| {
                    t.name == name || served_name(&server.name, &t.name, server.namespace) == name
                });
                let Some(found) = found else {
                    return Err(PinError::NoSuchTool {
                        server: server.label(),
                        tool: name.to_owned(),
                        listed: listed
                            .iter()
                            .map(|t| t.name.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                };
                vec![found]
            }
        };
        let mut pinned = match read_pins(&file) {
            Ok(Some(pinned)) => pinned,
            Ok(None) | Err(PinError::Parse { .. }) => PinFile::record(&server.name, &[], 0),
            Err(error) => return Err(error),
        };
        let owned: Vec<Tool> = chosen.iter().map(|t| (*t).clone()).collect();
        let accepted = pinned.changes(&owned);
        pinned.accept(chosen, now());
        write_pins(&file, &pinned)?;
        Ok(accepted)
    }
}

/// The pins in `file`, if there is such a file.
fn read_pins(file: &Path) -> Result<Option<PinFile>, PinError> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(PinError::Read {
                file: file.to_owned(),
                source,
            });
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| PinError::Parse {
            file: file.to_owned(),
            source,
        })
}

/// Writes `pins` to `file` whole.
fn write_pins(file: &Path, pins: &PinFile) -> Result<(), PinError> {
    serde_json::to_vec_pretty(pins)
        .map_err(std::io::Error::other)
        .and_then(|text| write_whole(file, &text))
        .map_err(|source| PinError::Write {
            file: file.to_owned(),
            source,
        })
}

/// `file` as it is now; none if it is not there.
fn stamp(file: &Path) -> Option<FileStamp> {
    std::fs::metadata(file).ok().map(|m| FileStamp::of(&m))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Map, json};

    use super::*;
    use crate::discovery::servers::cache::tests::server;

    fn echo(description: &str) -> Tool {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let Some(schema) = schema.as_object().cloned() else {
            unreachable!()
        };
        Tool::new("echo", description.to_owned(), Arc::new(schema))
    }

    fn listing(tools: Vec<Tool>) -> Listing {
        Listing {
            tools,
            ..Listing::default()
        }
    }

    fn names(listing: &Listing) -> Vec<String> {
        listing.tools.iter().map(|t| t.name.to_string()).collect()
    }

    fn cache(dir: &tempfile::TempDir, mode: PinMode) -> ToolCache {
        ToolCache::new(Some(dir.path().to_owned())).with_pins(Pins::new(mode))
    }

    #[test]
    fn the_first_list_is_pinned_beside_the_cached_one() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(&dir, PinMode::Warn);
        let tiny = server("tiny", "http://h/mcp");
        let first = listing(vec![echo("E.")]);
        assert_eq!(cache.reviewed(&tiny, &first, false), first);
        assert!(
            !cache.pins_file(&tiny).unwrap().exists(),
            "only first use pins"
        );
        assert_eq!(cache.reviewed(&tiny, &first, true), first);
        let file = cache.pins_file(&tiny).unwrap();
        assert_eq!(file.parent(), Some(dir.path()));
        assert!(
            file.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .ends_with(".pins.json")
        );
        assert!(cache.changed_tools(&tiny).is_empty());
    }

    #[test]
    fn warn_serves_a_changed_tool_and_reports_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(&dir, PinMode::Warn);
        let tiny = server("tiny", "http://h/mcp");
        cache.reviewed(&tiny, &listing(vec![echo("E.")]), true);
        let changed = listing(vec![echo("E. And more.")]);
        assert_eq!(cache.reviewed(&tiny, &changed, true), changed);
        let report = cache.changed_tools(&tiny);
        assert_eq!(report.len(), 1);
        assert_eq!(report[0].served_name, "tiny__echo");
        assert_eq!(report[0].fields, ["description"]);
        assert!(!report[0].held_back);
        let (pinned, changes) = cache.pin_status(&tiny).unwrap();
        assert!(pinned.is_some());
        assert!(changes.is_empty(), "nothing is cached: nothing to compare");
    }

    #[test]
    fn block_holds_back_changed_and_new_tools_until_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(&dir, PinMode::Block);
        let tiny = server("tiny", "http://h/mcp");
        cache.reviewed(&tiny, &listing(vec![echo("E.")]), true);
        let added = Tool::new("added", "New.", Arc::new(Map::new()));
        let now = listing(vec![echo("E. Changed."), added]);
        assert_eq!(
            names(&cache.reviewed(&tiny, &now, true)),
            Vec::<String>::new()
        );
        let report = cache.changed_tools(&tiny);
        assert_eq!(report.len(), 2);
        assert!(report.iter().all(|r| r.held_back));
        assert!(cache.pins().stale().is_empty());

        cache.write(&tiny, &now);
        assert_eq!(cache.pin_status(&tiny).unwrap().1.len(), 2);
        let accepted = cache.accept(&tiny, Some("tiny__echo")).unwrap();
        assert_eq!(accepted.len(), 1);
        assert_eq!(cache.pins().stale(), ["tiny"], "the pin file changed");
        assert!(cache.pins().stale().is_empty(), "named once");
        assert_eq!(names(&cache.reviewed(&tiny, &now, true)), ["echo"]);
        cache.accept(&tiny, None).unwrap();
        assert_eq!(names(&cache.reviewed(&tiny, &now, true)), ["echo", "added"]);
        assert!(cache.changed_tools(&tiny).is_empty());
    }

    #[test]
    fn accepting_needs_a_listing_and_a_listed_tool() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(&dir, PinMode::Warn);
        let tiny = server("tiny", "http://h/mcp");
        let error = cache.accept(&tiny, None).unwrap_err().to_string();
        assert!(
            error.starts_with("server `tiny` has no listing in "),
            "{error}"
        );
        cache.write(&tiny, &listing(vec![echo("E.")]));
        assert_eq!(
            cache.accept(&tiny, Some("nope")).unwrap_err().to_string(),
            "server `tiny` lists no tool `nope`; it lists: echo"
        );
    }

    #[test]
    fn an_unreadable_pin_file_is_kept_and_pins_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(&dir, PinMode::Block);
        let tiny = server("tiny", "http://h/mcp");
        let file = cache.pins_file(&tiny).unwrap();
        std::fs::write(&file, "not json").unwrap();
        let served = cache.reviewed(&tiny, &listing(vec![echo("E.")]), true);
        assert!(served.tools.is_empty());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "not json");
        assert_eq!(cache.changed_tools(&tiny)[0].change, ChangeKind::Added);
    }

    #[test]
    fn off_neither_pins_nor_holds_back() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(&dir, PinMode::Off);
        let tiny = server("tiny", "http://h/mcp");
        let first = listing(vec![echo("E.")]);
        assert_eq!(cache.reviewed(&tiny, &first, true), first);
        assert!(!cache.pins_file(&tiny).unwrap().exists());
    }
}
