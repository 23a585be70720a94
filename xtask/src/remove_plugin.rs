//! `cargo xtask remove-plugin NAME`: uninstall a plugin from `plugins/` so it stays gone.
//!
//! A plugin is its library in `plugins/` (and the debug info a release build split beside it)
//! and, when it was built here, its crate folder `plugins/NAME/`, from which `build-plugins`
//! and `serve` would build it again. Both go; a server watching the folder drops the plugin on
//! its next scan, and its sessions hear that their lists changed. A crate git tracks comes
//! back with `git checkout -- plugins/NAME`.

use std::{fs, path::Path};

use anyhow::{Context, Result, bail};

use crate::{build_plugins, project_root};

/// Options of `cargo xtask remove-plugin`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The plugin: its crate's package or folder name, or its library's name (`weather` for
    /// `libweather.so`).
    pub(crate) name: String,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let removed = remove(&project_root().join("plugins"), &args.name)?;
    for path in removed {
        eprintln!("removed {path}");
    }
    Ok(())
}

/// Removes the plugin `name` from `plugins_dir`: its library, its split debug info and its
/// crate folder, whichever are there. Returns what it removed; fails naming what is there when
/// none is.
pub(crate) fn remove(plugins_dir: &Path, name: &str) -> Result<Vec<String>> {
    let crates = build_plugins::discover(plugins_dir)?;
    let found = crates
        .iter()
        .find(|p| p.package == name || p.dir.file_name().is_some_and(|dir| dir == name));
    let package = found.map_or(name, |p| p.package.as_str());
    let library = build_plugins::library_file_name(package);
    let mut removed = Vec::new();
    for file in [library.clone(), build_plugins::debug_file_name(&library)] {
        let path = plugins_dir.join(&file);
        let gone = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        match gone {
            Ok(()) => removed.push(path.display().to_string()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(error).with_context(|| format!("removing {}", path.display()));
            }
        }
    }
    if let Some(found) = found {
        fs::remove_dir_all(&found.dir)
            .with_context(|| format!("removing {}", found.dir.display()))?;
        removed.push(format!("{}/ (its crate)", found.dir.display()));
    }
    if removed.is_empty() {
        let known: Vec<&str> = crates.iter().map(|p| p.package.as_str()).collect();
        bail!(
            "no plugin `{name}` in {}: neither a crate folder nor {library} (plugin crates: {})",
            plugins_dir.display(),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        );
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plugins folder with a crate `weather` (built and installed) and a dropped-in library
    /// `libdropped.so` that has no crate.
    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let krate = dir.path().join("weather");
        fs::create_dir_all(krate.join("src")).unwrap();
        fs::write(
            krate.join("Cargo.toml"),
            "[package]\nname = \"weather\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n",
        )
        .unwrap();
        for stem in ["weather", "dropped"] {
            let library = build_plugins::library_file_name(stem);
            fs::write(dir.path().join(&library), b"not a real library").unwrap();
        }
        let debug = build_plugins::debug_file_name(&build_plugins::library_file_name("weather"));
        fs::write(dir.path().join(debug), b"debug info").unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_built_plugin_goes_with_its_crate_and_its_debug_info() {
        let dir = folder();
        let removed = remove(dir.path(), "weather").unwrap();
        assert_eq!(removed.len(), 3, "{removed:?}");
        assert_eq!(
            names(dir.path()),
            [build_plugins::library_file_name("dropped")]
        );
    }

    #[test]
    fn a_dropped_in_library_goes_alone() {
        let dir = folder();
        let removed = remove(dir.path(), "dropped").unwrap();
        assert_eq!(removed.len(), 1, "{removed:?}");
        assert!(dir.path().join("weather").is_dir());
    }

    #[test]
    fn an_unknown_name_is_refused_naming_the_crates() {
        let dir = folder();
        let error = remove(dir.path(), "nothing").unwrap_err().to_string();
        assert!(error.contains("no plugin `nothing`"), "{error}");
        assert!(error.contains("plugin crates: weather"), "{error}");
        assert_eq!(names(dir.path()).len(), 4);
    }
}
