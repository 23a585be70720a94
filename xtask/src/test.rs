//! `cargo xtask test`: the one test command, the same on a laptop and in CI (`.ci/run`).
//!
//! In order, stopping at the first failure: `cargo fmt --check`, `cargo clippy` over every
//! target with warnings denied, `build-plugins` (debug, so the end-to-end tests find real
//! plugins in `plugins/`), the MCP server the bridge's tests run (`bridge-server`, whose paths
//! the tests get in their environment), the public API of the plugin crates against their last
//! release (`cargo semver-checks`), the host and a plugin of ABI 0.2.0's commit (for the
//! compatibility tests, in their environment too), the Prometheus client library's parser
//! (`prometheus`, for the metrics tests), then every test of the workspace. The tests run under
//! `cargo nextest` when it is installed (faster, one process per test), plus
//! `cargo test --doc` since nextest skips doctests; with plain `cargo test` otherwise. Then the
//! guard on the call path (`cargo xtask callgrind`: the host's instructions per call against
//! plain rmcp's, held to `callgrind-baseline.txt`). Last,
//! the MCP conformance suite (`cargo xtask conformance`, every run, with the plugin in process
//! and then isolated), unless `--skip-conformance`, and the official Python SDK and MCP Inspector against `reactor-mcp-server stdio`
//! (`cargo xtask clients`), unless `--skip-clients`.

use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::{
    bridge_server, build_plugins, callgrind, cargo, clients, compat, conformance, run_command,
};

/// What `cargo xtask test` runs.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct Args {
    /// Leave out the MCP conformance suite (it needs npm to install Node 22 once).
    #[arg(long)]
    pub(crate) skip_conformance: bool,
    /// Leave out the official stdio clients (they need npm and python3 to install once).
    #[arg(long)]
    pub(crate) skip_clients: bool,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    step("formatting", "run `cargo fmt --all` to fix it", || {
        run_command(cargo().args(["fmt", "--all", "--", "--check"]))
    })?;
    step("lints", "fix the warnings above", || {
        run_command(cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    step("plugins", "the plugin build failed", || {
        build_plugins::run(&build_plugins::Args::default())
    })?;
    let mut bridged = None;
    step(
        "bridge test server",
        "it needs npm and the npm registry once",
        || {
            bridged = Some(bridge_server::install()?);
            Ok(())
        },
    )?;
    step(
        "public API of the plugin crates",
        "a change above breaks semver against the last release: bump the version it needs",
        || compat::semver(&compat::SemverArgs::default()),
    )?;
    step(
        "deployment files",
        "fix the file named above (cargo xtask deploy checks them alone)",
        || crate::deploy::run(&crate::deploy::Args::default()),
    )?;
    let mut prometheus = None;
    step(
        "Prometheus parser",
        "it needs python3 and PyPI once",
        || {
            prometheus = Some(crate::prometheus::install()?);
            Ok(())
        },
    )?;
    let mut old = None;
    step(
        "builds of ABI 0.2.0",
        "its commit must be in this clone's history",
        || {
            old = compat::build()?;
            Ok(())
        },
    )?;
    let tests = |args: &[&str]| {
        let mut command = cargo();
        command.args(args);
        if let Some(bridged) = &bridged {
            bridged.pass_to(&mut command);
        }
        if let Some(old) = &old {
            old.pass_to(&mut command);
        }
        if let Some(prometheus) = &prometheus {
            prometheus.pass_to(&mut command);
        }
        command
    };
    if nextest_available() {
        step("tests (nextest)", "see the failures above", || {
            run_command(&mut tests(&["nextest", "run", "--workspace"]))
        })?;
        step("doctests", "see the failures above", || {
            run_command(cargo().args(["test", "--workspace", "--doc"]))
        })?;
    } else {
        eprintln!("cargo-nextest is not installed; running the tests with cargo test");
        step("tests", "see the failures above", || {
            run_command(&mut tests(&["test", "--workspace"]))
        })?;
    }
    step(
        "call path (callgrind)",
        "the host's instructions per call rose against plain rmcp's: profile the change \
         (BENCHMARKS.md, Method), or lower the baseline if it fell",
        || callgrind::run(&callgrind::Args::default()),
    )?;
    if !args.skip_conformance {
        for (name, isolate) in [("conformance", false), ("conformance, isolated", true)] {
            step(name, "see the scenario results above", || {
                conformance::run(&conformance::Args {
                    runs: Vec::new(),
                    scenarios: Vec::new(),
                    suite: "all".to_owned(),
                    verbose: false,
                    isolate,
                })
            })?;
        }
    }
    if !args.skip_clients {
        step("stdio clients", "see the client's output above", || {
            clients::run(&clients::Args::default())
        })?;
    }
    eprintln!("\nall checks passed");
    Ok(())
}

/// Runs one step under a banner; a failure says which step and what to do.
fn step(name: &str, hint: &str, body: impl FnOnce() -> Result<()>) -> Result<()> {
    eprintln!("\n==> {name}");
    body().with_context(|| format!("step `{name}` failed: {hint}"))
}

fn nextest_available() -> bool {
    let mut probe: Command = cargo();
    probe
        .args(["nextest", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    probe.status().is_ok_and(|status| status.success())
}
