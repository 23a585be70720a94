//! Figure 7: hot reload, what a change of the plugin folder costs a running server.
//!
//! - Rename to served: the `benchmarks` library is written under a temporary name, then renamed
//!   into the folder of a running host (stateless), and `echo` is called until it answers; the
//!   time from the rename to that answer covers the debounce, the scan, the new generation and
//!   the opening of the library's private copy. It is removed again between repeats.
//! - Memory per in-process replace: `benchmarks` is replaced 50 times (written anew and renamed
//!   over itself), each time waiting for the new generation and calling `echo`, which opens the
//!   new copy; the host's RSS before and after gives the growth per replace (the old libraries
//!   stay mapped: abi_stable never unloads one), and its thread count before and after (once
//!   the last old build is stopped) says whether old builds' runtimes end.
//! - Calls during a burst of changes: the HTTP load of figure 1 (16 sessions, JSON) on
//!   `?only=benchmarks`, alone and while another library is added and removed every 150 ms
//!   (longer than the host's 100 ms debounce, so each change makes a generation), alternating;
//!   the ratio of calls/s says what the changes cost the requests.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::{Artifacts, Plan, ms};
use crate::{
    client::{Connection, Endpoint, Mode, Session},
    fixtures::PluginFolder,
    load::{self, LoadSpec},
    process::Server,
    report::{Report, Table, Verdict, ratio},
    stats::median,
};

/// The target for the time from a rename to the first answer of the new plugin.
const MAX_SERVED_MS: f64 = 300.0;

/// How many times the library is replaced for the memory figure.
const REPLACES: usize = 50;

/// How often the burst adds or removes a library.
const CHURN_EVERY: Duration = Duration::from_millis(150);

/// How long one wait for a change may take before the figure fails.
const PATIENCE: Duration = Duration::from_secs(10);

const TEXT: &str = "reload";

pub(super) async fn measure(plan: &Plan, artifacts: &Artifacts, report: &mut Report) -> Result<()> {
    let bytes = std::fs::read(&artifacts.benchmarks)?;
    let name = file_name(&artifacts.benchmarks);
    let served = rename_to_served(plan, artifacts, &PluginFolder::new()?, &bytes, &name).await?;
    let replaced = replaces(plan, artifacts, &bytes, &name).await?;
    let (rss_before, rss_after) = replaced.rss;
    let (calm, churned) = burst(plan, artifacts).await?;

    let served_median = median(&served);
    let served_max = served.iter().copied().fold(0.0, f64::max);
    let verdict = Verdict {
        target: format!("rename to served < {MAX_SERVED_MS} ms (debounce included)"),
        figure: format!("{served_median:.0} ms"),
        met: served_max < MAX_SERVED_MS,
    };
    let replaces = if plan.quick { 2 } else { REPLACES };
    let growth = rss_after.saturating_sub(rss_before) as f64 / replaces as f64;
    let mut table = Table::new(
        "7. Hot reload: rename to served, memory per replace, calls during changes",
        &["figure", "value", "ratio", "target"],
    );
    table.row(vec![
        format!("rename to first answer (median of {})", served.len()),
        format!("{served_median:.1} ms"),
        String::new(),
        verdict.cell(),
    ]);
    table.row(vec![
        "rename to first answer (slowest)".to_owned(),
        format!("{served_max:.1} ms"),
        String::new(),
    ]);
    table.row(vec![
        format!("RSS before / after {replaces} in-process replaces"),
        format!("{:.1} / {:.1} MB", mb(rss_before), mb(rss_after)),
        String::new(),
    ]);
    table.row(vec![
        format!("threads before / after {replaces} in-process replaces"),
        format!("{} / {}", replaced.threads.0, replaced.threads.1),
        String::new(),
    ]);
    table.row(vec![
        "RSS growth per replace".to_owned(),
        format!(
            "{:.0} kB (library file {:.1} MB)",
            growth / 1024.0,
            mb(bytes.len() as u64)
        ),
        String::new(),
    ]);
    table.row(vec![
        "calls/s, no changes".to_owned(),
        format!("{calm:.0}"),
        "1.00".to_owned(),
    ]);
    table.row(vec![
        format!(
            "calls/s, a library added or removed every {} ms",
            CHURN_EVERY.as_millis()
        ),
        format!("{churned:.0}"),
        ratio(churned / calm),
    ]);
    table.note(format!(
        "Stateless host, `?only=benchmarks`. Rename to served: medians over {} renames into a \
         running host's folder, each timed to the first `echo` that answers (the debounce is \
         100 ms). Calls during changes: 16 sessions, JSON, medians over {} alternating rounds.",
        served.len(),
        plan.rounds
    ));
    report.tables.push(table);
    report.verdicts.push(verdict);
    Ok(())
}

/// The file name of `path`, as text.
pub(super) fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// A stateless host serving `folder`.
fn serve(artifacts: &Artifacts, folder: &PluginFolder) -> Result<Server> {
    let dir = folder.path().to_string_lossy().into_owned();
    Server::start(
        &artifacts.host,
        ["serve", "--port", "0", "--stateless", "--plugin-dir", &dir],
    )
}

/// Writes `bytes` as `name` in `folder` the safe way (a temporary name, renamed); returns the
/// moment of the rename.
fn rename_in(folder: &PluginFolder, name: &str, bytes: &[u8]) -> Result<Instant> {
    let temporary = folder.file(&format!(".{name}.tmp"));
    std::fs::write(&temporary, bytes)?;
    let renamed = Instant::now();
    std::fs::rename(&temporary, folder.file(name))?;
    Ok(renamed)
}

/// Calls `echo` until it answers; fails after [`PATIENCE`].
async fn until_echo(endpoint: &Endpoint) -> Result<()> {
    let started = Instant::now();
    loop {
        let mut session = Session::open(endpoint, Mode::Json).await?;
        if session.call_echo(TEXT).await.is_ok() {
            return Ok(());
        }
        if started.elapsed() > PATIENCE {
            bail!("echo did not answer within {PATIENCE:?}");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The generation `GET /toolsets` gives.
async fn generation(endpoint: &Endpoint) -> Result<u64> {
    let reply = Connection::open(endpoint).await?.get("/toolsets").await?;
    let report: Value = serde_json::from_slice(&reply.body).context("/toolsets is not JSON")?;
    report
        .pointer("/generation/number")
        .and_then(Value::as_u64)
        .context("/toolsets gives no generation")
}

/// Waits until the generation passes `after`.
async fn until_generation(endpoint: &Endpoint, after: u64) -> Result<()> {
    let started = Instant::now();
    while generation(endpoint).await? <= after {
        if started.elapsed() > PATIENCE {
            bail!("no generation after {after} within {PATIENCE:?}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// Milliseconds from each rename of `bytes` (the `benchmarks` library) as `name` into
/// `folder`, served by a host, to the first answer of its `echo`.
pub(super) async fn rename_to_served(
    plan: &Plan,
    artifacts: &Artifacts,
    folder: &PluginFolder,
    bytes: &[u8],
    name: &str,
) -> Result<Vec<f64>> {
    let server = serve(artifacts, folder)?;
    let endpoint = Endpoint::new(server.addr(), "/mcp?only=benchmarks");
    let mut served = Vec::new();
    for _ in 0..plan.repeats * 4 {
        let before = generation(&endpoint).await?;
        let renamed = rename_in(folder, name, bytes)?;
        until_echo(&endpoint).await?;
        served.push(ms(renamed.elapsed()));
        let added = generation(&endpoint).await?;
        std::fs::remove_file(folder.file(name))?;
        until_generation(&endpoint, added.max(before + 1)).await?;
    }
    Ok(served)
}

/// The host's RSS and thread count after one call, and after the replaces.
struct Replaced {
    rss: (u64, u64),
    threads: (u64, u64),
}

/// How long the old builds' threads are given to end after the last replace.
const THREADS_SETTLE: Duration = Duration::from_secs(2);

/// Replaces `benchmarks` in a running host, and says what the host held before and after.
async fn replaces(
    plan: &Plan,
    artifacts: &Artifacts,
    bytes: &[u8],
    name: &str,
) -> Result<Replaced> {
    let folder = PluginFolder::with(&[&artifacts.benchmarks])?;
    let server = serve(artifacts, &folder)?;
    let endpoint = Endpoint::new(server.addr(), "/mcp?only=benchmarks");
    until_echo(&endpoint).await?;
    let before = (server.rss_bytes()?, server.threads()?);
    let count = if plan.quick { 2 } else { REPLACES };
    for _ in 0..count {
        let current = generation(&endpoint).await?;
        rename_in(&folder, name, bytes)?;
        until_generation(&endpoint, current).await?;
        until_echo(&endpoint).await?;
    }
    let rss_after = server.rss_bytes()?;
    let start = Instant::now();
    while server.threads()? > before.1 && start.elapsed() < THREADS_SETTLE {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(Replaced {
        rss: (before.0, rss_after),
        threads: (before.1, server.threads()?),
    })
}

/// Median calls/s with no changes, and while a library is added and removed every
/// [`CHURN_EVERY`].
async fn burst(plan: &Plan, artifacts: &Artifacts) -> Result<(f64, f64)> {
    let folder = PluginFolder::with(&[&artifacts.benchmarks])?;
    let server = serve(artifacts, &folder)?;
    let endpoint = Endpoint::new(server.addr(), "/mcp?only=benchmarks");
    let churn_bytes = Arc::new(std::fs::read(&artifacts.many_tools)?);
    let churn_name = file_name(&artifacts.many_tools);
    let spec = LoadSpec {
        sessions: 16,
        max_calls: plan.calls_per_session * 16,
        max_time: plan.load_time,
    };
    let (mut calm, mut churned) = (Vec::new(), Vec::new());
    for _ in 0..plan.rounds {
        calm.push(
            load::run(&endpoint, Mode::Json, spec, None)
                .await?
                .calls_per_second(),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let churning = {
            let stop = Arc::clone(&stop);
            let (dir, bytes, name) = (
                folder.path().to_owned(),
                Arc::clone(&churn_bytes),
                churn_name.clone(),
            );
            std::thread::spawn(move || churn(&dir, &bytes, &name, &stop))
        };
        let result = load::run(&endpoint, Mode::Json, spec, None).await;
        stop.store(true, Ordering::Relaxed);
        churning
            .join()
            .map_err(|_| anyhow::anyhow!("the churn thread panicked"))??;
        churned.push(result?.calls_per_second());
    }
    Ok((median(&calm), median(&churned)))
}

/// Adds and removes `name` in `dir` every [`CHURN_EVERY`] until `stop`.
fn churn(dir: &Path, bytes: &[u8], name: &str, stop: &AtomicBool) -> Result<()> {
    let (temporary, file) = (dir.join(format!(".{name}.tmp")), dir.join(name));
    while !stop.load(Ordering::Relaxed) {
        if file.exists() {
            std::fs::remove_file(&file)?;
        } else {
            std::fs::write(&temporary, bytes)?;
            std::fs::rename(&temporary, &file)?;
        }
        std::thread::sleep(CHURN_EVERY);
    }
    Ok(())
}
