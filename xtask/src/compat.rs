//! `cargo xtask compat`: build what the ABI compatibility tests run against, from the commit
//! that introduced ABI 0.2.0 ([`BASELINE`]): that commit's host, and `fixture-compat` (today's
//! source, `tests/fixtures/compat`) built against that commit's plugin-api. The commit is taken
//! with `git archive` into `target/compat/src`, so nothing of it is kept in the tree; its
//! builds go to `target/compat/target` (its own, since its workspace crates share names and
//! file names with ours) and are copied to `target/compat/bin`. `cargo xtask test` runs this
//! before the tests and hands them the two files in [`HOST_ENV`] and [`PLUGIN_ENV`]
//! (`tests/tests/compat.rs`).
//!
//! `cargo xtask semver` checks the public API of `plugin-abi`, `reactor-plugin-manifest` and
//! `reactor-plugin-api` against [`RELEASE_TAG`] with `cargo semver-checks`, installed with
//! `cargo install` into `.tools/semver` on first use. The release's files are taken with
//! `git archive` into `target/semver-baseline`, the crates renamed since given their new names.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context, Result, bail, ensure};

use crate::{cargo, project_root, run_command};

/// The commit that introduced ABI 0.2.0: the oldest build of the line, whose plugins users have.
pub(crate) const BASELINE: &str = "7d97e4bb17660fdd9e300fcf5ff80107ab6dcc97";
/// The tag of the last release of the plugin crates, which semver-checks compares against.
pub(crate) const RELEASE_TAG: &str = "plugin-abi-v0.2.0";
/// The commit [`RELEASE_TAG`] names, for a clone that has no tags.
const RELEASE_COMMIT: &str = "57e446f64949f8f1097849b1f872bfa3603de59d";
/// The variable naming the host binary built from [`BASELINE`].
pub(crate) const HOST_ENV: &str = "REACTOR_COMPAT_OLD_HOST";
/// The variable naming `fixture-compat` built against [`BASELINE`]'s plugin-api.
pub(crate) const PLUGIN_ENV: &str = "REACTOR_COMPAT_OLD_PLUGIN";
/// The crates whose public API is checked, by package name.
const CHECKED: [&str; 3] = [
    "plugin-abi",
    "reactor-plugin-manifest",
    "reactor-plugin-api",
];
/// The plugin crates renamed since [`RELEASE_TAG`]: workspace dependency key (the old package
/// name), new package name, the crate's manifest and its name in code, which stayed.
const RENAMED: [(&str, &str, &str, &str); 3] = [
    (
        "plugin-api",
        "reactor-plugin-api",
        "plugin-api/Cargo.toml",
        "plugin_api",
    ),
    (
        "plugin-api-macros",
        "reactor-plugin-api-macros",
        "plugin-api/macros/Cargo.toml",
        "plugin_api_macros",
    ),
    (
        "plugin-manifest",
        "reactor-plugin-manifest",
        "plugin-api/manifest/Cargo.toml",
        "plugin_manifest",
    ),
];
/// The pinned cargo-semver-checks.
const SEMVER_CHECKS: &str = "0.51.0";

/// Options of `cargo xtask compat` (none yet).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Args {}

/// The builds of [`BASELINE`].
#[derive(Debug)]
pub(crate) struct Built {
    host: PathBuf,
    plugin: PathBuf,
}

impl Built {
    /// Sets [`HOST_ENV`] and [`PLUGIN_ENV`] on `command`.
    pub(crate) fn pass_to(&self, command: &mut Command) {
        command
            .env(HOST_ENV, &self.host)
            .env(PLUGIN_ENV, &self.plugin);
    }
}

pub(crate) fn run(_args: &Args) -> Result<()> {
    let Some(built) = build()? else {
        bail!(
            "{BASELINE} is not in this clone's history (a shallow clone?): run `git fetch --unshallow`"
        );
    };
    eprintln!(
        "{HOST_ENV}={}\n{PLUGIN_ENV}={}",
        built.host.display(),
        built.plugin.display()
    );
    Ok(())
}

/// Builds [`BASELINE`]'s host and `fixture-compat` against its plugin-api, unless they are
/// built already (cargo decides). `None`, saying so loudly, when the commit is not in this
/// clone's history and cannot be fetched (a shallow clone without a remote): the compatibility
/// tests then say they are skipped.
pub(crate) fn build() -> Result<Option<Built>> {
    let root = project_root();
    if !in_history(&root, BASELINE) {
        eprintln!(
            "warning: {BASELINE} (ABI 0.2.0) is not in this clone's history and could not be \
             fetched: the compatibility tests are skipped (clone with the whole history)"
        );
        return Ok(None);
    }
    let compat = root.join("target").join("compat");
    let source = compat.join("src");
    eprintln!(
        "\n==> the host and plugin-api of {BASELINE} (ABI 0.2.0), for the compatibility tests"
    );
    extract(&root, BASELINE, &source)?;
    let fixture = source.join("tests/fixtures/compat");
    copy_dir(&root.join("tests/fixtures/compat"), &fixture)?;

    let target = compat.join("target");
    let build = |args: &[&str]| {
        let mut command = cargo();
        command
            .current_dir(&source)
            .env("CARGO_TARGET_DIR", &target)
            .env_remove("CARGO_BUILD_TARGET_DIR")
            // Nobody debugs these builds: without debug info they build and link faster.
            .env("CARGO_PROFILE_DEV_DEBUG", "0")
            .arg("build")
            .args(args);
        run_command(&mut command)
    };
    build(&["-p", "host", "--bin", "reactor-mcp-server"])?;
    build(&["-p", "fixture-compat", "--no-default-features"])?;

    let bin = compat.join("bin");
    fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    let debug = target.join("debug");
    let host_file = format!("reactor-mcp-server{}", std::env::consts::EXE_SUFFIX);
    let plugin_file = format!(
        "{}fixture_compat{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let built = Built {
        host: bin.join(&host_file),
        plugin: bin.join(&plugin_file),
    };
    for (file, to) in [(&host_file, &built.host), (&plugin_file, &built.plugin)] {
        let from = debug.join(file);
        fs::copy(&from, to)
            .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    }
    Ok(Some(built))
}

/// Whether `commit` is in this clone, after asking the remote for the whole history if it is
/// shallow.
fn in_history(root: &Path, commit: &str) -> bool {
    let has = || {
        Command::new("git")
            .current_dir(root)
            .args(["cat-file", "-e", &format!("{commit}^{{commit}}")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if has() {
        return true;
    }
    let _ = Command::new("git")
        .current_dir(root)
        .args(["fetch", "--quiet", "--unshallow", "--tags"])
        .status();
    has()
}

/// Puts the files of `commit` in `source` with `git archive`, unless they are there.
fn extract(root: &Path, commit: &str, source: &Path) -> Result<()> {
    let marker = source.join(".compat-commit");
    if fs::read_to_string(&marker).is_ok_and(|kept| kept.trim() == commit) {
        return Ok(());
    }
    if source.exists() {
        fs::remove_dir_all(source).with_context(|| format!("removing {}", source.display()))?;
    }
    fs::create_dir_all(source).with_context(|| format!("creating {}", source.display()))?;
    let archive = Command::new("git")
        .current_dir(root)
        .args(["archive", "--format=tar", commit])
        .stdout(Stdio::piped())
        .spawn()
        .context("could not start `git archive` (is git installed?)")?;
    let unpacked = Command::new("tar")
        .current_dir(source)
        .arg("-x")
        .stdin(archive.stdout.context("git archive's output")?)
        .status()
        .context("could not start `tar`")?;
    ensure!(
        unpacked.success(),
        "`git archive {commit} | tar -x` failed ({unpacked}): is the commit in this clone's \
         history? (a shallow clone lacks it: `git fetch --unshallow`)"
    );
    fs::write(&marker, commit).with_context(|| format!("writing {}", marker.display()))?;
    Ok(())
}

/// Copies the files of `from` into `to` (which it creates), leaving out `target/`.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let (path, name) = (entry.path(), entry.file_name());
        if name == "target" {
            continue;
        }
        if entry.file_type()?.is_dir() {
            copy_dir(&path, &to.join(&name))?;
        } else {
            let copied = to.join(&name);
            // Unchanged files keep their times, so cargo does not rebuild the fixture.
            if fs::read(&copied).ok() != Some(fs::read(&path)?) {
                fs::copy(&path, &copied).with_context(|| {
                    format!("copying {} to {}", path.display(), copied.display())
                })?;
            }
        }
    }
    Ok(())
}

/// Options of `cargo xtask semver` (none yet).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct SemverArgs {}

/// Checks the plugin crates' public API against [`RELEASE_TAG`] (or its commit).
pub(crate) fn semver(_args: &SemverArgs) -> Result<()> {
    let root = project_root();
    let baseline = if tag_exists(&root, RELEASE_TAG) {
        RELEASE_TAG
    } else if in_history(&root, RELEASE_COMMIT) {
        eprintln!(
            "no tag {RELEASE_TAG} in this clone: comparing with its commit, {RELEASE_COMMIT}"
        );
        RELEASE_COMMIT
    } else {
        eprintln!(
            "warning: neither the tag {RELEASE_TAG} nor its commit is in this clone's history: \
             the semver check is skipped (clone with the whole history)"
        );
        return Ok(());
    };
    let tool = install_semver_checks(&root)?;
    // The release's files, with the packages renamed since as they are named now, so
    // semver-checks finds each crate on both sides.
    let source = root.join("target").join("semver-baseline");
    extract(&root, baseline, &source)?;
    rename_packages(&source)?;
    let mut check = cargo();
    check
        .env(
            "PATH",
            path_with(tool.parent().expect("a binary sits in a folder")),
        )
        .args(["semver-checks", "check-release", "--baseline-root"])
        .arg(&source);
    for package in CHECKED {
        check.args(["-p", package]);
    }
    run_command(&mut check)
}

/// Gives the crates of [`RENAMED`] in the release's files at `source` their new package names,
/// keeping their names in code; done once (a crate already renamed is left alone).
fn rename_packages(source: &Path) -> Result<()> {
    let workspace = source.join("Cargo.toml");
    let mut root = fs::read_to_string(&workspace)
        .with_context(|| format!("reading {}", workspace.display()))?;
    for (key, package, manifest, lib) in RENAMED {
        let manifest = source.join(manifest);
        let text = fs::read_to_string(&manifest)
            .with_context(|| format!("reading {}", manifest.display()))?;
        let old = format!("name = \"{key}\"\n");
        if !text.contains(&old) {
            continue;
        }
        let mut text = text.replacen(&old, &format!("name = \"{package}\"\n"), 1);
        text = if text.contains("\n[lib]\n") {
            text.replacen("\n[lib]\n", &format!("\n[lib]\nname = \"{lib}\"\n"), 1)
        } else {
            format!("{text}\n[lib]\nname = \"{lib}\"\n")
        };
        fs::write(&manifest, text).with_context(|| format!("writing {}", manifest.display()))?;
        root = root.replacen(
            &format!("\n{key} = {{ path"),
            &format!("\n{key} = {{ package = \"{package}\", path"),
            1,
        );
    }
    fs::write(&workspace, root).with_context(|| format!("writing {}", workspace.display()))
}

/// Whether `tag` names a commit in this clone.
fn tag_exists(root: &Path, tag: &str) -> bool {
    Command::new("git")
        .current_dir(root)
        .args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/tags/{tag}"),
        ])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `PATH` with `dir` first.
fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap_or_default()
}

/// Installs the pinned cargo-semver-checks into `.tools/semver` unless it is there; its path.
fn install_semver_checks(root: &Path) -> Result<PathBuf> {
    let prefix = root.join(".tools").join("semver");
    let tool = prefix.join("bin").join(format!(
        "cargo-semver-checks{}",
        std::env::consts::EXE_SUFFIX
    ));
    let installed = Command::new(&tool)
        .args(["semver-checks", "--version"])
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(SEMVER_CHECKS));
    if installed {
        return Ok(tool);
    }
    eprintln!(
        "\n==> cargo-semver-checks {SEMVER_CHECKS}, once, into {}",
        prefix.display()
    );
    let mut install = cargo();
    install
        .env("CARGO_TARGET_DIR", prefix.join("target"))
        // Its release profile asks for fat LTO in one codegen unit: minutes more to build, for
        // a speed a check of three crates does not need.
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        .args([
            "install",
            "cargo-semver-checks",
            "--locked",
            "--version",
            SEMVER_CHECKS,
        ])
        .arg("--root")
        .arg(&prefix);
    run_command(&mut install)?;
    if !tool.is_file() {
        bail!("cargo install finished but {} is missing", tool.display());
    }
    let _ = fs::remove_dir_all(prefix.join("target"));
    Ok(tool)
}
