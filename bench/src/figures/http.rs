//! Figure 1: calls of `echo` over HTTP, through (a) the host with the `benchmarks` plugin,
//! (a0) the same host with rmcp answering every request (`--no-hot-path`), (b) a plain rmcp
//! server with `echo` compiled in and (c) a bare axum handler, in both response modes, with 1,
//! 16 and 64 concurrent sessions.
//!
//! The four servers run side by side for one mode; each round loads them in turn at every
//! concurrency (a a0 b c, a a0 b c, ...), and the report gives the median over the rounds of
//! each server's calls/s and latency percentiles, and the median of the per-round ratios.

use std::time::Duration;

use anyhow::{Context, Result};

use super::{Artifacts, Plan};
use crate::{
    client::{Endpoint, Mode},
    fixtures::PluginFolder,
    load::{self, LoadResult, LoadSpec},
    process::Server,
    report::{Report, Table, Verdict, micros, ratio, thousands},
    stats::median,
};

/// The servers compared, in the order they are loaded.
const SERVERS: [&str; 4] = [
    "(a) host + plugin",
    "(a0) host, rmcp path",
    "(b) plain rmcp",
    "(c) axum floor",
];

/// The index of (b), the baseline the host is held to.
const PLAIN: usize = 2;

/// The target for (a)/(b).
const MIN_HOST_RATIO: f64 = 1.0;

pub(super) async fn measure(plan: &Plan, artifacts: &Artifacts, report: &mut Report) -> Result<()> {
    let mut table = Table::new(
        "1. HTTP calls of `echo`: throughput and latency",
        &[
            "mode", "sessions", "server", "calls/s", "p50", "p99", "CPU/call", "ratio", "target",
        ],
    );
    for mode in [Mode::Sse, Mode::Json] {
        let folder = PluginFolder::with(&[&artifacts.benchmarks])?;
        let plugin_dir = folder.path().to_string_lossy().into_owned();
        let mut host_args = vec!["serve", "--port", "0", "--plugin-dir", &plugin_dir];
        let mut plain_args = vec!["--port", "0"];
        let mut floor_args = vec!["--port", "0"];
        match mode {
            Mode::Sse => floor_args.push("--sse"),
            Mode::Json => {
                host_args.push("--stateless");
                plain_args.push("--stateless");
            }
        }
        let mut rmcp_path_args = host_args.clone();
        rmcp_path_args.push("--no-hot-path");
        let servers = [
            Server::start(&artifacts.host, &host_args)?,
            Server::start(&artifacts.host, &rmcp_path_args)?,
            Server::start(&artifacts.plain, &plain_args)?,
            Server::start(&artifacts.floor, &floor_args)?,
        ];
        let endpoints = [
            Endpoint::new(servers[0].addr(), "/mcp?only=benchmarks"),
            Endpoint::new(servers[1].addr(), "/mcp?only=benchmarks"),
            Endpoint::new(servers[2].addr(), "/mcp"),
            Endpoint::new(servers[3].addr(), "/mcp"),
        ];
        for (endpoint, name) in endpoints.iter().zip(SERVERS) {
            let warm_up = LoadSpec {
                sessions: 2,
                max_calls: if plan.quick { 4 } else { 500 },
                max_time: Duration::from_secs(2),
            };
            load::run(endpoint, mode, warm_up, None)
                .await
                .with_context(|| format!("warming up {name} ({mode})"))?;
        }

        // results[server][concurrency] holds one result per round.
        let mut results: Vec<Vec<Vec<LoadResult>>> =
            vec![vec![Vec::new(); plan.concurrency.len()]; SERVERS.len()];
        for _ in 0..plan.rounds {
            for (c, &sessions) in plan.concurrency.iter().enumerate() {
                let spec = LoadSpec {
                    sessions,
                    max_calls: plan.calls_per_session.saturating_mul(sessions as u64),
                    max_time: plan.load_time,
                };
                for (s, endpoint) in endpoints.iter().enumerate() {
                    let pid = Some(servers[s].pid());
                    let result = load::run(endpoint, mode, spec, pid)
                        .await
                        .with_context(|| format!("{} ({mode}, {sessions} sessions)", SERVERS[s]))?;
                    results[s][c].push(result);
                }
            }
        }

        for (c, &sessions) in plan.concurrency.iter().enumerate() {
            let of = |s: usize| &results[s][c];
            let paired = |x: usize, y: usize, figure: fn(&LoadResult) -> f64| {
                let ratios: Vec<f64> = of(x)
                    .iter()
                    .zip(of(y))
                    .map(|(x, y)| figure(x) / figure(y))
                    .collect();
                median(&ratios)
            };
            let host_ratio = paired(0, PLAIN, LoadResult::calls_per_second);
            let rmcp_path_ratio = paired(1, PLAIN, LoadResult::calls_per_second);
            let floor_ratio = paired(PLAIN, 3, LoadResult::calls_per_second);
            let host_cpu = paired(0, PLAIN, LoadResult::cpu_per_call_us);
            let rmcp_path_cpu = paired(1, PLAIN, LoadResult::cpu_per_call_us);
            let floor_cpu = paired(PLAIN, 3, LoadResult::cpu_per_call_us);
            let verdict = Verdict {
                target: format!("(a)/(b) >= {MIN_HOST_RATIO}"),
                // Three decimals, so that 0.895 does not read as a missed 0.90.
                figure: format!("{mode}, {sessions} session(s): (a)/(b) = {host_ratio:.3}"),
                met: host_ratio >= MIN_HOST_RATIO,
            };
            for (s, name) in SERVERS.iter().enumerate() {
                let cps: Vec<f64> = of(s).iter().map(LoadResult::calls_per_second).collect();
                let p50: Vec<f64> = of(s).iter().map(LoadResult::p50_us).collect();
                let p99: Vec<f64> = of(s).iter().map(LoadResult::p99_us).collect();
                let cpu: Vec<f64> = of(s).iter().map(LoadResult::cpu_per_call_us).collect();
                let (ratio_cell, target_cell) = match s {
                    0 => (
                        format!("(a)/(b) {host_ratio:.3}, CPU/call ×{}", ratio(host_cpu)),
                        verdict.cell(),
                    ),
                    1 => (
                        format!(
                            "(a0)/(b) {rmcp_path_ratio:.3}, CPU/call ×{}",
                            ratio(rmcp_path_cpu)
                        ),
                        String::new(),
                    ),
                    PLAIN => (
                        format!(
                            "(b)/(c) {}, CPU/call ×{}",
                            ratio(floor_ratio),
                            ratio(floor_cpu)
                        ),
                        String::new(),
                    ),
                    _ => (String::new(), String::new()),
                };
                table.row(vec![
                    mode.to_string(),
                    sessions.to_string(),
                    (*name).to_owned(),
                    thousands(median(&cps)),
                    micros(median(&p50)),
                    micros(median(&p99)),
                    micros(median(&cpu)),
                    ratio_cell,
                    target_cell,
                ]);
            }
            report.verdicts.push(verdict);
        }
    }
    table.note(format!(
        "Each cell: the median over {} round(s); one load is {} session(s) on as many \
         kept-alive connections, each calling `echo` one call at a time for {:?} (or until {} \
         calls per session); ratios are medians of the per-round ratios.",
        plan.rounds,
        plan.concurrency
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("/"),
        plan.load_time,
        plan.calls_per_session
    ));
    table.note(
        "CPU/call: the server process's CPU time (user + system, all threads, from \
         /proc/PID/stat) during the loop over the calls made; ratios of calls/s and of CPU/call \
         are (a) and (a0) to (b), and (b) to (c).",
    );
    table.note(
        "SSE, stateful: sessions (initialize first), answers as server-sent events; the floor \
         frames its JSON as one event. JSON, stateless: no sessions, JSON answers (the host's \
         and rmcp's `--stateless`).",
    );
    table.note(
        "The load generator runs on the same 2 cores as the server: the figures are what one \
         machine does with both, the same for all four servers. (a0) is the host of the same \
         build with `--no-hot-path`: rmcp answers every request, as before the host answered \
         `tools/call`, `tools/list` and `ping` itself.",
    );
    report.tables.push(table);
    Ok(())
}
