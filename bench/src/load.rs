//! The load generator: N concurrent MCP clients calling `echo`, bounded by a call count and a
//! time limit, with every call's latency kept.
//!
//! Sessions are opened and warmed (one call each) before the clock starts; then every session
//! calls in a loop, one call at a time, until the shared call budget is spent or the time is
//! up. Throughput is completed calls over the wall time of that loop. Only loopback addresses
//! are ever targeted: the servers are the ones this crate starts.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use crate::{
    client::{Endpoint, Mode, Session},
    process, stats,
};

/// How much load to apply.
#[derive(Debug, Clone, Copy)]
pub struct LoadSpec {
    /// Concurrent sessions, each on its own connection.
    pub sessions: usize,
    /// The most calls to make, across all sessions.
    pub max_calls: u64,
    /// The longest the loop may run.
    pub max_time: Duration,
}

/// What a load run measured.
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// Calls completed.
    pub calls: u64,
    /// Wall time of the measured loop.
    pub elapsed: Duration,
    /// Every call's latency, in microseconds, sorted.
    pub latencies_us: Vec<f64>,
    /// The CPU time the server process used during the measured loop, when it was watched.
    pub server_cpu: Option<Duration>,
}

impl LoadResult {
    /// Completed calls per second.
    pub fn calls_per_second(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// The median latency, in microseconds.
    pub fn p50_us(&self) -> f64 {
        stats::percentile(&self.latencies_us, 50.0)
    }

    /// The 99th-percentile latency, in microseconds.
    pub fn p99_us(&self) -> f64 {
        stats::percentile(&self.latencies_us, 99.0)
    }

    /// The server's CPU time per call, in microseconds (`NaN` when it was not watched).
    pub fn cpu_per_call_us(&self) -> f64 {
        self.server_cpu.map_or(f64::NAN, |cpu| {
            cpu.as_secs_f64() * 1e6 / self.calls.max(1) as f64
        })
    }
}

/// The text every call sends and expects back.
const TEXT: &str = "hello from reactor-bench";

/// Runs `spec` against `endpoint`; any failed call fails the run. With `server`, the CPU time
/// of that process during the measured loop is taken too.
pub async fn run(
    endpoint: &Endpoint,
    mode: Mode,
    spec: LoadSpec,
    server: Option<u32>,
) -> Result<LoadResult> {
    if spec.sessions == 0 {
        bail!("a load needs at least one session");
    }
    if !endpoint.addr().ip().is_loopback() {
        bail!(
            "the load generator only targets loopback addresses, not {}",
            endpoint.addr()
        );
    }
    let mut sessions = Vec::with_capacity(spec.sessions);
    for _ in 0..spec.sessions {
        let mut session = Session::open(endpoint, mode).await?;
        session.call_echo(TEXT).await.context("warm-up call")?;
        sessions.push(session);
    }

    let budget = Arc::new(AtomicU64::new(spec.max_calls));
    let cpu_before = server.map(process::cpu_time).transpose()?;
    let started = Instant::now();
    let deadline = started + spec.max_time;
    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|mut session| {
            let budget = Arc::clone(&budget);
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline && take_one(&budget) {
                    let sent = Instant::now();
                    session.call_echo(TEXT).await?;
                    latencies.push(sent.elapsed().as_secs_f64() * 1e6);
                }
                anyhow::Ok((session, latencies))
            })
        })
        .collect();
    let mut latencies_us = Vec::new();
    let mut finished = Vec::with_capacity(tasks.len());
    for task in tasks {
        let (session, mut latencies) = task.await??;
        latencies_us.append(&mut latencies);
        finished.push(session);
    }
    let elapsed = started.elapsed();
    let server_cpu = match (server, cpu_before) {
        (Some(pid), Some(before)) => Some(process::cpu_time(pid)?.saturating_sub(before)),
        _ => None,
    };
    for session in finished {
        session.close().await?;
    }
    latencies_us.sort_by(f64::total_cmp);
    Ok(LoadResult {
        calls: latencies_us.len() as u64,
        elapsed,
        latencies_us,
        server_cpu,
    })
}

/// Takes one call from the budget; false when it is spent.
fn take_one(budget: &AtomicU64) -> bool {
    budget
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
            left.checked_sub(1)
        })
        .is_ok()
}
