//! `cargo xtask conformance`: the official MCP conformance suite against the host serving the
//! `conformance` plugin, judged against a checked-in baseline per run.
//!
//! A *run* ([`RUNS`]) is one version of the suite with its arguments and its own baseline:
//! `0.1.16` (protocol 2025-11-25, `conformance-baseline.txt`), `alpha-2025-11-25` and
//! `alpha-2026-07-28` (0.2.0-alpha.12 with `--spec-version`), and
//! `alpha-requirements-2026-07-28` (0.2.0-alpha.12 with `--requirements 2026-07-28`: what the
//! revision requires, and the tasks extension's scenarios, which it runs unscored; a
//! `--scenario` of it runs at `--spec-version 2026-07-28 --force`). `--run NAME` picks some
//! (repeatable); every run otherwise. The steps, each reported on stderr:
//!
//! 1. **Tools.** Each run's `@modelcontextprotocol/conformance` and a Node 22 binary from the
//!    npm package `node-<os>-<arch>` ([`NODE_VERSION`]; the machine's own Node may be older
//!    than the suite needs) are installed with `npm install --prefix
//!    .tools/conformance-VERSION`, a git-ignored folder, unless the exact versions are already
//!    there. Only that step needs `npm` (any version) and the network.
//! 2. **Build.** The `conformance` plugin (debug) into `target/conformance/plugins`, and the
//!    host binary.
//! 3. **Serve.** The host on a free loopback port, discovering only that plugin
//!    (`--plugin-dir target/conformance/plugins`) and serving its toolset to a URL that names
//!    none too (`--toolsets only=conformance`: some scenarios post to the path alone), started through the `harness` crate,
//!    which waits for its ready file; its log in `target/conformance/host.log`. The harness
//!    kills it on every way out of this command. With `--isolate`, the plugin runs in a child
//!    process (`--isolate conformance`), judged against the same baselines: isolation must not
//!    change what a client sees.
//! 4. **Run**, for each run in turn against the same host:
//!    `conformance server --url http://localhost:PORT/mcp?only=conformance --suite all`: every
//!    server scenario, the *active* ones (the suite's default selection) and the *pending*
//!    ones, unless `--suite` or `--scenario` says otherwise. Its output goes to
//!    `target/conformance/RUN/suite.log` (`--verbose` shows it instead), its per-scenario
//!    `checks.json` under `target/conformance/RUN/results/`.
//! 5. **Judge.** One line per scenario: `pass`, `warn` or `FAIL` with the checks that did not
//!    succeed. A scenario with a failed or warning check is *failing*, as the suite's own
//!    `--expected-failures` counts it. A run fails when a failing scenario is not in its
//!    baseline, and when a scenario in the baseline now passes (remove it: the baseline only
//!    shrinks). Each baseline line is `scenario-name  # why it fails`. The command fails when
//!    any run does, after all of them ran.
//!
//! What each scenario checks lives in the suite's `dist/index.js`; what the server answers
//! lives in `tests/conformance` (installed into `target/conformance/plugins`, never into
//! `plugins/`) and the host.

use std::{
    collections::BTreeMap,
    fs,
    io::{self, Read},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail, ensure};
use harness::Launch;
use serde_json::Value;

use crate::{
    build_plugins, display,
    npm::{self, NODE_VERSION},
    project_root, target_dir,
};

/// One named run of the suite: a pinned version, the protocol version it tests, the baseline
/// file (at the workspace root) it is judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    /// The name `--run` takes.
    pub(crate) name: &'static str,
    /// The pinned version of `@modelcontextprotocol/conformance`.
    pub(crate) suite_version: &'static str,
    /// `--spec-version`, for the suites that take it.
    pub(crate) spec_version: Option<&'static str>,
    /// `--requirements`: exactly the scenarios a revision requires, plus those it runs without
    /// scoring (the tasks extension's), in place of `--suite` and `--spec-version`.
    pub(crate) requirements: Option<&'static str>,
    /// The baseline file.
    pub(crate) baseline: &'static str,
}

/// Every run, in the order they run.
pub(crate) const RUNS: &[Run] = &[
    Run {
        name: "0.1.16",
        suite_version: "0.1.16",
        spec_version: None,
        requirements: None,
        baseline: "conformance-baseline.txt",
    },
    Run {
        name: "alpha-2025-11-25",
        suite_version: ALPHA,
        spec_version: Some("2025-11-25"),
        requirements: None,
        baseline: "conformance-baseline-2025-11-25-alpha.txt",
    },
    Run {
        name: "alpha-2026-07-28",
        suite_version: ALPHA,
        spec_version: Some("2026-07-28"),
        requirements: None,
        baseline: "conformance-baseline-2026-07-28.txt",
    },
    Run {
        name: "alpha-requirements-2026-07-28",
        suite_version: ALPHA,
        spec_version: None,
        requirements: Some("2026-07-28"),
        baseline: "conformance-baseline-requirements-2026-07-28.txt",
    },
];

/// The pinned pre-release of the suite that tests protocol 2026-07-28.
const ALPHA: &str = "0.2.0-alpha.12";

/// The suite's npm package.
const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance";
/// The toolset the plugin serves and the URL selects.
const TOOLSET: &str = "conformance";
/// How long a whole suite run may take before it is stopped.
const SUITE_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Options of `cargo xtask conformance`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Args {
    /// Only this run (repeatable): `0.1.16`, `alpha-2025-11-25`, `alpha-2026-07-28` or
    /// `alpha-requirements-2026-07-28`; every run otherwise.
    #[arg(long = "run", value_name = "NAME")]
    pub(crate) runs: Vec<String>,
    /// Run only this scenario (repeatable); the whole suite otherwise.
    #[arg(long = "scenario", value_name = "NAME")]
    pub(crate) scenarios: Vec<String>,
    /// The suite's selection when no scenario is named: `all` (the default: the active server
    /// scenarios and the pending ones), `active` (the suite's own default) or `pending`.
    #[arg(long, default_value = "all", value_name = "SUITE")]
    pub(crate) suite: String,
    /// Show the suite's own output instead of writing it to target/conformance/suite.log.
    #[arg(long)]
    pub(crate) verbose: bool,
    /// Serve the plugin isolated (`--isolate conformance`), against the same baselines.
    #[arg(long)]
    pub(crate) isolate: bool,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let root = project_root();
    let work = target_dir().join("conformance");
    let mut prepared: Vec<(&Run, Baseline, Tools)> = Vec::new();
    for run in selected(&args.runs)? {
        let baseline = Baseline::read(&root.join(run.baseline))?;
        let installed = prepared
            .iter()
            .find(|(other, ..)| other.suite_version == run.suite_version)
            .map(|(.., tools)| tools.clone());
        let tools = match installed {
            Some(tools) => tools,
            None => {
                eprintln!(
                    "\n==> conformance suite {} and Node {NODE_VERSION}",
                    run.suite_version
                );
                let prefix = format!("conformance-{}", run.suite_version);
                Tools::install(&root.join(".tools").join(prefix), run.suite_version)?
            }
        };
        prepared.push((run, baseline, tools));
    }

    eprintln!("\n==> building the conformance plugin and the host");
    // A folder of its own: the test plugin is never installed where users' plugins are.
    let plugins = work.join("plugins");
    build_plugins::build_into(&[TOOLSET], false, &plugins)?;
    crate::build_debug_server()?;

    let how = if args.isolate { " isolated" } else { "" };
    eprintln!("\n==> serving the conformance plugin{how}");
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let (host, ready) = serve_host(&root, &plugins, &work.join("host.log"), args.isolate)?;
    let url = format!(
        "http://localhost:{}/mcp?only={TOOLSET}",
        ready.address.port()
    );
    eprintln!("host pid {} at {url}", ready.pid);

    let mut failed = Vec::new();
    for (run, baseline, tools) in &prepared {
        if let Err(error) = run_one(run, baseline, tools, &url, &work.join(run.name), args) {
            eprintln!("{error:#}");
            failed.push(run.name);
        }
    }
    drop(host);
    if failed.is_empty() {
        Ok(())
    } else {
        eprintln!("the server's log: {}", work.join("host.log").display());
        bail!("conformance: not as expected in run {}", failed.join(", "))
    }
}

/// The runs `--run` names, in [`RUNS`] order; all of them when it names none.
fn selected(names: &[String]) -> Result<Vec<&'static Run>> {
    if let Some(unknown) = names
        .iter()
        .find(|name| !RUNS.iter().any(|run| run.name == name.as_str()))
    {
        let known: Vec<&str> = RUNS.iter().map(|run| run.name).collect();
        bail!("no run named `{unknown}`; the runs: {}", known.join(", "));
    }
    Ok(RUNS
        .iter()
        .filter(|run| names.is_empty() || names.iter().any(|name| name == run.name))
        .collect())
}

/// Runs the suite of `run` against `url`, its output under `work`, and judges the results
/// against its baseline.
fn run_one(
    run: &Run,
    baseline: &Baseline,
    tools: &Tools,
    url: &str,
    work: &Path,
    args: &Args,
) -> Result<()> {
    let results_dir = work.join("results");
    if results_dir.exists() {
        fs::remove_dir_all(&results_dir)
            .with_context(|| format!("clearing {}", results_dir.display()))?;
    }
    fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let started = Instant::now();
    let log = work.join("suite.log");
    fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut common = Vec::new();
    if let Some(spec) = run.spec_version {
        common.extend(["--spec-version", spec]);
    }
    if let Some(revision) = run.requirements {
        // One scenario of a requirement set: at its wire, whether or not the set scores it.
        common.extend(["--spec-version", revision, "--force"]);
    }
    if let (Some(revision), true) = (run.requirements, args.scenarios.is_empty()) {
        eprintln!(
            "\n==> run {}: the server scenarios {revision} requires, and those it runs unscored",
            run.name
        );
        let selection = ["--requirements", revision];
        tools.run_suite(url, &selection, &results_dir, &log, args)?;
    } else if args.scenarios.is_empty() {
        eprintln!(
            "\n==> run {}: the server scenarios (suite `{}`)",
            run.name, args.suite
        );
        let selection = [&["--suite", args.suite.as_str()], common.as_slice()].concat();
        tools.run_suite(url, &selection, &results_dir, &log, args)?;
    } else {
        for scenario in &args.scenarios {
            eprintln!("\n==> run {}: scenario {scenario}", run.name);
            let selection = [&["--scenario", scenario.as_str()], common.as_slice()].concat();
            tools.run_suite(url, &selection, &results_dir, &log, args)?;
        }
    }
    let elapsed = started.elapsed();

    let results = read_results(&results_dir)?;
    if results.is_empty() {
        let output = read_lossy(&log).unwrap_or_default();
        let tail: Vec<&str> = output.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "the suite wrote no results under {}; the end of {}:\n{}",
            results_dir.display(),
            log.display(),
            tail.join("\n")
        );
    }
    let whole_suite =
        args.scenarios.is_empty() && (args.suite == "all" || run.requirements.is_some());
    let verdict = Verdict::new(&results, baseline, whole_suite);
    eprintln!(
        "\n==> run {}: results ({} scenarios in {:.1} s; baseline {})",
        run.name,
        results.len(),
        elapsed.as_secs_f64(),
        run.baseline
    );
    for line in verdict.lines(&results, baseline) {
        eprintln!("{line}");
    }
    let judged = verdict.into_result(run.baseline);
    if judged.is_err() {
        eprintln!(
            "each scenario's checks: {}\nthe suite's output: {}",
            results_dir.display(),
            log.display(),
        );
    }
    judged
}

/// The installed suite and Node binary.
#[derive(Debug, Clone)]
struct Tools {
    node: PathBuf,
    cli: PathBuf,
}

impl Tools {
    /// Installs `version` of the suite into `prefix` unless it is there already.
    fn install(prefix: &Path, version: &str) -> Result<Self> {
        let installed = npm::Prefix::install(prefix, &[(SUITE_PACKAGE, version)])?;
        let cli = installed.file(SUITE_PACKAGE, "dist/index.js");
        ensure!(
            cli.is_file(),
            "npm finished but {} is missing",
            cli.display()
        );
        Ok(Self {
            node: installed.node,
            cli,
        })
    }

    /// Runs `conformance server` with `selection`, its output appended to `log` (and shown
    /// with `--verbose`), its results under `results`. Its exit status is not the verdict: the
    /// results are.
    fn run_suite(
        &self,
        url: &str,
        selection: &[&str],
        results: &Path,
        log: &Path,
        args: &Args,
    ) -> Result<()> {
        let mut suite = Command::new(&self.node);
        suite
            .arg(&self.cli)
            .args(["server", "--url", url])
            .args(selection)
            .arg("--output-dir")
            .arg(results)
            .current_dir(project_root());
        eprintln!("$ {}", display(&suite));
        let output = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("opening {}", log.display()))?;
        if args.verbose {
            suite.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        } else {
            suite
                .stdout(output.try_clone()?)
                .stderr(output)
                .stdin(Stdio::null());
        }
        let mut child = KillOnDrop(
            suite
                .spawn()
                .with_context(|| format!("starting {}", self.node.display()))?,
        );
        let deadline = Instant::now() + SUITE_TIMEOUT;
        loop {
            if child.0.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the suite ran longer than {SUITE_TIMEOUT:?} and was stopped (see {})",
                    log.display()
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A child process killed (and reaped) when dropped, whichever way its owner ends.
#[derive(Debug)]
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// Starts the debug host on a free port serving the conformance plugin (in a child process
/// when `isolate`), its output in `log`, and waits until it listens. The process is killed
/// when dropped.
fn serve_host(
    root: &Path,
    plugins: &Path,
    log: &Path,
    isolate: bool,
) -> Result<(harness::Process, harness::Ready)> {
    let binary = crate::debug_server();
    let mut host = Launch::new(&binary);
    host.args(["serve", "--host", "127.0.0.1", "--port", "0"])
        .arg("--plugin-dir")
        .arg(plugins)
        // Some scenarios post to the URL's path alone, its query dropped (the header
        // validation ones): such a URL is served the same toolset.
        .args(["--toolsets", &format!("only={TOOLSET}")])
        .args(if isolate {
            &["--isolate", TOOLSET][..]
        } else {
            &[]
        })
        .current_dir(root)
        .log_to(log);
    eprintln!("$ {}", display(&host.command()));
    Ok(host.serve()?)
}

fn read_lossy(path: &Path) -> io::Result<String> {
    let mut bytes = Vec::new();
    fs::File::open(path)?.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// How a scenario went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Every check succeeded (or was informational).
    Pass,
    /// No check failed, but at least one warned.
    Warn,
    /// At least one check failed.
    Fail,
}

/// One scenario's result, from its `checks.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ScenarioResult {
    outcome: Outcome,
    /// `NAME: message` of each check that failed or warned.
    problems: Vec<String>,
    passed: usize,
}

impl ScenarioResult {
    /// Reads a scenario's checks: a JSON array of `{name, status, errorMessage, ...}`.
    fn from_checks(checks: &Value) -> Self {
        let mut result = Self {
            outcome: Outcome::Pass,
            problems: Vec::new(),
            passed: 0,
        };
        for check in checks.as_array().into_iter().flatten() {
            let status = check["status"].as_str().unwrap_or("FAILURE");
            let outcome = match status {
                "SUCCESS" => {
                    result.passed += 1;
                    continue;
                }
                "INFO" | "SKIPPED" => continue,
                "WARNING" => Outcome::Warn,
                _ => Outcome::Fail,
            };
            if outcome == Outcome::Fail || result.outcome == Outcome::Pass {
                result.outcome = outcome;
            }
            let name = check["name"].as_str().unwrap_or("check");
            let message = check["errorMessage"]
                .as_str()
                .or_else(|| check["description"].as_str())
                .unwrap_or("");
            let label = if outcome == Outcome::Warn {
                "warning "
            } else {
                ""
            };
            result.problems.push(format!("{label}{name}: {message}"));
        }
        result
    }

    fn failing(&self) -> bool {
        self.outcome != Outcome::Pass
    }
}

/// Every scenario's result under `dir`, by scenario name. The suite writes one folder per
/// scenario, `server-NAME-TIMESTAMP`, holding `checks.json`.
fn read_results(dir: &Path) -> Result<BTreeMap<String, ScenarioResult>> {
    let mut results = BTreeMap::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(results);
    };
    for entry in entries {
        let path = entry?.path();
        let folder = path.file_name().unwrap_or_default().to_string_lossy();
        let Some(name) = scenario_of_folder(&folder) else {
            continue;
        };
        let file = path.join("checks.json");
        let text =
            fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        let checks: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
        results.insert(name.to_owned(), ScenarioResult::from_checks(&checks));
    }
    Ok(results)
}

/// `NAME` in `server-NAME-2026-01-02T03-04-05-678Z`.
fn scenario_of_folder(folder: &str) -> Option<&str> {
    const STAMP: usize = "-2026-01-02T03-04-05-678Z".len();
    let rest = folder.strip_prefix("server-")?;
    let split = rest.len().checked_sub(STAMP)?;
    let (name, stamp) = (rest.get(..split)?, rest.get(split..)?);
    let well_formed = stamp.starts_with('-')
        && stamp.ends_with('Z')
        && stamp.as_bytes().get(11) == Some(&b'T')
        && !name.is_empty();
    well_formed.then_some(name)
}

/// The scenarios expected to fail, each with its reason, in file order.
#[derive(Debug, Default, PartialEq, Eq)]
struct Baseline {
    entries: Vec<(String, String)>,
}

impl Baseline {
    /// Reads and parses the baseline file at `path`.
    fn read(path: &Path) -> Result<Self> {
        let text =
            fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    /// One scenario per line with a `# reason`; blank lines and lines that are only a comment
    /// are skipped. An entry without a reason, or named twice, is an error.
    fn parse(text: &str) -> Result<Self> {
        let mut baseline = Self::default();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, reason) = line.split_once('#').unwrap_or((line, ""));
            let (name, reason) = (name.trim(), reason.trim());
            ensure!(
                !name.contains(char::is_whitespace),
                "line {}: one scenario name per line, then `# reason`",
                number + 1
            );
            ensure!(
                !reason.is_empty(),
                "line {}: `{name}` needs a reason: `{name}  # why it fails`",
                number + 1
            );
            ensure!(
                baseline.reason(name).is_none(),
                "line {}: `{name}` is listed twice",
                number + 1
            );
            baseline.entries.push((name.to_owned(), reason.to_owned()));
        }
        Ok(baseline)
    }

    fn reason(&self, scenario: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(name, _)| name == scenario)
            .map(|(_, reason)| reason.as_str())
    }
}

/// The results held against the baseline.
#[derive(Debug, Default, PartialEq, Eq)]
struct Verdict {
    /// Failing scenarios the baseline does not expect.
    unexpected: Vec<String>,
    /// Baseline scenarios that now pass.
    stale: Vec<String>,
    /// Baseline scenarios the suite does not have (checked only on a whole-suite run).
    unknown: Vec<String>,
}

impl Verdict {
    fn new(
        results: &BTreeMap<String, ScenarioResult>,
        baseline: &Baseline,
        whole_suite: bool,
    ) -> Self {
        let mut verdict = Self::default();
        for (name, result) in results {
            match (result.failing(), baseline.reason(name).is_some()) {
                (true, false) => verdict.unexpected.push(name.clone()),
                (false, true) => verdict.stale.push(name.clone()),
                _ => {}
            }
        }
        if whole_suite {
            verdict.unknown = baseline
                .entries
                .iter()
                .filter(|(name, _)| !results.contains_key(name))
                .map(|(name, _)| name.clone())
                .collect();
        }
        verdict
    }

    /// One line per scenario, then the problems of each failing one, then a summary.
    fn lines(
        &self,
        results: &BTreeMap<String, ScenarioResult>,
        baseline: &Baseline,
    ) -> Vec<String> {
        let width = results.keys().map(String::len).max().unwrap_or(0);
        let mut lines = Vec::new();
        for (name, result) in results {
            let status = match result.outcome {
                Outcome::Pass => "pass",
                Outcome::Warn => "warn",
                Outcome::Fail => "FAIL",
            };
            let mut line = format!("{status}  {name:width$}  {} checks passed", result.passed);
            match baseline.reason(name) {
                Some(reason) if result.failing() => {
                    line.push_str(&format!("  (baseline: {reason})"))
                }
                Some(_) => line.push_str("  (in the baseline but passes: remove it)"),
                None => {}
            }
            lines.push(line);
            for problem in &result.problems {
                lines.push(format!("        - {problem}"));
            }
        }
        let failing = results.values().filter(|r| r.failing()).count();
        lines.push(format!(
            "{} of {} scenarios pass; {failing} failing, {} of them in the baseline",
            results.len() - failing,
            results.len(),
            failing - self.unexpected.len()
        ));
        lines
    }

    /// Fails when anything is unexpected; `file` names the baseline in the message.
    fn into_result(self, file: &str) -> Result<()> {
        let mut problems = Vec::new();
        if !self.unexpected.is_empty() {
            problems.push(format!(
                "failing and not in {file}: {} (fix them, or add each with `# reason`)",
                self.unexpected.join(", ")
            ));
        }
        if !self.stale.is_empty() {
            problems.push(format!(
                "in {file} but passing now: {} (remove them: the baseline only shrinks)",
                self.stale.join(", ")
            ));
        }
        if !self.unknown.is_empty() {
            problems.push(format!(
                "in {file} but not a scenario of the suite: {}",
                self.unknown.join(", ")
            ));
        }
        if problems.is_empty() {
            eprintln!("conformance: as expected");
            Ok(())
        } else {
            bail!("conformance: {}", problems.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(name: &str, status: &str, message: Option<&str>) -> Value {
        json!({"name": name, "status": status, "description": "d", "errorMessage": message})
    }

    fn result(outcome: Outcome) -> ScenarioResult {
        ScenarioResult {
            outcome,
            problems: Vec::new(),
            passed: 1,
        }
    }

    #[test]
    fn the_scenario_is_read_from_its_folder_name() {
        assert_eq!(
            scenario_of_folder("server-tools-call-image-2026-03-30T10-54-00-123Z"),
            Some("tools-call-image")
        );
        assert_eq!(
            scenario_of_folder("server-ping-2026-03-30T10-54-00-123Z"),
            Some("ping")
        );
        assert_eq!(
            scenario_of_folder("client-ping-2026-03-30T10-54-00-123Z"),
            None
        );
        assert_eq!(scenario_of_folder("server-ping"), None);
        assert_eq!(scenario_of_folder("server--2026-03-30T10-54-00-123Z"), None);
    }

    #[test]
    fn a_failed_check_fails_a_scenario_and_a_warning_warns() {
        let pass = ScenarioResult::from_checks(&json!([
            check("A", "SUCCESS", None),
            check("B", "INFO", None)
        ]));
        assert_eq!(pass.outcome, Outcome::Pass);
        assert_eq!(pass.passed, 1);
        let warn = ScenarioResult::from_checks(&json!([
            check("A", "SUCCESS", None),
            check("B", "WARNING", Some("no priming event"))
        ]));
        assert_eq!(warn.outcome, Outcome::Warn);
        assert_eq!(warn.problems, ["warning B: no priming event"]);
        let fail = ScenarioResult::from_checks(&json!([
            check("A", "FAILURE", Some("No image content found")),
            check("B", "WARNING", None)
        ]));
        assert_eq!(fail.outcome, Outcome::Fail);
        assert_eq!(fail.problems, ["A: No image content found", "warning B: d"]);
        assert!(warn.failing() && fail.failing() && !pass.failing());
    }

    #[test]
    fn the_baseline_needs_a_reason_per_scenario() {
        let baseline = Baseline::parse(
            "# expected failures\n\nresources-list   # needs resources from plugins\n",
        )
        .unwrap();
        assert_eq!(
            baseline.reason("resources-list"),
            Some("needs resources from plugins")
        );
        assert!(Baseline::parse("resources-list\n").is_err());
        assert!(Baseline::parse("resources-list #\n").is_err());
        assert!(Baseline::parse("a b # two names\n").is_err());
        assert!(Baseline::parse("a # x\na # y\n").is_err());
        assert_eq!(Baseline::parse("").unwrap(), Baseline::default());
    }

    #[test]
    fn the_checked_in_baselines_parse() {
        for run in RUNS {
            if let Err(error) = Baseline::read(&project_root().join(run.baseline)) {
                panic!("{error:#}");
            }
        }
    }

    #[test]
    fn runs_are_chosen_by_name() {
        assert_eq!(selected(&[]).unwrap().len(), RUNS.len());
        let alpha = selected(&["alpha-2026-07-28".to_owned()]).unwrap();
        assert_eq!(alpha[0].spec_version, Some("2026-07-28"));
        assert!(selected(&["0.1".to_owned()]).is_err());
    }

    #[test]
    fn new_failures_and_stale_entries_fail_the_run() {
        let baseline = Baseline::parse("b # known\nc # known\ngone # old\n").unwrap();
        let results = BTreeMap::from([
            ("a".to_owned(), result(Outcome::Fail)),
            ("b".to_owned(), result(Outcome::Warn)),
            ("c".to_owned(), result(Outcome::Pass)),
            ("d".to_owned(), result(Outcome::Pass)),
        ]);
        let verdict = Verdict::new(&results, &baseline, true);
        assert_eq!(verdict.unexpected, ["a"]);
        assert_eq!(verdict.stale, ["c"]);
        assert_eq!(verdict.unknown, ["gone"]);
        assert!(verdict.into_result("b.txt").is_err());
        // A partial run does not judge the entries it did not run.
        let partial = BTreeMap::from([("b".to_owned(), result(Outcome::Fail))]);
        let verdict = Verdict::new(&partial, &baseline, false);
        assert_eq!(verdict, Verdict::default());
        assert!(verdict.into_result("b.txt").is_ok());
    }
}
