//! Figure 6: the scale of the tool table. `tools/list` on a toolset of 1,000 tools (the
//! `bench-many-tools` fixture), the first time (which opens the plugin and builds the table)
//! and later, against `tools/list` on the 4 tools of `benchmarks`; and, in this process, the
//! time `reactor_mcp_server::internals::build::Builder::table` takes to build that table from a cold start.
//!
//! Timed from sending the request to having the whole answer; the answer is parsed only
//! afterwards, to check its length, so client-side JSON parsing is not counted.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, ensure};
use reactor_mcp_server::internals::{
    build::{Builder, ProviderOpener},
    discovery,
    registry::Registry,
    selection::ActiveSet,
};
use serde_json::json;

use super::{Artifacts, Plan, ms};
use crate::{
    client::{Endpoint, Mode, Reply, Session},
    fixtures::PluginFolder,
    process::Server,
    report::{Report, Table, Verdict, bytes, ratio},
    stats::median,
};

/// The fixture's tool count.
const TOOLS: usize = 1000;
/// The target for a later `tools/list` of 1,000 tools.
const MAX_LIST_MS: f64 = 5.0;

/// One toolset's `tools/list` timings.
struct Lists {
    first: f64,
    later: f64,
    tools: usize,
    answer_bytes: usize,
}

pub(super) async fn measure(plan: &Plan, artifacts: &Artifacts, report: &mut Report) -> Result<()> {
    let folder = PluginFolder::with(&[&artifacts.benchmarks, &artifacts.many_tools])?;
    let build_ms = ms(build_in_process(&folder)?);

    let dir = folder.path().to_string_lossy().into_owned();
    let server = Server::start(
        &artifacts.host,
        ["serve", "--port", "0", "--stateless", "--plugin-dir", &dir],
    )?;
    let many = lists(&server, "/mcp?only=manytools", plan.list_repeats).await?;
    let few = lists(&server, "/mcp?only=benchmarks", plan.list_repeats).await?;
    // The host adds its own `list_server_toolsets`.
    ensure!(
        many.tools == TOOLS + 1,
        "tools/list gave {} tools, not {}",
        many.tools,
        TOOLS + 1
    );

    let verdict = Verdict {
        target: format!("tools/list with {TOOLS} tools < {MAX_LIST_MS} ms"),
        figure: format!("{:.2} ms", many.later),
        met: many.later < MAX_LIST_MS,
    };
    let mut table = Table::new(
        "6. Tool table scale: tools/list with 1,000 tools",
        &["figure", "value", "ratio", "target"],
    );
    table.row(vec![
        format!(
            "tools/list, {} tools, later (median of {})",
            many.tools, plan.list_repeats
        ),
        format!("{:.2} ms", many.later),
        format!(
            "{} × the {}-tool list",
            ratio(many.later / few.later),
            few.tools
        ),
        verdict.cell(),
    ]);
    table.row(vec![
        format!(
            "tools/list, {} tools, first (opens the plugin, builds the table)",
            many.tools
        ),
        format!("{:.2} ms", many.first),
        format!("{} × later", ratio(many.first / many.later)),
    ]);
    table.row(vec![
        format!("build the {TOOLS}-tool table in process (Builder::table, cold)"),
        format!("{build_ms:.2} ms"),
        String::new(),
    ]);
    table.row(vec![
        format!("tools/list, {} tools (benchmarks), later", few.tools),
        format!("{:.3} ms", few.later),
        "1.00".to_owned(),
    ]);
    table.row(vec![
        format!("tools/list, {} tools (benchmarks), first", few.tools),
        format!("{:.2} ms", few.first),
        format!("{} × later", ratio(few.first / few.later)),
    ]);
    table.note(format!(
        "Stateless host (JSON answers); the 1,000-tool answer is {}. Each tool has a title, a \
         description and a two-property input schema.",
        bytes(many.answer_bytes as f64)
    ));
    report.tables.push(table);
    report.verdicts.push(verdict);
    Ok(())
}

/// Times the first and later `tools/list` of one URL.
async fn lists(server: &Server, target: &str, repeats: usize) -> Result<Lists> {
    let endpoint = Endpoint::new(server.addr(), target);
    let mut session = Session::open(&endpoint, Mode::Json).await?;
    let (first, reply) = list(&mut session).await?;
    let tools = count(&reply)?;
    let mut later = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let (time, reply) = list(&mut session).await?;
        ensure!(count(&reply)? == tools, "tools/list changed between calls");
        later.push(ms(time));
    }
    Ok(Lists {
        first: ms(first),
        later: median(&later),
        tools,
        answer_bytes: reply.body.len(),
    })
}

async fn list(session: &mut Session) -> Result<(Duration, Reply)> {
    let started = Instant::now();
    let reply = session.request_raw("tools/list", json!({})).await?;
    Ok((started.elapsed(), reply))
}

fn count(reply: &Reply) -> Result<usize> {
    reply.message()?["result"]["tools"]
        .as_array()
        .map(Vec::len)
        .context("tools/list answered without a tool list")
}

/// Discovers `folder` and times building the `manytools` table with the host's `Builder`, from
/// a library not yet open in this process.
fn build_in_process(folder: &PluginFolder) -> Result<Duration> {
    let found = discovery::discover(folder.path(), None)?;
    let builder = Builder::with_opener(
        Arc::new(Registry::new(found.plugins)),
        Arc::new(ProviderOpener::default()),
    );
    let started = Instant::now();
    let table = builder.table(&ActiveSet::from_names(["manytools"]));
    let elapsed = started.elapsed();
    ensure!(
        table.tools().len() == TOOLS,
        "the table holds {} tools, not {TOOLS}",
        table.tools().len()
    );
    Ok(elapsed)
}
