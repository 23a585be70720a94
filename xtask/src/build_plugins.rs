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
//! With `--release` the installed library is stripped and its debug info is kept beside it, for
//! symbolizing crash reports ([`split_debug_info`]): on Linux `libx.so.debug`, which the
//! library's `.gnu_debuglink` names (`objcopy`); on macOS `libx.dylib.dSYM` (`dsymutil`, then
//! `strip -x`); on Windows the linker already keeps `x.pdb` apart, and it is copied beside. The
//! host's discovery takes only files ending in the library suffix, so these are never scanned.
//! The debug profile installs the library as built, and removes the split debug info a release
//! build left beside it.
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
    let packages: Vec<&str> = chosen.iter().map(|p| p.package.as_str()).collect();
    build_into(&packages, args.release, &plugins_dir)
}

/// Builds the plugin crates `packages` of the workspace (release or debug) and installs each
/// library into `dir` atomically: stripped, its debug info beside it, in release.
pub(crate) fn build_into(packages: &[&str], release: bool, dir: &Path) -> Result<()> {
    let mut build = cargo();
    build.arg("build");
    if release {
        build.arg("--release");
    }
    for package in packages {
        build.args(["-p", package]);
    }
    run_command(&mut build)?;

    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let profile = if release { "release" } else { "debug" };
    let built_dir = target_dir().join(profile);
    for package in packages {
        let file = library_file_name(package);
        let from = built_dir.join(&file);
        let to = dir.join(&file);
        let installed = if release {
            install_stripped(&from, &to)
        } else {
            install(&from, &to).and_then(|()| remove_split_debug_info(&to))
        };
        installed.with_context(|| format!("installing plugin `{package}`"))?;
        eprintln!("plugin {package} ({profile}) -> {}", to.display());
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
    install_with(from, to, |temporary| {
        fs::copy(from, temporary)
            .map(drop)
            .with_context(|| format!("copying {} to {}", from.display(), temporary.display()))
    })
}

/// Installs `from` as [`install`] does, with `write` making the temporary file from it: the
/// temporary file is hidden and does not end in a library suffix, so the host's scan skips it.
fn install_with(from: &Path, to: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    if !from.is_file() {
        bail!(
            "cargo reported success but {} is missing (is the crate-type cdylib?)",
            from.display()
        );
    }
    let temporary = temporary_beside(to)?;
    let installed = write(&temporary).and_then(|()| {
        fs::rename(&temporary, to)
            .with_context(|| format!("renaming {} to {}", temporary.display(), to.display()))
    });
    if installed.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    installed
}

/// `.NAME.PID.tmp` beside `path`: hidden, and not ending in a library suffix.
fn temporary_beside(path: &Path) -> Result<PathBuf> {
    let file_name = path
        .file_name()
        .with_context(|| format!("{} has no file name", path.display()))?;
    Ok(path.with_file_name(format!(
        ".{}.{}.tmp",
        file_name.to_string_lossy(),
        process::id()
    )))
}

/// The file (or, on macOS, the bundle folder) that keeps the debug info of the library named
/// `library`, beside it: `libx.so.debug`, `libx.dylib.dSYM`, `x.pdb`.
pub(crate) fn debug_file_name(library: &str) -> String {
    if cfg!(target_vendor = "apple") {
        format!("{library}.dSYM")
    } else if cfg!(windows) {
        let stem = library.strip_suffix(std::env::consts::DLL_SUFFIX);
        format!("{}.pdb", stem.unwrap_or(library))
    } else {
        format!("{library}.debug")
    }
}

/// Installs the release library `from` as `to` without its debug info, which goes beside `to`
/// ([`debug_file_name`]), installed first so that it is there when the library is.
fn install_stripped(from: &Path, to: &Path) -> Result<()> {
    let debug = to.with_file_name(debug_file_name(&file_name_of(to)?));
    split_debug_info(from, to, &debug)?;
    eprintln!("debug info -> {}", debug.display());
    Ok(())
}

/// Removes the debug info a release build split off beside `library`, if any: it does not
/// belong to the library a debug build installs.
fn remove_split_debug_info(library: &Path) -> Result<()> {
    let debug = library.with_file_name(debug_file_name(&file_name_of(library)?));
    let removed = if debug.is_dir() {
        fs::remove_dir_all(&debug)
    } else {
        fs::remove_file(&debug)
    };
    match removed {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("removing {}", debug.display()))
        }
        _ => Ok(()),
    }
}

/// `path`'s file name as text.
fn file_name_of(path: &Path) -> Result<String> {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .with_context(|| format!("{} has no file name", path.display()))
}

/// Linux (and other ELF systems): `objcopy --only-keep-debug` writes the debug file, then the
/// stripped copy gets a `.gnu_debuglink` naming it (with its CRC), so gdb, `eu-stack` and
/// `addr2line` find it beside the library.
#[cfg(not(any(target_vendor = "apple", windows)))]
fn split_debug_info(from: &Path, to: &Path, debug: &Path) -> Result<()> {
    install_with(from, debug, |temporary| {
        run_tool(objcopy().arg("--only-keep-debug").arg(from).arg(temporary))
    })?;
    install_with(from, to, |temporary| {
        run_tool(&mut strip_command(from, debug, temporary))
    })
}

/// The `objcopy` that strips `from` into `stripped`, linking to `debug`.
#[cfg(not(any(target_vendor = "apple", windows)))]
fn strip_command(from: &Path, debug: &Path, stripped: &Path) -> process::Command {
    let mut link = std::ffi::OsString::from("--add-gnu-debuglink=");
    link.push(debug);
    let mut command = objcopy();
    command
        .args(["--strip-debug", "--strip-unneeded"])
        .arg(link)
        .arg(from)
        .arg(stripped);
    command
}

/// `$OBJCOPY` (for a cross build), else `objcopy`.
#[cfg(not(any(target_vendor = "apple", windows)))]
fn objcopy() -> process::Command {
    process::Command::new(std::env::var_os("OBJCOPY").unwrap_or_else(|| "objcopy".into()))
}

/// macOS: the library's `.dSYM` bundle is made with `dsymutil` from the object files its debug
/// map names (cargo's default there, `split-debuginfo = "unpacked"`, leaves the debug info in
/// them), or copied when cargo made one (`"packed"`); the copy is then stripped of local
/// symbols with `strip -x` (its UUID, which ties it to its `.dSYM`, stays).
#[cfg(target_vendor = "apple")]
fn split_debug_info(from: &Path, to: &Path, debug: &Path) -> Result<()> {
    let built = from.with_file_name(debug_file_name(&file_name_of(from)?));
    if debug.exists() {
        fs::remove_dir_all(debug).with_context(|| format!("removing {}", debug.display()))?;
    }
    if built.is_dir() {
        copy_tree(&built, debug)?;
    } else {
        run_tool(
            process::Command::new("dsymutil")
                .arg(from)
                .arg("-o")
                .arg(debug),
        )?;
    }
    install_with(from, to, |temporary| {
        fs::copy(from, temporary)
            .with_context(|| format!("copying {} to {}", from.display(), temporary.display()))?;
        run_tool(process::Command::new("strip").arg("-x").arg(temporary))
    })
}

/// Copies the folder `from` to `to`, recursively.
#[cfg(target_vendor = "apple")]
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry.with_context(|| format!("reading {}", from.display()))?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target).with_context(|| {
                format!("copying {} to {}", entry.path().display(), target.display())
            })?;
        }
    }
    Ok(())
}

/// Windows: the DLL holds no debug info (the MSVC toolchain's linker writes it to `x.pdb`, and
/// cargo puts that beside the DLL), so the DLL is installed as built and its `.pdb` is copied
/// beside it.
#[cfg(windows)]
fn split_debug_info(from: &Path, to: &Path, debug: &Path) -> Result<()> {
    let built = from.with_file_name(debug_file_name(&file_name_of(from)?));
    if built.is_file() {
        install(&built, debug)?;
    } else {
        eprintln!(
            "no {} beside the DLL: no debug info to keep",
            built.display()
        );
    }
    install(from, to)
}

/// Runs a binary tool quietly; an error names the tool, and says so when it is not installed.
#[cfg(not(windows))]
fn run_tool(command: &mut process::Command) -> Result<()> {
    let shown = crate::display(command);
    let tool = command.get_program().to_string_lossy().into_owned();
    let output = match command.output() {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => bail!(
            "`{tool}` is not installed, and a release plugin is stripped with it ({})",
            install_hint(&tool)
        ),
        Err(error) => return Err(error).with_context(|| format!("could not start `{shown}`")),
    };
    if !output.status.success() {
        bail!(
            "`{shown}` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Where `tool` comes from.
#[cfg(not(windows))]
fn install_hint(tool: &str) -> &'static str {
    match tool {
        "dsymutil" | "strip" if cfg!(target_vendor = "apple") => {
            "it comes with Xcode's command line tools: `xcode-select --install`"
        }
        _ => "it comes with GNU binutils: `apt-get install binutils`, `dnf install binutils`",
    }
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
    fn debug_info_is_named_after_its_library() {
        let library = library_file_name("my-plugin");
        let debug = debug_file_name(&library);
        if cfg!(target_vendor = "apple") {
            assert_eq!(debug, "libmy_plugin.dylib.dSYM");
        } else if cfg!(windows) {
            assert_eq!(debug, "my_plugin.pdb");
        } else {
            assert_eq!(debug, format!("{library}.debug"));
        }
        assert!(
            !debug.ends_with(std::env::consts::DLL_SUFFIX),
            "the host's scan would take {debug}"
        );
    }

    #[cfg(not(any(target_vendor = "apple", windows)))]
    #[test]
    fn the_stripped_copy_links_to_the_debug_file() {
        let command = strip_command(
            Path::new("target/release/libx.so"),
            Path::new("plugins/libx.so.debug"),
            Path::new("plugins/.libx.so.1.tmp"),
        );
        assert_eq!(
            crate::display(&command),
            "objcopy --strip-debug --strip-unneeded --add-gnu-debuglink=plugins/libx.so.debug \
             target/release/libx.so plugins/.libx.so.1.tmp"
        );
    }

    /// Splits this test binary (an ELF file with debug info, as a plugin is) as a release
    /// plugin is split, and reads both halves back with `readelf`.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_release_library_is_stripped_and_its_debug_info_kept_beside() {
        let dir = std::env::temp_dir().join(format!("xtask-split-{}", process::id()));
        fs::create_dir_all(&dir).unwrap();
        let from = std::env::current_exe().unwrap();
        let to = dir.join("libx.so");
        let debug = dir.join("libx.so.debug");
        let result = install_stripped(&from, &to);
        let readelf = |args: &[&str], file: &Path| {
            let output = process::Command::new("readelf")
                .args(args)
                .arg(file)
                .output()
                .unwrap();
            String::from_utf8_lossy(&output.stdout).into_owned()
        };
        let (stripped, kept) = (readelf(&["-S", "-W"], &to), readelf(&["-S", "-W"], &debug));
        let link = readelf(&["--string-dump=.gnu_debuglink"], &to);
        let sizes = [&from, &to].map(|file| fs::metadata(file).unwrap().len());
        let left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        let removed = remove_split_debug_info(&to).and_then(|()| remove_split_debug_info(&to));
        let debug_left = debug.exists();
        fs::remove_dir_all(&dir).unwrap();
        result.unwrap();
        removed.unwrap();
        assert!(!debug_left, "a debug build removes the split debug info");
        assert_eq!(left.len(), 2, "no temporary file is left: {left:?}");
        assert!(!stripped.contains(".debug_line"), "{stripped}");
        assert!(stripped.contains(".gnu_debuglink"), "{stripped}");
        assert!(link.contains("libx.so.debug"), "{link}");
        assert!(kept.contains(".debug_line"), "{kept}");
        assert!(sizes[1] < sizes[0], "{sizes:?}");
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
