//! The last good listing of each bridged server (tools, resources, resource templates, prompts,
//! skills), kept on disk so listings show them without starting it.
//!
//! One JSON file per server in the cache folder (`--cache-dir`, else the user's cache folder),
//! named after a hash of the entry's name and how it is reached (not its environment or headers,
//! so a rotated token keeps the list). The name is hashed, never part of the path, so no name
//! reaches outside the folder; files named `NAME-HASH.json` by older versions are not read, and
//! their servers are simply asked again. A file holds what the server listed and when.
//! A file that cannot be read or parsed counts as no list; writing is best effort. A list younger
//! than the entry's `cache_ttl` is served without asking the server ([`CachedListing::is_fresh`]).
//! The pins of each server's tools are kept beside its listing, under the same key
//! (`super::pinning`).

use std::{
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use rmcp::model::{Prompt, Resource, ResourceTemplate, Skill, Tool};
use serde::{Deserialize, Serialize};

use super::{
    config::{ServerEntry, Transport},
    pinning::Pins,
};
use crate::util::hash::sha256_hex;

/// The folder of the servers' listings and of their tools' pins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCache {
    dir: Option<PathBuf>,
    pins: Pins,
}

/// What a server offers, as it listed it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Listing {
    /// Its tools.
    pub(crate) tools: Vec<Tool>,
    /// Its resources with a fixed URI (none unless it has the `resources` capability).
    #[serde(default)]
    pub(crate) resources: Vec<Resource>,
    /// Its resource templates.
    #[serde(default)]
    pub(crate) resource_templates: Vec<ResourceTemplate>,
    /// Its prompts (none unless it has the `prompts` capability).
    #[serde(default)]
    pub(crate) prompts: Vec<Prompt>,
    /// Whether it completes prompt arguments and template variables.
    #[serde(default)]
    pub(crate) completions: bool,
    /// Its skills, under its own URIs (none unless it declares the Skills extension).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) skills: Vec<Skill>,
}

/// A listing as read from a server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CachedListing {
    /// The server's name.
    pub(crate) server: String,
    /// When it was read, in seconds since the Unix epoch.
    pub(crate) read_at: u64,
    /// What it listed.
    #[serde(flatten)]
    pub(crate) listing: Listing,
}

impl CachedListing {
    /// Whether the list is younger than `ttl` (never, for a zero `ttl`).
    pub(crate) fn is_fresh(&self, ttl: std::time::Duration) -> bool {
        now().saturating_sub(self.read_at) < ttl.as_secs()
    }
}

/// Seconds since the Unix epoch.
pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl ToolCache {
    /// The cache in `dir`, else in the user's cache folder; none if there is no such folder.
    pub(crate) fn new(dir: Option<PathBuf>) -> Self {
        Self {
            dir: dir.or_else(default_dir),
            pins: Pins::default(),
        }
    }

    /// The cache, its tools held to `pins`.
    pub(crate) fn with_pins(self, pins: Pins) -> Self {
        Self { pins, ..self }
    }

    /// How its servers' tools are held to their pins.
    pub(crate) fn pins(&self) -> &Pins {
        &self.pins
    }

    /// The last list `server` gave, if one is kept.
    pub(crate) fn read(&self, server: &ServerEntry) -> Option<CachedListing> {
        let text = std::fs::read_to_string(self.file(server)?).ok()?;
        serde_json::from_str::<CachedListing>(&text)
            .ok()
            .filter(|c| c.server == server.name)
    }

    /// Keeps `listing` as `server`'s, read now. Failures are logged, not returned.
    pub(crate) fn write(&self, server: &ServerEntry, listing: &Listing) {
        let Some(file) = self.file(server) else {
            return;
        };
        let cached = CachedListing {
            server: server.name.clone(),
            read_at: now(),
            listing: listing.clone(),
        };
        let written = serde_json::to_vec_pretty(&cached)
            .map_err(std::io::Error::other)
            .and_then(|bytes| write_whole(&file, &bytes));
        if let Err(e) = written {
            tracing::warn!(
                "{}: cannot keep its listing in {}: {e}",
                server.label(),
                file.display()
            );
        }
    }

    /// The file of `server`'s listing.
    fn file(&self, server: &ServerEntry) -> Option<PathBuf> {
        Some(self.dir.as_ref()?.join(format!("{}.json", key(server))))
    }

    /// The file of the pins of `server`'s tools, beside its listing.
    pub(crate) fn pins_file(&self, server: &ServerEntry) -> Option<PathBuf> {
        Some(
            self.dir
                .as_ref()?
                .join(format!("{}.pins.json", key(server))),
        )
    }
}

/// Writes `bytes` to `file` whole: to a temporary file beside it, renamed over it, so a reader
/// sees the old file or the new one; makes the folder first.
pub(super) fn write_whole(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(file.parent().unwrap_or(Path::new(".")))?;
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, file)
}

/// The key of `server`'s files: a hash of its name and how it is reached.
fn key(server: &ServerEntry) -> String {
    let identity = match &server.transport {
        Transport::Stdio {
            command, args, cwd, ..
        } => format!(
            "stdio\0{}\0{command}\0{}\0{}",
            server.name,
            args.join("\0"),
            cwd.as_deref().unwrap_or(Path::new("")).display()
        ),
        Transport::Http { url, .. } => format!("http\0{}\0{url}", server.name),
    };
    sha256_hex(&identity)[..32].to_owned()
}

/// `$XDG_CACHE_HOME/reactor-mcp-server`, else `~/.cache/reactor-mcp-server`.
fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("reactor-mcp-server"))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::{collections::BTreeMap, sync::Arc, time::Duration};

    use serde_json::Map;

    use super::*;

    pub(crate) fn server(name: &str, url: &str) -> ServerEntry {
        ServerEntry {
            name: name.to_owned(),
            file: PathBuf::from("mcp.json"),
            transport: Transport::Http {
                url: url.to_owned(),
                headers: BTreeMap::new(),
            },
            toolset: super::super::config::plain_toolset(name),
            connect_timeout: Duration::from_secs(1),
            call_timeout: Duration::from_secs(1),
            cache_ttl: Duration::ZERO,
            max_message_bytes: 1024,
            namespace: true,
            isolated: false,
            sandbox: None,
            lane: true,
        }
    }

    #[test]
    fn a_written_list_is_read_back_per_entry() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::new(Some(dir.path().to_owned()));
        let a = server("a", "http://h/a");
        assert_eq!(cache.read(&a), None);
        let listing = Listing {
            tools: vec![Tool::new("echo", "Echoes.", Arc::new(Map::new()))],
            ..Listing::default()
        };
        cache.write(&a, &listing);
        assert_eq!(cache.read(&a).unwrap().listing, listing);
        assert_eq!(cache.read(&server("a", "http://h/other")), None);
        assert_eq!(cache.read(&server("b", "http://h/a")), None);
    }

    #[test]
    fn a_name_never_reaches_outside_the_cache_folder() {
        let dir = tempfile::tempdir().unwrap();
        let cache_dir = dir.path().join("a").join("b").join("cache");
        let cache = ToolCache::new(Some(cache_dir.clone()));
        for name in ["../../esc", "/etc/passwd", "..", "a/../../b", "..\\..\\esc"] {
            let entry = server(name, "http://h/a");
            let file = cache.file(&entry).unwrap();
            assert_eq!(file.parent(), Some(cache_dir.as_path()), "{name}");
            let file_name = file.file_name().unwrap().to_str().unwrap();
            assert!(!file_name.contains(".."), "{name}: {file_name}");
            cache.write(&entry, &Listing::default());
            assert!(cache.read(&entry).is_some(), "{name}");
        }
        let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(written.len(), 1, "only `a` in the temporary folder");
        assert!(!dir.path().join("esc").exists());
    }

    #[test]
    fn a_list_is_fresh_within_its_ttl_and_never_with_zero() {
        let cached = |age: u64| CachedListing {
            server: "a".to_owned(),
            read_at: now() - age,
            listing: Listing::default(),
        };
        assert!(cached(0).is_fresh(Duration::from_secs(300)));
        assert!(cached(299).is_fresh(Duration::from_secs(300)));
        assert!(!cached(300).is_fresh(Duration::from_secs(300)));
        assert!(!cached(0).is_fresh(Duration::ZERO));
    }
}
