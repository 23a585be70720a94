//! Figure 5: memory. The host's RSS idle, and its growth over many open sessions, against the
//! plain rmcp server's, measured the same way.
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
/// How long the process is left to settle before its RSS is read.
const SETTLE: Duration = Duration::from_millis(300);

/// What one server's footprint is.
struct Footprint {
    idle: f64,
    baseline: f64,
    loaded: f64,
}

impl Footprint {
    fn per_session(&self, sessions: usize) -> f64 {
        (self.loaded - self.baseline) / sessions as f64
    }
}

pub(super) async fn measure(plan: &Plan, artifacts: &Artifacts, report: &mut Report) -> Result<()> {
    let n = plan.footprint_sessions;
    let folder = PluginFolder::with(&[&artifacts.benchmarks])?;
    let dir = folder.path().to_string_lossy().into_owned();
    let host = Server::start(
        &artifacts.host,
        ["serve", "--port", "0", "--plugin-dir", &dir],
    )?;
    let host = footprint(&host, "/mcp?only=benchmarks", n).await?;
    let plain = Server::start(&artifacts.plain, ["--port", "0"])?;
    let plain = footprint(&plain, "/mcp", n).await?;

    let idle_verdict = Verdict {
        target: format!("idle RSS < {}", bytes(MAX_IDLE_RSS)),
        figure: bytes(host.idle),
        met: host.idle < MAX_IDLE_RSS,
    };
    let per_session = host.per_session(n);
    let session_verdict = Verdict {
        target: format!("per-session memory < {}", bytes(MAX_SESSION_BYTES)),
        figure: bytes(per_session),
        met: per_session < MAX_SESSION_BYTES,
    };
    let mut table = Table::new(
        "5. Footprint: RSS idle and per open session",
        &[
            "figure",
            "(a) host + plugin",
            "(b) plain rmcp",
            "(a)/(b)",
            "target",
        ],
    );
    table.row(vec![
        "RSS idle (after start-up)".to_owned(),
        bytes(host.idle),
        bytes(plain.idle),
        ratio(host.idle / plain.idle),
        idle_verdict.cell(),
    ]);
    table.row(vec![
        "RSS with 1 session (plugin open)".to_owned(),
        bytes(host.baseline),
        bytes(plain.baseline),
        ratio(host.baseline / plain.baseline),
    ]);
    table.row(vec![
        format!("RSS with {} sessions", n + 1),
        bytes(host.loaded),
        bytes(plain.loaded),
        ratio(host.loaded / plain.loaded),
    ]);
    table.row(vec![
        "per session".to_owned(),
        bytes(per_session),
        bytes(plain.per_session(n)),
        ratio(per_session / plain.per_session(n)),
        session_verdict.cell(),
    ]);
    table.note(
        "RSS is VmRSS from /proc/PID/status; sessions are stateful (SSE mode), opened and left \
         open; MB and kB are decimal (10^6 and 10^3 bytes).",
    );
    report.tables.push(table);
    report.verdicts.push(idle_verdict);
    report.verdicts.push(session_verdict);
    Ok(())
}

async fn footprint(server: &Server, target: &str, sessions: usize) -> Result<Footprint> {
    tokio::time::sleep(SETTLE).await;
    let idle = server.rss_bytes()? as f64;
    let endpoint = Endpoint::new(server.addr(), target);
    let mut first = Session::open(&endpoint, Mode::Sse).await?;
    first.call_echo("footprint").await?;
    tokio::time::sleep(SETTLE).await;
    let baseline = server.rss_bytes()? as f64;

    churn::open(&endpoint, sessions).await?;
    tokio::time::sleep(SETTLE).await;
    let loaded = server.rss_bytes()? as f64;
    first.close().await?;
    Ok(Footprint {
        idle,
        baseline,
        loaded,
    })
}
