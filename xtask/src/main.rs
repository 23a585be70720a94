//! `cargo xtask`: the project's chores, written in Rust (matklad's xtask pattern).
//!
//! One module per subcommand, each with a `run`:
//! - `build_plugins`: build the plugin crates under `plugins/` and copy their libraries into
//!   `plugins/`, the folder the host scans by default.
//! - `new_plugin`: create a plugin crate from a template that compiles.
//! - `remove_plugin`: remove a plugin from `plugins/`, its library and its crate.
//! - `serve`: release-build the plugins, then run the host.
//! - `test`: the one test command (formatting, lints, plugins, every test).
//! - `bench`: build what the benchmarks measure and run them (the `bench` crate).
//! - `callgrind`: hold the call path to its baseline: instructions per `echo` call under
//!   callgrind, the host against plain rmcp, in the same run.
//! - `bridge_server`: install the third-party MCP server the bridge's end-to-end tests run.
//! - `prometheus`: install the Prometheus parser the metrics tests read `/metrics` with.
//! - `compat`: build the host and a plugin of ABI 0.2.0's commit, for the compatibility tests;
//!   and check the plugin crates' public API against their last release (`semver`).
//! - `conformance`: run the official MCP conformance suite against the `conformance` plugin, in
//!   named runs (suite version and protocol version), each judged against its own baseline
//!   (`conformance-baseline*.txt`).
//!
//! Invariants of the source tree are `#[test]`s in `tidy`, run by `cargo test`; the layer
//! order of `host/src` (`layers`) is one of them, and `cargo xtask tidy` checks it alone.
//!
//! Cargo is called through `$CARGO`, so the toolchain running xtask is the one that builds,
//! and always from the workspace root ([`project_root`]). Plain `cargo build` and
//! `cargo test` work without xtask: it only strings them together.

mod bench;
mod bridge_server;
mod build_plugins;
mod callgrind;
mod clients;
mod compat;
mod conformance;
mod deploy;
mod fleet;
mod layers;
mod new_plugin;
mod npm;
mod prometheus;
mod remove_plugin;
mod serve;
mod test;
#[cfg(test)]
mod tidy;

use std::{
    env,
    ffi::OsString,
    path::{Path, PathBuf},
    process::{Command, ExitCode},
};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

/// The command line: `cargo xtask <task>`.
#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Chores for reactor-mcp-server"
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Build the plugin crates under plugins/ and copy their libraries into plugins/.
    BuildPlugins(build_plugins::Args),
    /// Create a plugin crate (plugins/NAME by default) with one example tool.
    NewPlugin(new_plugin::Args),
    /// Remove a plugin from plugins/: its library and its crate folder, so it is not built again.
    RemovePlugin(remove_plugin::Args),
    /// Release-build the plugins, then run `reactor-mcp-server serve` with them.
    Serve(serve::Args),
    /// Run every check CI runs: formatting, clippy, plugins, all tests, the conformance suite.
    Test(test::Args),
    /// Measure what the plugin layer costs and print every figure with its ratio and target.
    Bench(bench::Args),
    /// Hold the call path to its baseline: instructions per `echo` call under callgrind, the
    /// host's against plain rmcp's, measured in the same run (needs valgrind).
    Callgrind(callgrind::Args),
    /// Run the MCP conformance suite's runs against the `conformance` plugin (needs npm once).
    Conformance(conformance::Args),
    /// Install the MCP server the bridge's end-to-end tests run (needs npm once).
    BridgeServer(bridge_server::Args),
    /// Drive `reactor-mcp-server stdio` with the official Python SDK and the MCP Inspector's
    /// CLI (needs npm and python3 once).
    Clients(clients::Args),
    /// Build the host and a plugin from the commit of ABI 0.2.0, for the compatibility tests.
    Compat(compat::Args),
    /// Check the public API of plugin-abi, reactor-plugin-manifest and reactor-plugin-api against their last
    /// release with cargo-semver-checks (installed once with cargo install).
    Semver(compat::SemverArgs),
    /// Check that every module of host/src imports only from the layers below it.
    Tidy,
    /// Validate the deployment files under deploy/: the Kubernetes manifests against the API
    /// schemas (needs python3 and PyPI once), the HAProxy and nginx configurations when those
    /// are installed.
    Deploy(deploy::Args),
    /// Run the fleet tests alone: three replicas sharing state in Redis, behind HAProxy (needs
    /// Debian's redis-server and haproxy).
    Fleet(fleet::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.task {
        Task::BuildPlugins(args) => build_plugins::run(args),
        Task::NewPlugin(args) => new_plugin::run(args),
        Task::RemovePlugin(args) => remove_plugin::run(args),
        Task::Serve(args) => serve::run(args),
        Task::Test(args) => test::run(args),
        Task::Bench(args) => bench::run(args),
        Task::Callgrind(args) => callgrind::run(args),
        Task::Conformance(args) => conformance::run(args),
        Task::Clients(args) => clients::run(args),
        Task::BridgeServer(args) => bridge_server::run(args),
        Task::Compat(args) => compat::run(args),
        Task::Semver(args) => compat::semver(args),
        Task::Tidy => tidy_layers(),
        Task::Deploy(args) => deploy::run(args),
        Task::Fleet(args) => fleet::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask tidy`: the layer check of `host/src`, every violation named.
fn tidy_layers() -> Result<()> {
    let found = layers::violations(&project_root().join("host/src"));
    for violation in &found {
        eprintln!("{violation}");
    }
    if !found.is_empty() {
        bail!("{} import(s) point up the layer order", found.len());
    }
    eprintln!(
        "host/src: every import points down the layers ({})",
        layers::LAYERS
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(" < ")
    );
    Ok(())
}

/// The workspace root: the parent of this crate's folder.
pub(crate) fn project_root() -> PathBuf {
    let manifest_dir = env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.ends_with("xtask"))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest_dir
        .parent()
        .expect("xtask/ sits in the workspace root")
        .to_path_buf()
}

/// A `cargo` command (`$CARGO`, else `cargo` on the `PATH`) run from the workspace root.
pub(crate) fn cargo() -> Command {
    let program = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut cmd = Command::new(program);
    cmd.current_dir(project_root());
    cmd
}

/// Runs `cmd` to completion with inherited stdio, echoing it to stderr first; an error names
/// the command and how it ended.
pub(crate) fn run_command(cmd: &mut Command) -> Result<()> {
    let shown = display(cmd);
    eprintln!("$ {shown}");
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }
    Ok(())
}

/// `cmd` as a shell-like line, `cargo` for `$CARGO`.
pub(crate) fn display(cmd: &Command) -> String {
    let program = Path::new(cmd.get_program()).file_stem().map_or_else(
        || cmd.get_program().to_string_lossy(),
        |s| s.to_string_lossy(),
    );
    let mut line = program.into_owned();
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

/// Builds the `reactor-mcp-server` binary in the debug profile; where it is.
pub(crate) fn build_debug_server() -> Result<PathBuf> {
    run_command(cargo().args([
        "build",
        "-p",
        "reactor-mcp-server",
        "--bin",
        "reactor-mcp-server",
    ]))?;
    Ok(debug_server())
}

/// Where the debug build of the `reactor-mcp-server` binary is.
pub(crate) fn debug_server() -> PathBuf {
    target_dir()
        .join("debug")
        .join(format!("reactor-mcp-server{}", env::consts::EXE_SUFFIX))
}

/// The folder cargo builds into: `$CARGO_TARGET_DIR` (relative to the workspace root, where
/// xtask runs cargo), else `target/`.
pub(crate) fn target_dir() -> PathBuf {
    let root = project_root();
    match env::var_os("CARGO_TARGET_DIR").or_else(|| env::var_os("CARGO_BUILD_TARGET_DIR")) {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}
