//! The eight benchmark figures, each measured by its own module, and the plan of a run.
//!
//! [`run`] measures them in order into a [`Report`]: the ABI crossing first (in this process,
//! before any server runs), then everything over HTTP against server processes started for
//! the purpose ([`crate::process`]). Where two servers are compared, their runs alternate
//! (A B A B ...) and the report gives medians over the rounds, so a slow moment of a shared
//! machine hits both sides alike. [`Plan::quick`] runs each measurement once with tiny counts:
//! a smoke test that keeps the benchmarks from rotting, whose figures mean nothing.

mod abi_crossing;
mod footprint;
mod http;
mod lazy;
mod many_plugins;
mod reload;
mod startup;
mod tool_table;

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{Context, Result, bail};

use crate::report::Report;

/// How much of everything a run does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// A smoke test (debug builds, tiny counts) rather than a measurement.
    pub quick: bool,
    /// Rounds of A B A B for compared figures.
    pub rounds: usize,
    /// How long one HTTP load may run.
    pub load_time: Duration,
    /// The most calls one HTTP load makes, per session.
    pub calls_per_session: u64,
    /// The session counts of the HTTP figure.
    pub concurrency: Vec<usize>,
    /// How many plugins the discovery and start-up figure puts in the folder.
    pub discovery_plugins: usize,
    /// How many plugins the many-plugins figure puts in the folder.
    pub many_plugins: usize,
    /// How many times one-shot figures (start-up, first call) are repeated.
    pub repeats: usize,
    /// Warm calls timed after a first call.
    pub warm_calls: usize,
    /// Sessions opened for the per-session memory figure.
    pub footprint_sessions: usize,
    /// Later `tools/list` calls timed.
    pub list_repeats: usize,
    /// Iterations of each ABI subject per round, when criterion's figures are not used.
    pub abi_iterations: u32,
}

impl Plan {
    /// The measurement: release builds, counts that give stable medians, a few minutes.
    pub fn full() -> Self {
        Self {
            quick: false,
            rounds: 5,
            load_time: Duration::from_millis(1500),
            calls_per_session: 1_000_000,
            concurrency: vec![1, 16, 64],
            discovery_plugins: 200,
            many_plugins: 1000,
            repeats: 5,
            warm_calls: 50,
            footprint_sessions: 1000,
            list_repeats: 50,
            abi_iterations: 20_000,
        }
    }

    /// The smoke test: every measurement once, with tiny counts.
    pub fn quick() -> Self {
        Self {
            quick: true,
            rounds: 1,
            load_time: Duration::from_millis(300),
            calls_per_session: 2,
            concurrency: vec![1, 16, 64],
            discovery_plugins: 10,
            many_plugins: 10,
            repeats: 1,
            warm_calls: 3,
            footprint_sessions: 20,
            list_repeats: 2,
            abi_iterations: 200,
        }
    }
}

/// The built programs and libraries a run measures.
#[derive(Debug, Clone)]
pub struct Artifacts {
    /// The host, `reactor-mcp-server`.
    pub host: PathBuf,
    /// The baseline (b), `plain-rmcp-echo`.
    pub plain: PathBuf,
    /// The floor (c), `axum-floor`.
    pub floor: PathBuf,
    /// The `benchmarks` plugin library.
    pub benchmarks: PathBuf,
    /// The `bench-many-tools` fixture plugin library.
    pub many_tools: PathBuf,
    /// The `bench-ten-tools` fixture plugin library.
    pub ten_tools: PathBuf,
    /// Where criterion wrote the ABI benchmark's estimates, when it ran.
    pub criterion: Option<PathBuf>,
}

impl Artifacts {
    /// The artifacts cargo put in `dir` (`target/release` or `target/debug`).
    pub fn in_dir(dir: &Path) -> Result<Self> {
        let exe = |name: &str| dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        let library = |name: &str| {
            dir.join(format!(
                "{}{name}{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            ))
        };
        let artifacts = Self {
            host: exe("reactor-mcp-server"),
            plain: exe("plain-rmcp-echo"),
            floor: exe("axum-floor"),
            benchmarks: library("benchmarks"),
            many_tools: library("bench_many_tools"),
            ten_tools: library("bench_ten_tools"),
            criterion: None,
        };
        for path in [
            &artifacts.host,
            &artifacts.plain,
            &artifacts.floor,
            &artifacts.benchmarks,
            &artifacts.many_tools,
            &artifacts.ten_tools,
        ] {
            if !path.is_file() {
                bail!(
                    "{} is missing: build with `cargo build -p reactor-mcp-server -p bench -p benchmarks \
                     -p bench-many-tools -p bench-ten-tools` (and --release for a full run), or run \
                     `cargo xtask bench`",
                    path.display()
                );
            }
        }
        Ok(artifacts)
    }
}

/// Measures every figure as `plan` says.
pub fn run(plan: &Plan, artifacts: &Artifacts) -> Result<Report> {
    let mut report = Report {
        header: machine(plan),
        ..Report::default()
    };
    let name = "2, the ABI crossing (in process)";
    progress(name);
    abi_crossing::measure(plan, artifacts, &mut report)
        .with_context(|| format!("figure {name}"))?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let report = &mut report;
        figure("1, HTTP calls", http::measure(plan, artifacts, report)).await?;
        figure(
            "3, discovery and start-up",
            startup::measure(plan, artifacts, report),
        )
        .await?;
        figure("4, lazy activation", lazy::measure(plan, artifacts, report)).await?;
        figure("5, footprint", footprint::measure(plan, artifacts, report)).await?;
        figure(
            "6, tool table scale",
            tool_table::measure(plan, artifacts, report),
        )
        .await?;
        figure("7, hot reload", reload::measure(plan, artifacts, report)).await?;
        figure(
            "8, a thousand plugins",
            many_plugins::measure(plan, artifacts, report),
        )
        .await
    })?;
    // The figures are numbered as in BENCHMARKS.md; they are measured in another order.
    report.tables.sort_by_key(|t| t.title.clone());
    Ok(report)
}

/// Measures figure 7 alone (hot reload), as `plan` says.
pub fn run_reload(plan: &Plan, artifacts: &Artifacts) -> Result<Report> {
    report_of(plan, async |report| {
        figure("7, hot reload", reload::measure(plan, artifacts, report)).await
    })
}

/// Measures figures 1 and 5 alone (HTTP calls of `echo`, memory), as `plan` says.
pub fn run_http(plan: &Plan, artifacts: &Artifacts) -> Result<Report> {
    report_of(plan, async |report| {
        figure("1, HTTP calls", http::measure(plan, artifacts, report)).await?;
        figure("5, footprint", footprint::measure(plan, artifacts, report)).await
    })
}

/// Measures figures 3 and 8 alone (start-up with many plugins, a thousand plugins), as `plan`
/// says.
pub fn run_many_plugins(plan: &Plan, artifacts: &Artifacts) -> Result<Report> {
    report_of(plan, async |report| {
        let startup = startup::measure(plan, artifacts, report);
        figure("3, discovery and start-up", startup).await?;
        let many = many_plugins::measure(plan, artifacts, report);
        figure("8, a thousand plugins", many).await
    })
}

/// A report headed as `plan` says, with the figures `measure` adds to it, measured on a
/// runtime of their own.
fn report_of(plan: &Plan, measure: impl AsyncFnOnce(&mut Report) -> Result<()>) -> Result<Report> {
    let mut report = Report {
        header: machine(plan),
        ..Report::default()
    };
    tokio::runtime::Runtime::new()?.block_on(measure(&mut report))?;
    Ok(report)
}

/// Awaits one figure's measurement, saying so first, and names the figure in its error.
async fn figure(name: &str, measurement: impl Future<Output = Result<()>>) -> Result<()> {
    progress(name);
    measurement.await.with_context(|| format!("figure {name}"))
}

fn progress(name: &str) {
    eprintln!("bench: measuring figure {name}");
}

/// Lines describing the machine and the run.
fn machine(plan: &Plan) -> Vec<String> {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned());
    let mode = if plan.quick {
        "quick (debug builds, tiny counts: a smoke test, the figures are not meaningful)"
    } else {
        "full (release builds)"
    };
    vec![
        format!("Machine: {cores} CPUs (nproc), {cpu}, Linux {kernel}"),
        format!("Run: {mode}"),
    ]
}

/// Milliseconds of a duration.
fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
