//! `reactor-bench`: measures and prints the benchmark figures (`run`), puts one load on one
//! MCP endpoint (`load`), or opens and closes sessions on one and reports the server's RSS
//! (`sessions`).
//!
//! `cargo xtask bench` builds everything and calls `reactor-bench run`; run by hand, it needs
//! the artifacts already built in `--artifacts` (see `bench::figures::Artifacts`).

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, time::Duration};

use anyhow::{Context, Result, bail};
use bench::{
    churn,
    client::{Endpoint, Mode},
    figures::{self, Artifacts, Plan},
    load::{self, LoadSpec},
    report::{micros, thousands},
};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "reactor-bench", about = "Benchmarks of reactor-mcp-server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure every figure and print the report.
    Run {
        /// Each measurement once, with tiny counts (a smoke test).
        #[arg(long)]
        quick: bool,
        /// The folder holding the built host, baselines and plugins (target/release).
        #[arg(long, value_name = "DIR")]
        artifacts: PathBuf,
        /// Criterion's output folder, to take the ABI figures from.
        #[arg(long, value_name = "DIR")]
        criterion: Option<PathBuf>,
        /// Also write the report as Markdown to this file.
        #[arg(long, value_name = "FILE")]
        markdown: Option<PathBuf>,
    },
    /// Measure figure 7 alone (hot reload: rename to served, memory per replace, calls during
    /// changes) and print it.
    Reload {
        /// Each measurement once, with tiny counts (a smoke test).
        #[arg(long)]
        quick: bool,
        /// The folder holding the built host and plugins (target/release).
        #[arg(long, value_name = "DIR")]
        artifacts: PathBuf,
    },
    /// Measure figures 1 and 5 alone (HTTP calls of `echo`: the host, the host with
    /// `--no-hot-path`, plain rmcp and the axum floor; memory idle and per session) and print
    /// them.
    Http {
        /// Each measurement once, with tiny counts (a smoke test).
        #[arg(long)]
        quick: bool,
        /// The folder holding the built host, baselines and plugins (target/release).
        #[arg(long, value_name = "DIR")]
        artifacts: PathBuf,
        /// Rounds of A B A B (5 by default).
        #[arg(long)]
        rounds: Option<usize>,
    },
    /// Measure figures 3 and 8 alone (start-up with many plugins; a thousand plugins: start-up,
    /// memory, first call, rescan) and print them.
    Plugins {
        /// Each measurement once, with tiny counts (a smoke test).
        #[arg(long)]
        quick: bool,
        /// The folder holding the built host and plugins (target/release).
        #[arg(long, value_name = "DIR")]
        artifacts: PathBuf,
    },
    /// Call `echo` on one endpoint from concurrent sessions and print what it did.
    Load {
        /// The endpoint, `http://127.0.0.1:PORT/PATH[?QUERY]` (loopback only).
        url: String,
        /// The response mode the server uses.
        #[arg(long, value_enum, default_value = "sse")]
        mode: CliMode,
        /// Concurrent sessions.
        #[arg(long, default_value_t = 1)]
        sessions: usize,
        /// The most calls, across sessions.
        #[arg(long, default_value_t = 100_000)]
        calls: u64,
        /// The longest the load runs, in seconds.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// The server's process id, to report its CPU time per call.
        #[arg(long, value_name = "PID")]
        server_pid: Option<u32>,
    },
    /// Open sessions on one endpoint (stateful), close them, and again, printing the server's
    /// RSS after each step.
    Sessions {
        /// The endpoint, `http://127.0.0.1:PORT/PATH[?QUERY]` (loopback only).
        url: String,
        /// The server's process id, to read its RSS.
        #[arg(long, value_name = "PID")]
        server_pid: u32,
        /// Sessions opened per round.
        #[arg(long, default_value_t = 1000)]
        sessions: usize,
        /// Rounds of opening and closing.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// How long the server is left to settle before each reading, in seconds.
        #[arg(long, default_value_t = 1.0)]
        settle: f64,
        /// Leave the sessions open and wait this many seconds for the server to close them (its
        /// idle timeout), instead of ending each with `DELETE`.
        #[arg(long, value_name = "SECONDS")]
        abandon: Option<f64>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum CliMode {
    /// Stateful sessions, SSE answers.
    Sse,
    /// Stateless, JSON answers.
    Json,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run {
            quick,
            artifacts,
            criterion,
            markdown,
        } => {
            let plan = if quick { Plan::quick() } else { Plan::full() };
            let mut artifacts = Artifacts::in_dir(&artifacts)?;
            artifacts.criterion = criterion;
            let report = figures::run(&plan, &artifacts)?;
            println!("{}", report.to_text());
            if let Some(path) = markdown {
                std::fs::write(&path, report.to_markdown())
                    .with_context(|| format!("writing {}", path.display()))?;
                eprintln!("bench: the report is also in {}", path.display());
            }
            Ok(())
        }
        Command::Reload { quick, artifacts } => {
            let plan = if quick { Plan::quick() } else { Plan::full() };
            let report = figures::run_reload(&plan, &Artifacts::in_dir(&artifacts)?)?;
            println!("{}", report.to_text());
            Ok(())
        }
        Command::Http {
            quick,
            artifacts,
            rounds,
        } => {
            let mut plan = if quick { Plan::quick() } else { Plan::full() };
            plan.rounds = rounds.unwrap_or(plan.rounds);
            let report = figures::run_http(&plan, &Artifacts::in_dir(&artifacts)?)?;
            println!("{}", report.to_text());
            Ok(())
        }
        Command::Plugins { quick, artifacts } => {
            let plan = if quick { Plan::quick() } else { Plan::full() };
            let report = figures::run_many_plugins(&plan, &Artifacts::in_dir(&artifacts)?)?;
            println!("{}", report.to_text());
            Ok(())
        }
        Command::Load {
            url,
            mode,
            sessions,
            calls,
            seconds,
            server_pid,
        } => {
            let (addr, target) = split_url(&url)?;
            let mode = match mode {
                CliMode::Sse => Mode::Sse,
                CliMode::Json => Mode::Json,
            };
            let spec = LoadSpec {
                sessions,
                max_calls: calls,
                max_time: Duration::from_secs_f64(seconds),
            };
            let endpoint = Endpoint::new(addr, target);
            let result = tokio::runtime::Runtime::new()?
                .block_on(load::run(&endpoint, mode, spec, server_pid))?;
            println!(
                "{} calls in {:.2} s: {} calls/s, p50 {}, p99 {}, server CPU/call {}",
                result.calls,
                result.elapsed.as_secs_f64(),
                thousands(result.calls_per_second()),
                micros(result.p50_us()),
                micros(result.p99_us()),
                micros(result.cpu_per_call_us())
            );
            Ok(())
        }
        Command::Sessions {
            url,
            server_pid,
            sessions,
            rounds,
            settle,
            abandon,
        } => {
            let (addr, target) = split_url(&url)?;
            let endpoint = Endpoint::new(addr, target);
            let close = abandon.map_or(churn::Close::Delete, |seconds| {
                churn::Close::Abandon(Duration::from_secs_f64(seconds))
            });
            let churn = tokio::runtime::Runtime::new()?.block_on(churn::run(
                &endpoint,
                server_pid,
                sessions,
                rounds,
                close,
                Duration::from_secs_f64(settle),
            ))?;
            let mb = |bytes: u64| bytes as f64 / 1e6;
            println!("RSS before: {:.1} MB", mb(churn.before));
            let mut closed_before = churn.before;
            for (n, round) in churn.rounds.iter().enumerate() {
                let per_session =
                    (round.open as f64 - closed_before as f64) / sessions.max(1) as f64 / 1e3;
                println!(
                    "round {}: {sessions} sessions open {:.1} MB ({per_session:.1} kB each), \
                     closed {:.1} MB",
                    n + 1,
                    mb(round.open),
                    mb(round.closed)
                );
                closed_before = round.closed;
            }
            Ok(())
        }
    }
}

/// `http://ADDR/PATH?QUERY` as the address and the request target.
fn split_url(url: &str) -> Result<(SocketAddr, String)> {
    let Some(rest) = url.strip_prefix("http://") else {
        bail!("`{url}` is not an http:// URL");
    };
    let (authority, target) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let authority = authority.replace("localhost", "127.0.0.1");
    let addr: SocketAddr = authority
        .parse()
        .with_context(|| format!("`{authority}` is not IP:PORT"))?;
    let target = if target.is_empty() { "/" } else { target };
    Ok((addr, target.to_owned()))
}
