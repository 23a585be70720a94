//! Figure 3: discovery and start-up with many plugins.
//!
//! The folder holds copies of the `benchmarks` library renamed inside their manifests
//! ([`PluginFolder::renamed_copies`]), so each is a distinct plugin. Measured: reading every
//! manifest in this process (`reactor_mcp_server::internals::discovery::discover`, the host's own code), the time from
//! spawning the host to its first `GET /toolsets` answer, and its RSS then; each against the
//! same with one plugin, alternating, medians over the repeats.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use reactor_mcp_server::internals::discovery;

use super::{Artifacts, Plan, ms};
use crate::{
    client::{Connection, Endpoint},
    fixtures::PluginFolder,
    process::Server,
    report::{Report, Table, Verdict, bytes, ratio},
    stats::median,
};

/// The target for spawn to first `/toolsets` answer.
const MAX_STARTUP_MS: f64 = 100.0;

pub(super) async fn measure(plan: &Plan, artifacts: &Artifacts, report: &mut Report) -> Result<()> {
    let count = plan.discovery_plugins;
    let many = PluginFolder::renamed_copies(&artifacts.benchmarks, count)?;
    let one = PluginFolder::renamed_copies(&artifacts.benchmarks, 1)?;

    let mut discovery = (Vec::new(), Vec::new());
    let mut startup = (Vec::new(), Vec::new());
    let mut rss = (Vec::new(), Vec::new());
    // One untimed pass each, so both folders start from a warm page cache.
    discover(&many, count)?;
    discover(&one, 1)?;
    for _ in 0..plan.repeats {
        discovery.0.push(ms(discover(&many, count)?));
        discovery.1.push(ms(discover(&one, 1)?));
        let (time, memory) = start(artifacts, &many, count).await?;
        startup.0.push(ms(time));
        rss.0.push(memory as f64);
        let (time, memory) = start(artifacts, &one, 1).await?;
        startup.1.push(ms(time));
        rss.1.push(memory as f64);
    }

    let mut table = Table::new(
        format!("3. Discovery and start-up with {count} plugins"),
        &["figure", "value", "with 1 plugin", "ratio", "target"],
    );
    let discovery_ms = median(&discovery.0);
    table.row(vec![
        format!("read {count} manifests (discovery, in process)"),
        format!("{discovery_ms:.2} ms"),
        format!("{:.3} ms", median(&discovery.1)),
        ratio(discovery_ms / median(&discovery.1)),
    ]);
    let startup_ms = median(&startup.0);
    let verdict = Verdict {
        target: format!("start-up with {count} plugins < {MAX_STARTUP_MS} ms"),
        figure: format!("{startup_ms:.1} ms"),
        met: startup_ms < MAX_STARTUP_MS,
    };
    table.row(vec![
        "spawn to first GET /toolsets answer".to_owned(),
        format!("{startup_ms:.1} ms"),
        format!("{:.1} ms", median(&startup.1)),
        ratio(startup_ms / median(&startup.1)),
        verdict.cell(),
    ]);
    let rss_many = median(&rss.0);
    table.row(vec![
        "host RSS after that answer".to_owned(),
        bytes(rss_many),
        bytes(median(&rss.1)),
        ratio(rss_many / median(&rss.1)),
    ]);
    table.note(format!(
        "Medians over {} repeat(s), {count} and 1 plugin alternating. Per plugin, discovery \
         costs {:.1} µs. The copies are this build's `benchmarks` library ({}) renamed in its \
         manifest; the page cache is warm.",
        plan.repeats,
        discovery_ms * 1000.0 / count as f64,
        bytes(std::fs::metadata(&artifacts.benchmarks)?.len() as f64),
    ));
    report.tables.push(table);
    report.verdicts.push(verdict);
    Ok(())
}

/// Runs the host's discovery over `folder` and checks it found `expected` plugins.
fn discover(folder: &PluginFolder, expected: usize) -> Result<Duration> {
    let started = Instant::now();
    let found = discovery::discover(folder.path(), None)?;
    let elapsed = started.elapsed();
    ensure!(
        found.plugins.len() == expected,
        "discovery found {} plugins, not {expected} (skipped: {:?})",
        found.plugins.len(),
        found.skipped
    );
    Ok(elapsed)
}

/// Spawns the host over `folder`, asks `GET /toolsets`, and returns the time from spawn to
/// the answer and the host's RSS then.
async fn start(
    artifacts: &Artifacts,
    folder: &PluginFolder,
    expected: usize,
) -> Result<(Duration, u64)> {
    let dir = folder.path().to_string_lossy().into_owned();
    let server = Server::start(
        &artifacts.host,
        ["serve", "--port", "0", "--plugin-dir", &dir],
    )?;
    let mut connection = Connection::open(&Endpoint::new(server.addr(), "/mcp")).await?;
    let reply = connection.get("/toolsets").await?;
    let answered = server.spawned.elapsed();
    let toolsets = reply.message().context("GET /toolsets")?["toolsets"]
        .as_array()
        .map_or(0, Vec::len);
    ensure!(
        toolsets == expected,
        "GET /toolsets listed {toolsets} toolsets, not {expected}"
    );
    Ok((answered, server.rss_bytes()?))
}
