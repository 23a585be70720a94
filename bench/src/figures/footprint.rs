//! Figure 5: memory. The host's RSS and anonymous memory idle, and their growth over many open
//! sessions, against the plain rmcp server's, measured the same way. Most of an idle RSS is
//! the binary's code pages; anonymous memory (`Anonymous` in `/proc/PID/smaps_rollup`) is what
//! the process allocated.
//!
//! Idle is after start-up, before any request. Then one session is opened and calls `echo`
//! (for the host that opens the plugin, which is not a session's cost), the RSS is the
//! baseline, N more sessions are opened (`initialize` and `notifications/initialized`, over a
//! few connections that are closed afterwards: a session is the server's, not a connection's)
//! and the growth over N is the per-session figure.

use std::time::Duration;

use anyhow::Result;

use super::{Artifacts, Plan};
use crate::{
    churn,
    client::{Endpoint, Mode, Session},
    fixtures::PluginFolder,
    process::Server,
    report::{Report, Table, Verdict, bytes, ratio},
};

/// The target for idle RSS, in bytes.
const MAX_IDLE_RSS: f64 = 20e6;
/// The target for memory per session, in bytes.
const MAX_SESSION_BYTES: f64 = 50e3;
/// How far above plain rmcp's the host's idle anonymous memory may be, in bytes.
const MAX_IDLE_ANONYMOUS_OVER_PLAIN: f64 = 2e6;
/// The target for anonymous memory per idle session, in bytes.
const MAX_SESSION_ANONYMOUS: f64 = 20e3;
/// How long the process is left to settle before its RSS is read.
const SETTLE: Duration = Duration::from_millis(300);

/// One reading of a server's memory, in bytes.
#[derive(Debug, Clone, Copy)]
struct Memory {
    rss: f64,
    anonymous: f64,
}

impl Memory {
    fn of(server: &Server) -> Result<Self> {
        Ok(Self {
            rss: server.rss_bytes()? as f64,
            anonymous: server.anonymous_bytes()? as f64,
        })
    }
}

/// What one server's footprint is.
struct Footprint {
    idle: Memory,
    baseline: Memory,
    loaded: Memory,
}

impl Footprint {
    fn per_session(&self, sessions: usize, of: Figure) -> f64 {
        (of(&self.loaded) - of(&self.baseline)) / sessions as f64
    }
}

/// One of a reading's figures.
type Figure = fn(&Memory) -> f64;

fn rss(memory: &Memory) -> f64 {
    memory.rss
}

fn anonymous(memory: &Memory) -> f64 {
    memory.anonymous
}

pub(super) async fn measure(plan: &Plan, artifacts: &Artifacts, report: &mut Report) -> Result<()> {
    let n = plan.footprint_sessions;
    let folder = PluginFolder::with(&[&artifacts.benchmarks])?;
    let dir = folder.path().to_string_lossy().into_owned();
    let host = Server::start(
        &artifacts.host,
        // Room for the sessions opened here beside the first one (1,000 by default).
        [
            "serve",
            "--port",
            "0",
            "--plugin-dir",
            &dir,
            "--max-sessions",
            "100000",
        ],
    )?;
    let host = footprint(&host, "/mcp?only=benchmarks", n).await?;
    let plain = Server::start(&artifacts.plain, ["--port", "0"])?;
    let plain = footprint(&plain, "/mcp", n).await?;

    let idle_verdict = Verdict {
        target: format!("idle RSS < {}", bytes(MAX_IDLE_RSS)),
        figure: bytes(host.idle.rss),
        met: host.idle.rss < MAX_IDLE_RSS,
    };
    let per_session = host.per_session(n, rss);
    let session_verdict = Verdict {
        target: format!("per-session memory < {}", bytes(MAX_SESSION_BYTES)),
        figure: bytes(per_session),
        met: per_session < MAX_SESSION_BYTES,
    };
    let over_plain = host.idle.anonymous - plain.idle.anonymous;
    let idle_anonymous_verdict = Verdict {
        target: format!(
            "idle anonymous memory within {} of plain rmcp's",
            bytes(MAX_IDLE_ANONYMOUS_OVER_PLAIN)
        ),
        figure: format!("{} over", bytes(over_plain)),
        met: over_plain <= MAX_IDLE_ANONYMOUS_OVER_PLAIN,
    };
    let anonymous_per_session = host.per_session(n, anonymous);
    let session_anonymous_verdict = Verdict {
        target: format!(
            "anonymous memory per idle session <= {}",
            bytes(MAX_SESSION_ANONYMOUS)
        ),
        figure: bytes(anonymous_per_session),
        met: anonymous_per_session <= MAX_SESSION_ANONYMOUS,
    };
    let mut table = Table::new(
        "5. Footprint: RSS and anonymous memory, idle and per open session",
        &[
            "figure",
            "(a) host + plugin",
            "(b) plain rmcp",
            "(a)/(b)",
            "target",
        ],
    );
    let readings: [(&str, Figure); 2] = [("RSS", rss), ("anonymous", anonymous)];
    for (name, of) in readings {
        let is_rss = name == "RSS";
        table.row(vec![
            format!("{name} idle (after start-up)"),
            bytes(of(&host.idle)),
            bytes(of(&plain.idle)),
            ratio(of(&host.idle) / of(&plain.idle)),
            if is_rss {
                idle_verdict.cell()
            } else {
                idle_anonymous_verdict.cell()
            },
        ]);
        table.row(vec![
            format!("{name} with 1 session (plugin open)"),
            bytes(of(&host.baseline)),
            bytes(of(&plain.baseline)),
            ratio(of(&host.baseline) / of(&plain.baseline)),
        ]);
        table.row(vec![
            format!("{name} with {} sessions", n + 1),
            bytes(of(&host.loaded)),
            bytes(of(&plain.loaded)),
            ratio(of(&host.loaded) / of(&plain.loaded)),
        ]);
        let (ours, theirs) = (host.per_session(n, of), plain.per_session(n, of));
        table.row(vec![
            format!("{name} per session"),
            bytes(ours),
            bytes(theirs),
            ratio(ours / theirs),
            if is_rss {
                session_verdict.cell()
            } else {
                session_anonymous_verdict.cell()
            },
        ]);
    }
    table.note(
        "RSS is VmRSS from /proc/PID/status, anonymous memory `Anonymous` from \
         /proc/PID/smaps_rollup; sessions are stateful (SSE mode), opened and left open; MB and \
         kB are decimal (10^6 and 10^3 bytes).",
    );
    report.tables.push(table);
    report.verdicts.push(idle_verdict);
    report.verdicts.push(session_verdict);
    report.verdicts.push(idle_anonymous_verdict);
    report.verdicts.push(session_anonymous_verdict);
    Ok(())
}

async fn footprint(server: &Server, target: &str, sessions: usize) -> Result<Footprint> {
    tokio::time::sleep(SETTLE).await;
    let idle = Memory::of(server)?;
    let endpoint = Endpoint::new(server.addr(), target);
    let mut first = Session::open(&endpoint, Mode::Sse).await?;
    first.call_echo("footprint").await?;
    tokio::time::sleep(SETTLE).await;
    let baseline = Memory::of(server)?;

    churn::open(&endpoint, sessions).await?;
    tokio::time::sleep(SETTLE).await;
    let loaded = Memory::of(server)?;
    first.close().await?;
    Ok(Footprint {
        idle,
        baseline,
        loaded,
    })
}
