//! The quick mode of `cargo xtask bench`, run as a test so the benchmarks cannot rot: every
//! figure is measured once with tiny counts against debug builds, and the report is checked
//! for its shape. No timing is asserted; a figure can be as slow as the machine is busy.

use std::{env, ffi::OsString, path::Path, process::Command};

use bench::figures::{self, Artifacts, Plan};

/// Builds the host and the plugins the run needs, in the profile this test was built with
/// (the bench crate's own binaries are built by cargo for this test).
fn build(profile_dir: &Path) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ sits in the workspace root");
    let mut command = Command::new(cargo);
    command.current_dir(root).arg("build");
    if profile_dir.ends_with("release") {
        command.arg("--release");
    }
    command.args([
        "-p",
        "reactor-mcp-server",
        "-p",
        "benchmarks",
        "-p",
        "bench-many-tools",
        "-p",
        "bench-ten-tools",
    ]);
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "building the host and plugins failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_quick_mode_measures_every_figure() {
    let profile_dir = Path::new(env!("CARGO_BIN_EXE_reactor-bench"))
        .parent()
        .expect("a binary sits in a folder");
    build(profile_dir);
    let artifacts = Artifacts::in_dir(profile_dir).unwrap();

    let report = figures::run(&Plan::quick(), &artifacts).unwrap();

    let titles: Vec<&str> = report.tables.iter().map(|t| t.title.as_str()).collect();
    for (number, table) in report.tables.iter().enumerate() {
        assert!(
            table.title.starts_with(&format!("{}. ", number + 1)),
            "{titles:?}"
        );
        assert!(!table.rows.is_empty(), "{} has no rows", table.title);
    }
    assert_eq!(report.tables.len(), 8, "{titles:?}");
    // Six (a)/(b) ratios, start-up, first call, idle RSS, per-session memory, idle anonymous
    // memory, anonymous memory per session, tools/list, rename to served; with many plugins:
    // start-up, anonymous memory, first call, rescan.
    assert_eq!(report.verdicts.len(), 18, "{:?}", report.verdicts);
    let text = report.to_text();
    assert!(
        text.contains("(a)/(b)") && text.contains("Targets"),
        "{text}"
    );
    assert!(report.to_markdown().contains("### Targets"));
}
