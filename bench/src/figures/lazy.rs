//! Figure 4: lazy activation, the first call on a toolset whose library is not open yet
//! against the calls after it.
//!
//! A fresh host per repeat (stateless, so the first request is the call itself), a plugin
//! folder holding `benchmarks`; `/proc/PID/maps` proves the library (its private copy, whose
//! folder is named after the file) is mapped only after the first call. That call copies and
//! opens the library, checks it, instantiates the plugin, builds the tool table and compiles
//! `echo`'s validator.

use std::time::Instant;

use anyhow::{Result, ensure};

use super::{Artifacts, Plan, ms};
use crate::{
    client::{Endpoint, Mode, Session},
    fixtures::PluginFolder,
    process::Server,
    report::{Report, Table, Verdict, ratio},
    stats::median,
};

/// The target for the first call's extra time over a warm call.
const MAX_EXTRA_MS: f64 = 20.0;

const TEXT: &str = "lazy";

pub(super) async fn measure(plan: &Plan, artifacts: &Artifacts, report: &mut Report) -> Result<()> {
    let (mut first, mut second, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..plan.repeats {
        let folder = PluginFolder::with(&[&artifacts.benchmarks])?;
        let calls = first_calls(plan, artifacts, &folder).await?;
        first.push(calls.first);
        second.push(calls.second);
        warm.push(calls.warm);
    }
    let (first, second, warm) = (median(&first), median(&second), median(&warm));
    let extra = first - warm;
    let verdict = Verdict {
        target: format!("first call < {MAX_EXTRA_MS} ms more than a warm call"),
        figure: format!("+{extra:.2} ms"),
        met: extra < MAX_EXTRA_MS,
    };
    let mut table = Table::new(
        "4. Lazy activation: first call on a toolset whose library is not open",
        &["figure", "value", "ratio to warm", "target"],
    );
    table.row(vec![
        "first call (opens the library)".to_owned(),
        format!("{first:.2} ms"),
        ratio(first / warm),
    ]);
    table.row(vec![
        "second call".to_owned(),
        format!("{second:.3} ms"),
        ratio(second / warm),
    ]);
    table.row(vec![
        format!("warm call (median of {})", plan.warm_calls),
        format!("{warm:.3} ms"),
        "1.00".to_owned(),
    ]);
    table.row(vec![
        "first call minus warm call".to_owned(),
        format!("{extra:.2} ms"),
        String::new(),
        verdict.cell(),
    ]);
    table.note(format!(
        "Medians over {} fresh host process(es), stateless (JSON), `?only=benchmarks`; \
         /proc/PID/maps shows the library mapped only after the first call.",
        plan.repeats
    ));
    report.tables.push(table);
    report.verdicts.push(verdict);
    Ok(())
}

/// The times of the first calls on a toolset, in milliseconds.
pub(super) struct FirstCalls {
    /// The first call, which opens the library.
    pub(super) first: f64,
    /// The call after it.
    pub(super) second: f64,
    /// The median of the warm calls after those.
    pub(super) warm: f64,
}

/// Starts a host (stateless) on `folder`, which holds the `benchmarks` library, and times
/// `echo`'s first calls; checks through `/proc/PID/maps` that the first call opened the library.
pub(super) async fn first_calls(
    plan: &Plan,
    artifacts: &Artifacts,
    folder: &PluginFolder,
) -> Result<FirstCalls> {
    let library = folder.file(
        &artifacts
            .benchmarks
            .file_name()
            .unwrap_or_default()
            .to_string_lossy(),
    );
    // The host maps a private copy, in a folder named after the file's tag.
    let library = format!(
        "/{}{}-",
        reactor_mcp_server::internals::build::private_copy::FOLDER_PREFIX,
        reactor_mcp_server::internals::build::private_copy::tag(&library)
    );
    let dir = folder.path().to_string_lossy().into_owned();
    let server = Server::start(
        &artifacts.host,
        [
            "serve",
            "--port",
            "0",
            "--stateless",
            "--no-watch",
            "--plugin-dir",
            &dir,
        ],
    )?;
    let endpoint = Endpoint::new(server.addr(), "/mcp?only=benchmarks");
    let mut session = Session::open(&endpoint, Mode::Json).await?;
    ensure!(
        !server.maps(&library)?,
        "the library was open before the first call"
    );

    let started = Instant::now();
    session.call_echo(TEXT).await?;
    let first = ms(started.elapsed());
    ensure!(
        server.maps(&library)?,
        "the first call did not open the library"
    );

    let started = Instant::now();
    session.call_echo(TEXT).await?;
    let second = ms(started.elapsed());

    let mut calls = Vec::with_capacity(plan.warm_calls);
    for _ in 0..plan.warm_calls {
        let started = Instant::now();
        session.call_echo(TEXT).await?;
        calls.push(ms(started.elapsed()));
    }
    Ok(FirstCalls {
        first,
        second,
        warm: median(&calls),
    })
}
