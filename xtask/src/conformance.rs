//! `cargo xtask conformance`: the official MCP conformance suite against the host serving the
//! `conformance` plugin, judged against a checked-in baseline.
//!
//! The steps, each reported on stderr:
//!
//! 1. **Tools.** `@modelcontextprotocol/conformance` ([`SUITE_VERSION`]) and a Node 22 binary
//!    from the npm package `node-<os>-<arch>` ([`NODE_VERSION`]; the machine's own Node may be
//!    older than the suite needs) are installed with `npm install --prefix .tools/conformance`,
//!    a git-ignored folder, unless the exact versions are already there. Only that step needs
//!    `npm` (any version) and the network.
//! 2. **Build.** The `conformance` plugin (debug, through `build-plugins`) and the host binary.
//! 3. **Serve.** The host on a free loopback port, discovering only that plugin
//!    (`--plugin-dir plugins --extension conformance`), started through the `harness` crate,
//!    which waits for its ready file; its log in `target/conformance/host.log`. The harness
//!    kills it on every way out of this command.
//! 4. **Run.** `conformance server --url http://localhost:PORT/mcp?only=conformance --suite all`:
//!    every server scenario, the *active* ones (the suite's default selection) and the
//!    *pending* ones (`json-schema-2020-12`, `server-sse-polling`), unless `--suite` or
//!    `--scenario` says otherwise. Its output goes to `target/conformance/suite.log`
//!    (`--verbose` shows it instead), its per-scenario `checks.json` under
//!    `target/conformance/results/`.
//! 5. **Judge.** One line per scenario: `pass`, `warn` or `FAIL` with the checks that did not
//!    succeed. A scenario with a failed or warning check is *failing*, as the suite's own
//!    `--expected-failures` counts it. The command fails when a failing scenario is not in
//!    [`BASELINE`], and when a scenario in the baseline now passes (remove it: the baseline
//!    only shrinks). Each baseline line is `scenario-name  # why it fails`.
//!
//! What each scenario checks lives in the suite's `dist/index.js`; what the server answers
//! lives in `plugins/conformance` and the host.

use std::{
    collections::BTreeMap,
    env, fs,
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
    build_plugins, cargo, display,
    npm::{self, NODE_VERSION},
    project_root, run_command, target_dir,
};

/// The pinned version of `@modelcontextprotocol/conformance`.
pub(crate) const SUITE_VERSION: &str = "0.1.16";
/// The baseline file, at the workspace root.
pub(crate) const BASELINE: &str = "conformance-baseline.txt";

/// The suite's npm package.
const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance";
/// The toolset the plugin serves and the URL selects.
const TOOLSET: &str = "conformance";
/// How long a whole suite run may take before it is stopped.
const SUITE_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Options of `cargo xtask conformance`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Args {
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
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let root = project_root();
    let work = target_dir().join("conformance");
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let baseline_path = root.join(BASELINE);
    let baseline = Baseline::parse(
        &fs::read_to_string(&baseline_path)
            .with_context(|| format!("reading {}", baseline_path.display()))?,
    )
    .with_context(|| format!("in {}", baseline_path.display()))?;

    eprintln!("\n==> conformance suite {SUITE_VERSION} and Node {NODE_VERSION}");
    let tools = Tools::install(&root.join(".tools").join("conformance"))?;

    eprintln!("\n==> building the conformance plugin and the host");
    build_plugins::run(&build_plugins::Args {
        release: false,
        plugins: vec![TOOLSET.to_owned()],
    })?;
    run_command(cargo().args(["build", "-p", "host", "--bin", "reactor-mcp-server"]))?;

    eprintln!("\n==> serving the conformance plugin");
    let (host, ready) = serve_host(&root, &work.join("host.log"))?;
    let url = format!(
        "http://localhost:{}/mcp?only={TOOLSET}",
        ready.address.port()
    );
    eprintln!("host pid {} at {url}", ready.pid);

    let results_dir = work.join("results");
    if results_dir.exists() {
        fs::remove_dir_all(&results_dir)
            .with_context(|| format!("clearing {}", results_dir.display()))?;
    }
    let started = Instant::now();
    let log = work.join("suite.log");
    fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    if args.scenarios.is_empty() {
        eprintln!(
            "\n==> running the server scenarios (suite `{}`)",
            args.suite
        );
        tools.run_suite(&url, &["--suite", &args.suite], &results_dir, &log, args)?;
    } else {
        for scenario in &args.scenarios {
            eprintln!("\n==> running scenario {scenario}");
            tools.run_suite(&url, &["--scenario", scenario], &results_dir, &log, args)?;
        }
    }
    let elapsed = started.elapsed();
    drop(host);

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
    let whole_suite = args.scenarios.is_empty() && args.suite == "all";
    let verdict = Verdict::new(&results, &baseline, whole_suite);
    eprintln!(
        "\n==> results ({} scenarios in {:.1} s; baseline {BASELINE})",
        results.len(),
        elapsed.as_secs_f64()
    );
    for line in verdict.lines(&results, &baseline) {
        eprintln!("{line}");
    }
    let judged = verdict.into_result();
    if judged.is_err() {
        eprintln!(
            "each scenario's checks: {}\nthe suite's output: {}\nthe server's log: {}",
            results_dir.display(),
            log.display(),
            work.join("host.log").display()
        );
    }
    judged
}

/// The installed suite and Node binary.
#[derive(Debug)]
struct Tools {
    node: PathBuf,
    cli: PathBuf,
}

impl Tools {
    /// Installs the pinned versions into `prefix` unless they are there already.
    fn install(prefix: &Path) -> Result<Self> {
        let installed = npm::Prefix::install(prefix, &[(SUITE_PACKAGE, SUITE_VERSION)])?;
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

/// Starts the debug host on a free port serving the conformance plugin, its output in `log`,
/// and waits until it listens. The process is killed when dropped.
fn serve_host(root: &Path, log: &Path) -> Result<(harness::Process, harness::Ready)> {
    let binary = target_dir()
        .join("debug")
        .join(format!("reactor-mcp-server{}", env::consts::EXE_SUFFIX));
    let mut host = Launch::new(&binary);
    host.args(["serve", "--host", "127.0.0.1", "--port", "0"])
        .arg("--plugin-dir")
        .arg(root.join("plugins"))
        .args(["--extension", TOOLSET])
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

    fn into_result(self) -> Result<()> {
        let mut problems = Vec::new();
        if !self.unexpected.is_empty() {
            problems.push(format!(
                "failing and not in {BASELINE}: {} (fix them, or add each with `# reason`)",
                self.unexpected.join(", ")
            ));
        }
        if !self.stale.is_empty() {
            problems.push(format!(
                "in {BASELINE} but passing now: {} (remove them: the baseline only shrinks)",
                self.stale.join(", ")
            ));
        }
        if !self.unknown.is_empty() {
            problems.push(format!(
                "in {BASELINE} but not a scenario of the suite: {}",
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
    fn the_checked_in_baseline_parses() {
        let path = project_root().join(BASELINE);
        let text = fs::read_to_string(&path).unwrap();
        if let Err(error) = Baseline::parse(&text) {
            panic!("{}: {error:#}", path.display());
        }
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
        assert!(verdict.into_result().is_err());
        // A partial run does not judge the entries it did not run.
        let partial = BTreeMap::from([("b".to_owned(), result(Outcome::Fail))]);
        let verdict = Verdict::new(&partial, &baseline, false);
        assert_eq!(verdict, Verdict::default());
        assert!(verdict.into_result().is_ok());
    }
}
