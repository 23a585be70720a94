//! Which files a process has mapped, from `/proc/<pid>/maps` (Linux).
//!
//! `dlopen` maps a library for as long as it stays loaded (and this host never unloads one),
//! while discovery never maps a file. The host opens a private copy of a plugin file, in a
//! folder whose name carries a tag of the original's path (`reactor_mcp_server::internals::build::private_copy`), so a
//! mapped copy counts as its original. So "no file of the plugin folder is mapped after
//! discovery" proves discovery opened no library, and "the library is mapped after activation"
//! proves the check can see one.

use std::path::{Path, PathBuf};

/// The files mapped into process `pid`, sorted, each once.
///
/// A file deleted since it was mapped is reported under its old path.
///
/// # Panics
///
/// If `/proc/<pid>/maps` cannot be read (no such process, or not Linux).
pub fn mapped_files(pid: u32) -> Vec<PathBuf> {
    let maps = format!("/proc/{pid}/maps");
    let text = std::fs::read_to_string(&maps).unwrap_or_else(|e| panic!("cannot read {maps}: {e}"));
    let mut files: Vec<PathBuf> = text.lines().filter_map(mapped_path).collect();
    files.sort();
    files.dedup();
    files
}

/// The files of `dir` (a plugin folder) mapped into process `pid`, themselves or as private
/// copies, sorted, each once.
pub fn mapped_plugin_libraries(pid: u32, dir: &Path) -> Vec<PathBuf> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    let mut files: Vec<PathBuf> = mapped_files(pid)
        .into_iter()
        .filter_map(|file| original(&file, &dir))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// The private copies of files of `dir` mapped into process `pid`, as mapped (not as their
/// originals), sorted, each once; with whether any file of `dir` itself is mapped.
pub fn mapped_private_copies(pid: u32, dir: &Path) -> (Vec<PathBuf>, bool) {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    let mapped = mapped_files(pid);
    let direct = mapped
        .iter()
        .any(|file| file.parent() == Some(dir.as_path()));
    let copies = mapped
        .into_iter()
        .filter(|file| file.parent() != Some(dir.as_path()) && original(file, &dir).is_some())
        .collect();
    (copies, direct)
}

/// The file of `dir` that `mapped` is, or is a private copy of.
fn original(mapped: &Path, dir: &Path) -> Option<PathBuf> {
    let parent = mapped.parent()?;
    if parent == dir {
        return Some(mapped.to_owned());
    }
    let folder = parent.file_name()?.to_str()?;
    let candidate = dir.join(mapped.file_name()?);
    let prefix = format!(
        "{}{}-",
        reactor_mcp_server::internals::build::private_copy::FOLDER_PREFIX,
        reactor_mcp_server::internals::build::private_copy::tag(&candidate)
    );
    folder.starts_with(&prefix).then_some(candidate)
}

/// The path of one maps line: `address perms offset dev inode   path`, where `path` may hold
/// spaces, may be absent, or may be a pseudo-path such as `[heap]`.
fn mapped_path(line: &str) -> Option<PathBuf> {
    let mut fields = line.splitn(6, ' ');
    let path = fields.nth(5)?.trim_start();
    if !path.starts_with('/') {
        return None;
    }
    Some(PathBuf::from(
        path.strip_suffix(" (deleted)").unwrap_or(path),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maps_line_gives_its_path_without_the_deleted_mark() {
        let line =
            "7f1c2a000000-7f1c2a001000 r-xp 00001000 08:01 1234      /tmp/a b/libx.so (deleted)";
        assert_eq!(mapped_path(line), Some(PathBuf::from("/tmp/a b/libx.so")));
    }

    #[test]
    fn anonymous_and_pseudo_mappings_have_no_path() {
        assert_eq!(
            mapped_path("7ffd6a1e0000-7ffd6a201000 rw-p 00000000 00:00 0          [stack]"),
            None
        );
        assert_eq!(
            mapped_path("7f1c2a000000-7f1c2a001000 rw-p 00000000 00:00 0"),
            None
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_its_own_executable_mapped() {
        let exe = std::env::current_exe().unwrap().canonicalize().unwrap();
        assert!(mapped_files(std::process::id()).contains(&exe));
    }
}
