//! `cargo xtask callgrind`: the guard on the call path. Instructions per `echo` call under
//! valgrind's callgrind (deterministic, where wall-clock figures on a shared machine move by a
//! fifth), for the host serving the `benchmarks` plugin and for the benchmarks' plain rmcp
//! server with `echo` compiled in, built alike and measured in the same run, in both response
//! modes (sessions with event streams; stateless with JSON). The host's ratio to plain rmcp is
//! held to the baseline in `callgrind-baseline.txt`: more than 10% above it fails, and a ratio
//! well below it asks for the baseline to be lowered (it only comes down).
//!
//! Each server runs under `valgrind --tool=callgrind`; `reactor-bench load` warms it up with
//! [`WARM_UP`] calls, the counters are zeroed (`callgrind_control -z`), [`CALLS`] calls are
//! made from one session, and the counters are dumped (`callgrind_control -d`); the figure is
//! the process's instructions over the calls made. Built with the profile CI tests with (debug
//! unless `--release`): the ratio, not the count, is what is held.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use anyhow::{Context, Result, bail, ensure};
use harness::Launch;

use crate::{build_plugins, cargo, display, project_root, run_command, target_dir};

/// Calls made before the counters are zeroed.
const WARM_UP: u64 = 100;

/// Calls counted.
const CALLS: u64 = 1000;

/// How far above its baseline a ratio may rise.
const TOLERANCE: f64 = 0.10;

/// The baseline file, at the workspace root.
const BASELINE: &str = "callgrind-baseline.txt";

/// What `cargo xtask callgrind` takes.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct Args {
    /// Build and measure release builds (the baseline holds debug figures).
    #[arg(long)]
    pub(crate) release: bool,
}

/// One response mode: its name in the baseline, and the flags of both servers and the load.
struct Mode {
    name: &'static str,
    server_flags: &'static [&'static str],
    load_mode: &'static str,
}

const MODES: [Mode; 2] = [
    Mode {
        name: "sse-sessions",
        server_flags: &[],
        load_mode: "sse",
    },
    Mode {
        name: "json-stateless",
        server_flags: &["--stateless"],
        load_mode: "json",
    },
];

pub(crate) fn run(args: &Args) -> Result<()> {
    ensure!(
        Command::new("valgrind").arg("--version").output().is_ok(),
        "valgrind is not installed (Debian: apt-get install valgrind)"
    );
    let profile = if args.release { "release" } else { "debug" };
    let mut build = cargo();
    build.args(["build", "-p", "reactor-mcp-server", "-p", "bench", "--bins"]);
    if args.release {
        build.arg("--release");
    }
    run_command(&mut build)?;
    let binaries = target_dir().join(profile);
    let work = target_dir().join("callgrind");
    let plugins = work.join("plugins");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&plugins)?;
    build_plugins::build_into(&["benchmarks"], args.release, &plugins)?;

    let baseline = read_baseline(&project_root().join(BASELINE))?;
    let mut failures = Vec::new();
    for mode in &MODES {
        let mut host = Launch::new("valgrind");
        host.args(valgrind_args(&work, &format!("host-{}", mode.name)))
            .arg(binaries.join("reactor-mcp-server"))
            .args(["serve", "--port", "0", "--no-watch", "--plugin-dir"])
            .arg(&plugins)
            .args(mode.server_flags);
        let mut plain = Launch::new("valgrind");
        plain
            .args(valgrind_args(&work, &format!("plain-{}", mode.name)))
            .arg(binaries.join("plain-rmcp-echo"))
            .args(["--port", "0"])
            .args(mode.server_flags);
        let bench = binaries.join("reactor-bench");
        let ours = per_call(&host, "/mcp?only=benchmarks", mode, &bench, &work, "host")?;
        let theirs = per_call(&plain, "/mcp", mode, &bench, &work, "plain")?;
        let ratio = ours / theirs;
        let held = baseline
            .iter()
            .find(|(name, _)| name == mode.name)
            .map(|(_, ratio)| *ratio)
            .with_context(|| format!("{BASELINE} has no line for `{}`", mode.name))?;
        println!(
            "{}: host {:.1}k instructions per call, plain rmcp {:.1}k: ratio {ratio:.3} \
             (baseline {held:.3}, at most {:.3})",
            mode.name,
            ours / 1e3,
            theirs / 1e3,
            held * (1.0 + TOLERANCE)
        );
        if ratio > held * (1.0 + TOLERANCE) {
            failures.push(format!(
                "{}: the host's instructions per call rose to {ratio:.3}x plain rmcp's, more \
                 than 10% above the baseline {held:.3}",
                mode.name
            ));
        } else if ratio < held * (1.0 - TOLERANCE) {
            println!(
                "{}: {ratio:.3} is well below the baseline {held:.3}: lower it in {BASELINE}",
                mode.name
            );
        }
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("\n"));
    }
    Ok(())
}

/// valgrind's arguments for a server whose counts go to `work/NAME.out`.
fn valgrind_args(work: &Path, name: &str) -> Vec<String> {
    vec![
        "--tool=callgrind".to_owned(),
        format!(
            "--callgrind-out-file={}",
            work.join(format!("{name}.out")).display()
        ),
        // The host maps private copies of plugins and may unmap them: no symbols are needed.
        "--dump-instr=no".to_owned(),
    ]
}

/// The instructions per call of the server `launch` starts, loaded at `target` in `mode`.
fn per_call(
    launch: &Launch,
    target: &str,
    mode: &Mode,
    bench: &Path,
    work: &Path,
    who: &str,
) -> Result<f64> {
    let mut launch = launch.clone();
    launch
        .log_to(work.join(format!("{who}-{}.log", mode.name)))
        .timeout(Duration::from_secs(120));
    eprintln!("$ {}", display(&launch.command()));
    let (server, ready) = launch.serve()?;
    let pid = server.pid().to_string();
    let url = format!("http://{}{target}", ready.address);
    let load = |calls: u64| {
        let mut load = Command::new(bench);
        load.args(["load", &url, "--mode", mode.load_mode, "--seconds", "600"])
            .args(["--calls", &calls.to_string()]);
        run_command(&mut load)
    };
    load(WARM_UP)?;
    run_command(Command::new("callgrind_control").args(["-z", &pid]))?;
    load(CALLS)?;
    run_command(Command::new("callgrind_control").args(["-d", &pid]))?;
    drop(server);
    let prefix = format!("{who}-{}.out", mode.name);
    let total = dumped_total(work, &prefix)?;
    Ok(total as f64 / CALLS as f64)
}

/// The instructions counted in the dump `callgrind_control -d` wrote (`PREFIX.1`, or the
/// highest-numbered one): its `summary:` or `totals:` line.
fn dumped_total(work: &Path, prefix: &str) -> Result<u64> {
    let mut dumps: Vec<PathBuf> = fs::read_dir(work)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(prefix))
                .is_some_and(|rest| rest.starts_with('.') && rest[1..].parse::<u32>().is_ok())
        })
        .collect();
    dumps.sort();
    let dump = dumps
        .last()
        .with_context(|| format!("callgrind wrote no dump {prefix}.N in {}", work.display()))?;
    let text = fs::read_to_string(dump)?;
    total_of(&text).with_context(|| format!("no totals in {}", dump.display()))
}

/// The first count of a callgrind dump's `summary:` or `totals:` line.
fn total_of(dump: &str) -> Option<u64> {
    dump.lines()
        .find_map(|line| {
            line.strip_prefix("summary:")
                .or_else(|| line.strip_prefix("totals:"))
        })
        .and_then(|counts| counts.split_whitespace().next())
        .and_then(|count| count.parse().ok())
}

/// The baseline's lines: `MODE RATIO`, `#` comments and blank lines aside.
fn read_baseline(path: &Path) -> Result<Vec<(String, f64)>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (name, ratio) = line
                .split_once(char::is_whitespace)
                .with_context(|| format!("{}: `{line}` is not `MODE RATIO`", path.display()))?;
            let ratio = ratio.trim().parse().with_context(|| {
                format!("{}: `{line}`: the ratio is not a number", path.display())
            })?;
            Ok((name.to_owned(), ratio))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_s_total_is_its_summary_line() {
        let dump = "version: 1\ncmd: x\nevents: Ir\nsummary: 123456\ntotals: 1\n";
        assert_eq!(total_of(dump), Some(123_456));
        assert_eq!(total_of("totals: 42 7\n"), Some(42));
        assert_eq!(total_of("events: Ir\n"), None);
    }
}
