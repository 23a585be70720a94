//! `cargo xtask build-plugins`: build the plugin crates and put their libraries in `plugins/`.
//!
//! A plugin crate is a folder `plugins/<dir>/` whose `Cargo.toml` has `cdylib` in its
//! `[lib] crate-type`. All of them (or those named with `--plugin`) are built by one
//! `cargo build -p a -p b ...`, so cargo shares the work between them, in the debug profile
//! unless `--release` is given. Each library is then copied into `plugins/` itself, the
//! host's default plugin folder (git-ignored), under a temporary name and renamed into
//! place: a running host never sees a half-written file, and a library it has already
//! mapped keeps its old inode instead of being overwritten under it.
//!
//! Discovery and validation of the copied files are the host's job, not this module's.

use std::{
    fs,
    path::{Path, PathBuf},
    process,
};

use anyhow::{Context, Result, bail};

use crate::{cargo, project_root, run_command, target_dir};

/// Options of `cargo xtask build-plugins`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Args {
    /// Build with the release profile (for serving); the debug profile otherwise.
    #[arg(long)]
    pub(crate) release: bool,
    /// Build only this plugin (its package or folder name); repeat for several. All by default.
    #[arg(long = "plugin", value_name = "NAME")]
    pub(crate) plugins: Vec<String>,
}

/// A plugin crate found under `plugins/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PluginCrate {
    /// The package name from its `Cargo.toml`.
    pub(crate) package: String,
    /// Its folder.
    pub(crate) dir: PathBuf,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let plugins_dir = project_root().join("plugins");
    let chosen = select(discover(&plugins_dir)?, &args.plugins)?;
    if chosen.is_empty() {
        eprintln!("no plugin crates under {}", plugins_dir.display());
        return Ok(());
    }

    let mut build = cargo();
    build.arg("build");
    if args.release {
        build.arg("--release");
    }
    for plugin in &chosen {
        build.args(["-p", &plugin.package]);
    }
    run_command(&mut build)?;

    let profile = if args.release { "release" } else { "debug" };
    let built_dir = target_dir().join(profile);
    for plugin in &chosen {
        let file = library_file_name(&plugin.package);
        let from = built_dir.join(&file);
        let to = plugins_dir.join(&file);
        install(&from, &to).with_context(|| format!("installing plugin `{}`", plugin.package))?;
        eprintln!("plugin {} ({profile}) -> {}", plugin.package, to.display());
    }
    Ok(())
}

/// The plugin crates directly under `dir`, sorted by folder name.
pub(crate) fn discover(dir: &Path) -> Result<Vec<PluginCrate>> {
    let entries = fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut found = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let manifest_path = path.join("Cargo.toml");
        if !manifest_path.is_file() {
            continue;
        }
        let text = fs::read_to_string(&manifest_path)
            .with_context(|| format!("reading {}", manifest_path.display()))?;
        let manifest = Manifest::parse(&text);
        if !manifest.cdylib {
            continue;
        }
        let Some(package) = manifest.name else {
            bail!("{} has no `[package] name`", manifest_path.display());
        };
        found.push(PluginCrate { package, dir: path });
    }
    found.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(found)
}

/// Keeps the plugins `wanted` names (by package or folder name), all of them if it is empty.
fn select(all: Vec<PluginCrate>, wanted: &[String]) -> Result<Vec<PluginCrate>> {
    if wanted.is_empty() {
        return Ok(all);
    }
    let matches = |plugin: &PluginCrate, name: &str| {
        plugin.package == name || plugin.dir.file_name().is_some_and(|dir| dir == name)
    };
    if let Some(unknown) = wanted
        .iter()
        .find(|name| !all.iter().any(|p| matches(p, name)))
    {
        let known: Vec<&str> = all.iter().map(|p| p.package.as_str()).collect();
        bail!(
            "no plugin crate named `{unknown}` under plugins/ (there are: {})",
            known.join(", ")
        );
    }
    Ok(all
        .into_iter()
        .filter(|plugin| wanted.iter().any(|name| matches(plugin, name)))
        .collect())
}

/// The file cargo writes for a cdylib package: `lib<name>.so`, `<name>.dll`, `lib<name>.dylib`.
pub(crate) fn library_file_name(package: &str) -> String {
    format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        package.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    )
}

/// Copies `from` to `to` through a temporary file beside `to`, then renames it into place.
fn install(from: &Path, to: &Path) -> Result<()> {
    if !from.is_file() {
        bail!(
            "cargo reported success but {} is missing (is the crate-type cdylib?)",
            from.display()
        );
    }
    let file_name = to.file_name().context("destination has no file name")?;
    // Hidden, and not ending in a library suffix, so the host's scan skips it.
    let temporary = to.with_file_name(format!(
        ".{}.{}.tmp",
        file_name.to_string_lossy(),
        process::id()
    ));
    let copied = fs::copy(from, &temporary)
        .with_context(|| format!("copying {} to {}", from.display(), temporary.display()))
        .and_then(|_| {
            fs::rename(&temporary, to)
                .with_context(|| format!("renaming {} to {}", temporary.display(), to.display()))
        });
    if copied.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    copied
}

/// The two facts xtask needs from a `Cargo.toml`, read by a tiny line parser that
/// understands the layout `cargo new` and `cargo xtask new-plugin` write (`name = "..."`
/// under `[package]`, `crate-type = [...]` under `[lib]`), not all of TOML.
#[derive(Debug, Default, PartialEq, Eq)]
struct Manifest {
    name: Option<String>,
    cdylib: bool,
}

impl Manifest {
    fn parse(text: &str) -> Self {
        let mut manifest = Self::default();
        let mut section = String::new();
        let mut lines = text.lines().map(strip_comment);
        while let Some(line) = lines.next() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line
                    .trim_matches(|c| c == '[' || c == ']')
                    .trim()
                    .to_owned();
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            match (section.as_str(), key.trim()) {
                ("package", "name") => {
                    manifest.name = Some(value.trim().trim_matches('"').to_owned());
                }
                ("lib", "crate-type") => {
                    // The array may span several lines.
                    let mut array = value.to_owned();
                    while !array.contains(']') {
                        match lines.next() {
                            Some(more) => array.push_str(more),
                            None => break,
                        }
                    }
                    manifest.cdylib = array.contains("\"cdylib\"");
                }
                _ => {}
            }
        }
        manifest
    }
}

/// `line` without a trailing `# comment` (a `#` inside a string is kept).
fn strip_comment(line: &str) -> &str {
    let mut in_string = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_string = !in_string,
            '#' if !in_string => return &line[..i],
            _ => {}
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_of_a_plugin_crate() {
        let text = r#"
[package]
name = "my-plugin" # a comment
version = "0.1.0"

[lib]
crate-type = [
    "rlib",
    "cdylib",
]

[dependencies]
name = "not this one"
"#;
        let manifest = Manifest::parse(text);
        assert_eq!(manifest.name.as_deref(), Some("my-plugin"));
        assert!(manifest.cdylib);
    }

    #[test]
    fn a_crate_without_cdylib_is_not_a_plugin() {
        let manifest =
            Manifest::parse("[package]\nname = \"lib-only\"\n[lib]\ncrate-type = [\"rlib\"]\n");
        assert_eq!(manifest.name.as_deref(), Some("lib-only"));
        assert!(!manifest.cdylib);
        assert!(!Manifest::parse("[package]\nname = \"bin\"\n").cdylib);
    }

    #[test]
    fn the_first_party_plugins_are_found() {
        let plugins = discover(&project_root().join("plugins")).unwrap();
        let names: Vec<&str> = plugins.iter().map(|p| p.package.as_str()).collect();
        assert!(names.contains(&"sandboxes"), "{names:?}");
        assert!(names.contains(&"benchmarks"), "{names:?}");
    }

    #[test]
    fn an_unknown_plugin_name_is_an_error() {
        let all = vec![PluginCrate {
            package: "a-b".into(),
            dir: PathBuf::from("plugins/ab"),
        }];
        assert_eq!(select(all.clone(), &["ab".into()]).unwrap(), all);
        assert_eq!(select(all.clone(), &["a-b".into()]).unwrap(), all);
        let err = select(all, &["nope".into()]).unwrap_err().to_string();
        assert!(err.contains("`nope`") && err.contains("a-b"), "{err}");
    }

    #[test]
    fn library_names_follow_the_platform() {
        let name = library_file_name("my-plugin");
        assert!(name.contains("my_plugin"), "{name}");
        if cfg!(target_os = "linux") {
            assert_eq!(name, "libmy_plugin.so");
        }
    }
}
