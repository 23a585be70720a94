//! Building the host and the plugins once per test process, and finding what was built.
//!
//! Artifacts are looked for where `cargo build` puts them: `$CARGO_TARGET_DIR/debug` (or the
//! workspace's `target/debug`). The host binary can come from `REACTOR_MCP_SERVER_BIN` instead,
//! as ripgrep's and DataFusion's tests find theirs from an environment variable first.

use std::{
    env,
    ffi::OsString,
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

/// The environment variable naming a host binary to test instead of building one.
pub const SERVER_BIN_ENV: &str = "REACTOR_MCP_SERVER_BIN";

/// The plugin crates the tests use: the first-party ones, and the conformance test plugin
/// (`tests/conformance`).
pub const PLUGINS: &[&str] = &[
    "sandboxes",
    "benchmarks",
    "sandboxes-datalayer",
    "conformance",
];

/// The fixture plugin crates under `tests/fixtures/`.
pub const FIXTURES: &[&str] = &[
    "fixture-panicky",
    "fixture-dynamic",
    "fixture-nomanifest",
    "fixture-base",
    "fixture-ext-a",
    "fixture-ext-b",
    "fixture-ext-describe",
    "fixture-ext-bridged",
    "fixture-ext-replace",
    "fixture-ext-broken",
    "fixture-ext-unopenable",
    "fixture-context",
    "fixture-library",
    "fixture-printer",
    "fixture-crashy",
    "fixture-sandboxed",
    "fixture-reload",
    "fixture-compat",
    "fixture-logs",
];

/// The workspace's root folder.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the e2e crate lives in the workspace's `tests/` folder")
        .to_owned()
}

/// Cargo's target folder: `$CARGO_TARGET_DIR` (relative to the workspace root), else `target/`.
pub fn target_dir() -> PathBuf {
    match env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => workspace_root().join(dir),
        _ => workspace_root().join("target"),
    }
}

fn artifact_dir() -> PathBuf {
    target_dir().join("debug")
}

/// Builds the host binary, the first-party plugins and the fixtures, once per process.
///
/// Runs `$CARGO build -p reactor-mcp-server -p sandboxes ...` at the workspace root (the host is left out when
/// [`SERVER_BIN_ENV`] names a binary). Panics with cargo's error output if the build fails;
/// every test calling this afterwards panics with the same output, without building again.
pub fn ensure_built() {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(error) = BUILT.get_or_init(build) {
        panic!("{error}");
    }
}

fn build() -> Result<(), String> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(&cargo);
    command.current_dir(workspace_root()).arg("build");
    if env::var_os(SERVER_BIN_ENV).is_none() {
        // The libraries and binaries of every package named, and the embedding example.
        command.args([
            "-p",
            "reactor-mcp-server",
            "--lib",
            "--bins",
            "--example",
            "embed",
        ]);
    }
    for krate in PLUGINS.iter().chain(FIXTURES) {
        command.args(["-p", krate]);
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cargo.to_string_lossy()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "building the host and the test plugins failed ({:?}, {}):\n{}",
            command,
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// The `reactor-mcp-server` binary: `$REACTOR_MCP_SERVER_BIN`, else the one built here.
pub fn host_bin() -> PathBuf {
    ensure_built();
    match env::var_os(SERVER_BIN_ENV) {
        Some(bin) if !bin.is_empty() => PathBuf::from(bin),
        _ => artifact_dir().join(format!("reactor-mcp-server{}", env::consts::EXE_SUFFIX)),
    }
}

/// The embedding example (`host/examples/embed.rs`), built here.
pub fn embed_example_bin() -> PathBuf {
    ensure_built();
    artifact_dir()
        .join("examples")
        .join(format!("embed{}", env::consts::EXE_SUFFIX))
}

/// The file name this platform gives a library called `stem` (`libstem.so` on Linux).
pub fn library_file_name(stem: &str) -> String {
    format!(
        "{}{stem}{}",
        env::consts::DLL_PREFIX,
        env::consts::DLL_SUFFIX
    )
}

/// The library of the cdylib crate `crate_name` built on its own, as an author builds a
/// plugin (in `target/standalone`): not in one build with the host, whose features cargo
/// would otherwise unify into the plugin's dependencies (tokio's `signal`, say).
///
/// # Panics
///
/// If the build fails, with cargo's output.
pub fn standalone_library(crate_name: &str) -> PathBuf {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let target = target_dir().join("standalone");
    let mut command = Command::new(&cargo);
    command
        .current_dir(workspace_root())
        .args(["build", "-p", crate_name, "--target-dir"])
        .arg(&target);
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cargo.to_string_lossy()));
    assert!(
        output.status.success(),
        "building {crate_name} on its own failed ({command:?}):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    target
        .join("debug")
        .join(library_file_name(&crate_name.replace('-', "_")))
}

/// The built library of the cdylib crate `crate_name` (`-` in the name becomes `_`).
pub fn library(crate_name: &str) -> PathBuf {
    ensure_built();
    let path = artifact_dir().join(library_file_name(&crate_name.replace('-', "_")));
    assert!(
        path.is_file(),
        "{} was not built (is `{crate_name}` in PLUGINS or FIXTURES?)",
        path.display()
    );
    path
}
