//! Plugin folders for the benchmarks: copies of built libraries in a temporary folder, and many
//! distinct plugins made from one library by renaming it inside its manifest.
//!
//! Discovery keeps the first plugin of each name, so 200 copies of one library would be one
//! plugin and 199 duplicates. [`renamed_copy`] patches the manifest record in place, replacing
//! the plugin's name at the start of every JSON string (`"benchmarks"`: the plugin name, its
//! toolset and the tools' toolset; tools named after their plugin) with a name of the same
//! length, `bm00000001` and so on: offsets and lengths stay valid, and the copy is a distinct
//! plugin as far as discovery and `/toolsets` can tell.
//! The code's own tool declarations are not patched, so such a copy is for reading, not for
//! opening.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};
use plugin_manifest::section::MAGIC;
use tempfile::TempDir;

/// The name of the `benchmarks` plugin.
const BENCHMARKS: &str = "benchmarks";

/// A temporary plugin folder, deleted on drop.
#[derive(Debug)]
pub struct PluginFolder {
    dir: TempDir,
}

impl PluginFolder {
    /// An empty folder.
    pub fn new() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("reactor-bench-")
            .tempdir()
            .context("creating a temporary plugin folder")?;
        Ok(Self { dir })
    }

    /// A folder holding a copy of each of these libraries, under its own file name.
    pub fn with(libraries: &[&Path]) -> Result<Self> {
        let folder = Self::new()?;
        for library in libraries {
            let name = library
                .file_name()
                .with_context(|| format!("{} has no file name", library.display()))?;
            std::fs::copy(library, folder.path().join(name))
                .with_context(|| format!("copying {}", library.display()))?;
        }
        Ok(folder)
    }

    /// A folder holding `count` distinct plugins made from the `benchmarks` library.
    pub fn renamed_copies(benchmarks: &Path, count: usize) -> Result<Self> {
        let folder = Self::new()?;
        folder.add_renamed_copies(benchmarks, BENCHMARKS, "bm", count)?;
        Ok(folder)
    }

    /// Adds `count` distinct plugins made from `library`, whose plugin is named `plugin`: each
    /// renamed `{prefix}{number}`, numbered from 1 and padded to `plugin`'s length. Each file is
    /// on disk when this returns, so the host measured next does not share the machine with
    /// their write-back (a gigabyte of dirty pages slowed a private copy's write tenfold).
    pub fn add_renamed_copies(
        &self,
        library: &Path,
        plugin: &str,
        prefix: &str,
        count: usize,
    ) -> Result<()> {
        let bytes =
            std::fs::read(library).with_context(|| format!("reading {}", library.display()))?;
        let digits = plugin.len().saturating_sub(prefix.len());
        for i in 1..=count {
            let name = format!("{prefix}{i:0digits$}");
            let copy = renamed_copy(&bytes, plugin, &name)?;
            let file = self.path().join(format!(
                "{}{name}{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            ));
            write_through(&file, &copy)?;
        }
        Ok(())
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The path of a file in it.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path().join(name)
    }
}

/// Writes `bytes` to a new `file` and waits until they are on disk.
fn write_through(file: &Path, bytes: &[u8]) -> Result<()> {
    let written = std::fs::File::create(file).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_data()
    });
    written.with_context(|| format!("writing {}", file.display()))
}

/// `library` (the bytes of the plugin `plugin`) with the plugin, its toolset and the names
/// starting with the plugin's renamed to `name`, which must be as long as `plugin`.
pub fn renamed_copy(library: &[u8], plugin: &str, name: &str) -> Result<Vec<u8>> {
    if name.len() != plugin.len() {
        bail!(
            "`{name}` must be {} bytes long, as `{plugin}` is",
            plugin.len()
        );
    }
    let json = manifest_range(library).context("the library holds no manifest record")?;
    let mut copy = library.to_vec();
    let (from, to) = (format!("\"{plugin}"), format!("\"{name}"));
    let mut patched = 0;
    let mut at = json.start;
    while let Some(found) = find(&copy[at..json.end], from.as_bytes()) {
        let begin = at + found;
        copy[begin..begin + from.len()].copy_from_slice(to.as_bytes());
        at = begin + from.len();
        patched += 1;
    }
    if patched == 0 {
        bail!("the manifest does not name `{plugin}`: is this that plugin's library?");
    }
    Ok(copy)
}

/// Where the JSON of the library's manifest record is: the first [`MAGIC`] followed by a length
/// that fits and a JSON object (the magic bytes also occur in plugin-api's own code).
fn manifest_range(library: &[u8]) -> Option<std::ops::Range<usize>> {
    let mut from = 0;
    while let Some(found) = find(&library[from..], &MAGIC) {
        let length_at = from + found + MAGIC.len();
        from = length_at;
        let Some(length) = library.get(length_at..length_at + 4) else {
            continue;
        };
        let length = u32::from_le_bytes([length[0], length[1], length[2], length[3]]) as usize;
        let start = length_at + 4;
        let Some(end) = start.checked_add(length) else {
            continue;
        };
        if end <= library.len() && library[start..end].starts_with(b"{") {
            return Some(start..end);
        }
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn library(json: &str) -> Vec<u8> {
        let mut bytes = b"\x7fELF...code...".to_vec();
        bytes.extend(plugin_manifest::section::MAGIC);
        bytes.extend(b"\xff\xff\xff\xff...the magic in code...");
        bytes.extend(plugin_manifest::section::encode(json));
        bytes.extend(b"...\"benchmarks\" elsewhere...");
        bytes
    }

    #[test]
    fn only_the_manifest_is_renamed_and_lengths_are_kept() {
        let bytes = library(r#"{"name":"benchmarks","toolsets":[{"name":"benchmarks"}]}"#);
        let copy = renamed_copy(&bytes, BENCHMARKS, "bm00000001").unwrap();
        assert_eq!(copy.len(), bytes.len());
        let text = String::from_utf8_lossy(&copy);
        assert!(text.contains(r#"{"name":"bm00000001","toolsets":[{"name":"bm00000001"}]}"#));
        assert!(text.contains("\"benchmarks\" elsewhere"), "{text}");
    }

    #[test]
    fn a_name_of_another_length_or_another_plugin_is_refused() {
        let bytes = library(r#"{"name":"other"}"#);
        assert!(renamed_copy(&bytes, BENCHMARKS, "bm1").is_err());
        assert!(renamed_copy(&bytes, BENCHMARKS, "bm00000001").is_err());
    }
}
