//! Tidy: invariants of the source tree, checked as tests (after rust-analyzer's
//! `xtask/src/tidy.rs`), so `cargo test` keeps them without a separate tool.
//!
//! Each check reports every offending file at once, not just the first.

use std::{
    fs,
    path::{Path, PathBuf},
};

use crate::project_root;

/// The folders whose Rust sources the checks cover.
const SOURCE_DIRS: &[&str] = &["host", "plugin-api", "plugins", "xtask", "tests", "bench"];

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let root = project_root();
    let offenders: Vec<String> = rust_files(&root)
        .into_iter()
        .filter(|file| {
            let text = fs::read_to_string(file).unwrap_or_default();
            !starts_with_module_doc(&text)
        })
        .map(|file| {
            file.strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string()
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "{} file(s) do not start with a `//!` module doc (say what the file does and what it \
         leaves to others):\n  {}\n",
        offenders.len(),
        offenders.join("\n  ")
    );
}

/// True when the first non-blank line is an inner doc comment or doc attribute.
fn starts_with_module_doc(text: &str) -> bool {
    text.lines()
        .map(str::trim_start)
        .find(|line| !line.is_empty())
        .is_some_and(|line| {
            line.starts_with("//!") || line.starts_with("/*!") || line.starts_with("#![doc")
        })
}

/// Every `.rs` file under [`SOURCE_DIRS`], sorted, skipping `target` and hidden folders.
fn rust_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending: Vec<PathBuf> = SOURCE_DIRS.iter().map(|dir| root.join(dir)).collect();
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue; // a folder that does not exist yet has nothing to check
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    pending.push(path);
                }
            } else if kind.is_file() && name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn module_doc_detection() {
    assert!(starts_with_module_doc("//! Docs.\nfn main() {}"));
    assert!(starts_with_module_doc(
        "\n  #![doc = include_str!(\"../README.md\")]\n"
    ));
    assert!(!starts_with_module_doc(
        "// A plain comment.\n//! Too late.\n"
    ));
    assert!(!starts_with_module_doc("use std::fs;\n"));
    assert!(!starts_with_module_doc(""));
}

#[test]
fn the_walk_finds_this_file() {
    let files = rust_files(&project_root());
    assert!(
        files.iter().any(|f| f.ends_with("xtask/src/tidy.rs")),
        "{files:?}"
    );
}
