//! Figure 2: the cost of crossing the ABI, and of argument validation.
//!
//! The figures come from criterion (`benches/abi.rs`, run by `cargo xtask bench` before this)
//! when its estimates are there; otherwise, as in the quick mode, from plain timing loops over
//! the same [`Subjects`], interleaved round by round, medians over the rounds.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use super::{Artifacts, Plan};
use crate::{
    abi::{Subjects, time_per_call},
    report::{Report, Table, micros, ratio},
    stats::median,
};

/// The benchmarks, as criterion names them (`abi/<id>`), with what they measure.
const BENCHMARKS: [(&str, &str); 4] = [
    ("direct_fn", "`echo` called directly (the function alone)"),
    (
        "direct_json",
        "`echo` called directly, with the JSON work around it",
    ),
    (
        "handler_table",
        "`echo` through the handler table (LoadedTool::call_json)",
    ),
    ("validate", "argument validation of `echo`'s arguments"),
];

pub(super) fn measure(plan: &Plan, artifacts: &Artifacts, report: &mut Report) -> Result<()> {
    let (nanos, source) = match artifacts.criterion.as_deref().map(from_criterion) {
        Some(Ok(nanos)) => (nanos, "criterion (median estimate)".to_owned()),
        other => {
            if let Some(Err(error)) = other {
                eprintln!("bench: criterion's estimates are unusable ({error:#}); timing here");
            }
            let nanos = timed_here(plan, &artifacts.benchmarks)?;
            let source = format!(
                "timing loops in this process ({} round(s) of {} calls each, interleaved)",
                plan.rounds, plan.abi_iterations
            );
            (nanos, source)
        }
    };
    let direct = nanos[1];
    let mut table = Table::new(
        "2. The cost of crossing the ABI",
        &["figure", "time per call", "ratio to direct + JSON"],
    );
    for ((_, what), ns) in BENCHMARKS.iter().zip(nanos) {
        table.row(vec![
            (*what).to_owned(),
            micros(ns / 1000.0),
            ratio(ns / direct),
        ]);
    }
    table.row(vec![
        "crossing cost: handler table minus direct + JSON".to_owned(),
        micros((nanos[2] - direct) / 1000.0),
        String::new(),
    ]);
    table.note(format!("Source: {source}."));
    table.note(
        "The handler table's call goes through the sabi_trait object into the plugin, runs \
         `echo` (an `inline` tool) on the calling thread and returns through an FfiFuture, awaited on a \
         current-thread runtime; the direct call parses the same arguments, calls the same \
         function and serialises and parses its result.",
    );
    report.tables.push(table);
    Ok(())
}

/// Criterion's median estimates, in nanoseconds, in [`BENCHMARKS`] order.
fn from_criterion(dir: &Path) -> Result<[f64; 4]> {
    let mut nanos = [0.0; 4];
    for ((id, _), slot) in BENCHMARKS.iter().zip(&mut nanos) {
        let path = dir.join("abi").join(id).join("new").join("estimates.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let estimates: Value = serde_json::from_str(&text)?;
        *slot = estimates["median"]["point_estimate"]
            .as_f64()
            .with_context(|| format!("no median in {}", path.display()))?;
    }
    Ok(nanos)
}

/// Medians of interleaved timing loops, in nanoseconds.
fn timed_here(plan: &Plan, library: &Path) -> Result<[f64; 4]> {
    let subjects = Subjects::new(library)?;
    subjects.self_check()?;
    let n = plan.abi_iterations;
    let mut rounds: [Vec<f64>; 4] = Default::default();
    for _ in 0..plan.rounds {
        let times = [
            time_per_call(n, || subjects.direct_fn()),
            time_per_call(n, || subjects.direct_json()),
            time_per_call(n, || subjects.handler_table()),
            time_per_call(n, || subjects.validate()),
        ];
        for (round, time) in rounds.iter_mut().zip(times) {
            round.push(time.as_secs_f64() * 1e9);
        }
    }
    Ok(rounds.map(|r| median(&r)))
}
