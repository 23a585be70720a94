//! Figure 8: a thousand plugins, what plugins nobody has named cost the host.
//!
//! The folder holds the `benchmarks` library and 999 copies of the `bench-ten-tools` fixture
//! (ten tools of ordinary size each) renamed in their manifests, all stripped of their debug
//! sections (`strip --strip-debug`) as a deployment's libraries are. Measured, against an empty
//! folder, alternating, medians over the repeats:
//!
//! - spawn to the first `GET /toolsets` answer (`--no-watch`), the host's RSS and its anonymous
//!   memory then, and the anonymous memory per plugin;
//! - `list` of the folder (the command, a process of its own);
//! - the first `echo` on `benchmarks` among them over a warm call (figure 4's measurement);
//! - rename to served: `benchmarks` renamed into the folder of a running host until its `echo`
//!   answers, among the 999 and in an empty folder; the difference is what the rescan of the
//!   other 999 costs (the debounce and the opening are in both).

use std::{path::Path, process::Command, time::Instant};

use anyhow::{Context, Result, ensure};

use super::{Artifacts, Plan, lazy, ms, reload};
use crate::{
    client::{Connection, Endpoint},
    fixtures::PluginFolder,
    process::Server,
    report::{Report, Table, Verdict, bytes},
    stats::median,
};

/// The target for spawn to first `/toolsets` answer with the folder full.
const MAX_STARTUP_MS: f64 = 50.0;
/// The target for the host's anonymous memory with the folder full.
const MAX_ANONYMOUS_BYTES: f64 = 20e6;
/// The target for the first call's extra time over a warm call, among the folder's plugins.
const MAX_FIRST_CALL_EXTRA_MS: f64 = 1.0;
/// The target for what rescanning the rest of the folder adds to a one-file change.
const MAX_RESCAN_MS: f64 = 20.0;
/// The name of the ten-tools fixture's plugin.
const TEN_TOOLS: &str = "tentools";

/// One host's start over a folder.
struct Start {
    time: f64,
    rss: f64,
    anonymous: f64,
}

pub(super) async fn measure(plan: &Plan, artifacts: &Artifacts, report: &mut Report) -> Result<()> {
    let count = plan.many_plugins;
    let stripped = tempfile::tempdir()?;
    let ten_tools = strip(&artifacts.ten_tools, stripped.path())?;
    let benchmarks = strip(&artifacts.benchmarks, stripped.path())?;
    let full = PluginFolder::new()?;
    full.add_renamed_copies(&ten_tools, TEN_TOOLS, "tt", count - 1)?;
    let name = reload::file_name(&artifacts.benchmarks);
    std::fs::copy(&benchmarks, full.file(&name))?;
    let empty = PluginFolder::new()?;

    let (mut starts, mut bare, mut lists, mut extras) = (vec![], vec![], vec![], vec![]);
    start(artifacts, &full, count).await?;
    for _ in 0..plan.repeats {
        starts.push(start(artifacts, &full, count).await?);
        bare.push(start(artifacts, &empty, 0).await?);
        lists.push(list(artifacts, &full, count)?);
        let calls = lazy::first_calls(plan, artifacts, &full).await?;
        extras.push(calls.first - calls.warm);
    }
    let library = std::fs::read(&benchmarks)?;
    // The other plugins, which `benchmarks` is renamed in among.
    std::fs::remove_file(full.file(&name))?;
    let served_among = reload::rename_to_served(plan, artifacts, &full, &library, &name).await?;
    let served_alone =
        reload::rename_to_served(plan, artifacts, &PluginFolder::new()?, &library, &name).await?;

    let of = |starts: &[Start], field: fn(&Start) -> f64| {
        median(&starts.iter().map(field).collect::<Vec<_>>())
    };
    let startup = of(&starts, |s| s.time);
    let anonymous = of(&starts, |s| s.anonymous);
    let extra = median(&extras);
    let rescan = median(&served_among) - median(&served_alone);
    let verdicts = [
        Verdict {
            target: format!("start-up with {count} plugins < {MAX_STARTUP_MS} ms"),
            figure: format!("{startup:.1} ms"),
            met: startup < MAX_STARTUP_MS,
        },
        Verdict {
            target: format!(
                "anonymous memory with {count} plugins < {}",
                bytes(MAX_ANONYMOUS_BYTES)
            ),
            figure: bytes(anonymous),
            met: anonymous < MAX_ANONYMOUS_BYTES,
        },
        Verdict {
            target: format!(
                "first call among {count} plugins < {MAX_FIRST_CALL_EXTRA_MS} ms over a warm call"
            ),
            figure: format!("+{extra:.2} ms"),
            met: extra < MAX_FIRST_CALL_EXTRA_MS,
        },
        Verdict {
            target: format!(
                "rescan of {count} plugins after one file changed < {MAX_RESCAN_MS} ms"
            ),
            figure: format!("{rescan:.1} ms"),
            met: rescan < MAX_RESCAN_MS,
        },
    ];

    let mut table = Table::new(
        format!("8. A thousand plugins: {count} in the folder, none named"),
        &["figure", "value", "with no plugin", "target"],
    );
    let anonymous_bare = of(&bare, |s| s.anonymous);
    let rows = [
        (
            "spawn to first GET /toolsets answer".to_owned(),
            format!("{startup:.1} ms"),
            format!("{:.1} ms", of(&bare, |s| s.time)),
            Some(&verdicts[0]),
        ),
        (
            "host RSS then".to_owned(),
            bytes(of(&starts, |s| s.rss)),
            bytes(of(&bare, |s| s.rss)),
            None,
        ),
        (
            "host anonymous memory then".to_owned(),
            bytes(anonymous),
            bytes(anonymous_bare),
            Some(&verdicts[1]),
        ),
        (
            "anonymous memory per plugin".to_owned(),
            bytes((anonymous - anonymous_bare) / count as f64),
            String::new(),
            None,
        ),
        (
            "`list` of the folder".to_owned(),
            format!("{:.1} ms", median(&lists)),
            String::new(),
            None,
        ),
        (
            "first `echo` minus a warm one".to_owned(),
            format!("{extra:.2} ms"),
            String::new(),
            Some(&verdicts[2]),
        ),
        (
            "rename to first answer".to_owned(),
            format!("{:.1} ms", median(&served_among)),
            format!("{:.1} ms", median(&served_alone)),
            None,
        ),
        (
            "what the other plugins add to it (the rescan)".to_owned(),
            format!("{rescan:.1} ms"),
            String::new(),
            Some(&verdicts[3]),
        ),
    ];
    for (figure, value, bare, verdict) in rows {
        table.row(vec![
            figure,
            value,
            bare,
            verdict.map(Verdict::cell).unwrap_or_default(),
        ]);
    }
    table.note(format!(
        "Medians over {} repeat(s), full and empty folder alternating; rename to served over {} \
         renames each. The folder holds `benchmarks` ({}) and {} copies of `bench-ten-tools` \
         ({} each) renamed in their manifests, all stripped of debug sections; the page cache \
         is warm.",
        plan.repeats,
        served_among.len(),
        bytes(std::fs::metadata(&benchmarks)?.len() as f64),
        count - 1,
        bytes(std::fs::metadata(&ten_tools)?.len() as f64),
    ));
    report.tables.push(table);
    report.verdicts.extend(verdicts);
    Ok(())
}

/// `library` without its debug sections, written into `dir`.
fn strip(library: &Path, dir: &Path) -> Result<std::path::PathBuf> {
    let stripped = dir.join(reload::file_name(library));
    let status = Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&stripped)
        .arg(library)
        .status()
        .context("running `strip` (binutils) to make the plugin copies deployment-sized")?;
    ensure!(
        status.success(),
        "strip {} failed: {status}",
        library.display()
    );
    Ok(stripped)
}

/// Spawns the host over `folder` (`--no-watch`), asks `GET /toolsets`, and returns the time
/// from spawn to the answer and the host's memory then.
async fn start(artifacts: &Artifacts, folder: &PluginFolder, expected: usize) -> Result<Start> {
    let dir = folder.path().to_string_lossy().into_owned();
    let server = Server::start(
        &artifacts.host,
        ["serve", "--port", "0", "--no-watch", "--plugin-dir", &dir],
    )?;
    let mut connection = Connection::open(&Endpoint::new(server.addr(), "/mcp")).await?;
    let reply = connection.get("/toolsets").await?;
    let time = ms(server.spawned.elapsed());
    let toolsets = reply.message().context("GET /toolsets")?["toolsets"]
        .as_array()
        .map_or(0, Vec::len);
    ensure!(
        toolsets == expected,
        "GET /toolsets listed {toolsets} toolsets, not {expected}"
    );
    Ok(Start {
        time,
        rss: server.rss_bytes()? as f64,
        anonymous: server.anonymous_bytes()? as f64,
    })
}

/// Milliseconds `reactor-mcp-server list` takes over `folder`, checking it lists `expected`.
fn list(artifacts: &Artifacts, folder: &PluginFolder, expected: usize) -> Result<f64> {
    let started = Instant::now();
    let output = Command::new(&artifacts.host)
        .args(["list", "--json", "--plugin-dir"])
        .arg(folder.path())
        .env_remove("RUST_LOG")
        .output()
        .context("running `reactor-mcp-server list`")?;
    let took = ms(started.elapsed());
    ensure!(
        output.status.success(),
        "`list` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let plugins = listed["plugins"].as_array().map_or(0, Vec::len);
    ensure!(
        plugins == expected,
        "`list` listed {plugins} plugins, not {expected}"
    );
    Ok(took)
}
