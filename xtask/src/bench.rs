//! `cargo xtask bench [--quick]`: build what is measured, then measure and print every figure
//! of the benchmarks with its ratio and target.
//!
//! The full run release-builds the host, the `benchmarks` plugin, the `bench-many-tools`
//! fixture and the `bench` crate (its baselines, `reactor-bench` and the criterion benchmark),
//! runs the criterion benchmark of the ABI crossing (`cargo bench -p bench --bench abi`), then
//! runs `reactor-bench run`, which measures the rest and prints the report, also written as
//! Markdown to `target/bench-report.md` unless `--markdown` says where. `--quick` builds the
//! same crates in the debug profile (usually already built, never a release build), skips
//! criterion, and runs each measurement once with tiny counts: a smoke test, not a figure.
//!
//! What is measured and how lives in the `bench` crate; this module only strings the steps
//! together, so xtask keeps its few dependencies.

use std::{fs, path::PathBuf, process::Command};

use anyhow::Result;

use crate::{build_plugins::library_file_name, cargo, run_command, target_dir};

/// The crates a run needs built.
const CRATES: &[&str] = &[
    "reactor-mcp-server",
    "bench",
    "benchmarks",
    "bench-many-tools",
    "bench-ten-tools",
];

/// Options of `cargo xtask bench`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Args {
    /// Run each measurement once with tiny counts on debug builds (a smoke test, < 1 minute).
    #[arg(long)]
    pub(crate) quick: bool,
    /// Write the report as Markdown to FILE (default for a full run: target/bench-report.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) markdown: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let profile = if args.quick { "debug" } else { "release" };
    let mut build = cargo();
    build.arg("build");
    for krate in CRATES {
        build.args(["-p", krate]);
    }
    if !args.quick {
        // The criterion benchmark is built here too, in the same profile: its dev-dependencies
        // then shape the features of this one build, and `cargo bench` below compiles nothing
        // again (a separate `bench`-profile build would compile the host a second time).
        build.args(["--release", "--lib", "--bins", "--bench", "abi"]);
    }
    run_command(&mut build)?;
    let artifacts = target_dir().join(profile);

    let mut report =
        Command::new(artifacts.join(format!("reactor-bench{}", std::env::consts::EXE_SUFFIX)));
    report.arg("run").arg("--artifacts").arg(&artifacts);
    if args.quick {
        report.arg("--quick");
    } else {
        let criterion = target_dir().join("criterion");
        // Stale estimates must not pass for this run's.
        let _ = fs::remove_dir_all(criterion.join("abi"));
        run_command(
            cargo()
                .args([
                    "bench",
                    "--profile",
                    "release",
                    "-p",
                    "bench",
                    "--bench",
                    "abi",
                ])
                .env("CRITERION_HOME", &criterion)
                .env(
                    "REACTOR_BENCH_PLUGIN",
                    artifacts.join(library_file_name("benchmarks")),
                ),
        )?;
        report.arg("--criterion").arg(criterion);
    }
    let markdown = args
        .markdown
        .clone()
        .or_else(|| (!args.quick).then(|| target_dir().join("bench-report.md")));
    if let Some(markdown) = markdown {
        report.arg("--markdown").arg(markdown);
    }
    run_command(&mut report)
}
