//! The private copies plugins are opened from, end to end: while a library is open its copy
//! stays on disk, so `/proc/PID/maps` names a file that exists (what `perf` and `gdb` read
//! symbols from), not a `(deleted)` one; a clean exit removes the copies; and a host starting
//! removes the copy folders left by processes that no longer run. Each host gets a `TMPDIR` of
//! its own, so what it leaves there is its own.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use e2e::{
    HostProcess, PluginDir,
    mcp::{call_tool, connect, text},
    procs::signal,
};
use serde_json::json;

/// The lines of `/proc/PID/maps` that map a file under `dir`.
fn maps_under(pid: u32, dir: &Path) -> Vec<String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let dir = dir.canonicalize().unwrap();
    maps.lines()
        .filter(|line| line.contains(&*dir.to_string_lossy()))
        .map(str::to_owned)
        .collect()
}

/// The path a maps line names, with its `(deleted)` mark if it has one.
fn mapped_path(line: &str) -> &str {
    line.splitn(6, char::is_whitespace)
        .nth(5)
        .unwrap_or_default()
        .trim_start()
}

/// The entries of `dir`.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    found.sort();
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_librarys_copy_exists_while_mapped_and_a_clean_exit_removes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp_path = tmp.path().to_string_lossy().into_owned();
    let dir = PluginDir::with(&["benchmarks"]);
    let mut host = HostProcess::serve_with_env(&dir, &[], &[("TMPDIR", &tmp_path)]);
    let client = connect(&format!("{}/mcp?only=benchmarks", host.base_url())).await;
    let echoed = call_tool(client.peer(), "echo", json!({"text": "hi"})).await;
    assert_eq!(text(&echoed), "hi");

    let lines = maps_under(host.pid(), tmp.path());
    assert!(!lines.is_empty(), "the copy is mapped from {tmp_path}");
    for line in &lines {
        let path = mapped_path(line);
        assert!(!path.ends_with("(deleted)"), "{line}");
        assert!(Path::new(path).is_file(), "{path} exists");
    }
    assert_eq!(entries(tmp.path()).len(), 1, "one folder, the copy's");

    drop(client);
    signal(host.pid(), "TERM");
    let status = host
        .wait_for_exit(Duration::from_secs(30))
        .expect("the host exits");
    assert!(status.success(), "{status:?}");
    assert_eq!(
        entries(tmp.path()),
        Vec::<PathBuf>::new(),
        "the copy is removed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_starting_host_sweeps_the_copies_of_processes_that_no_longer_run() {
    let tmp = tempfile::tempdir().unwrap();
    // Above the largest pid Linux hands out (2^22): no process has it.
    let stale = tmp.path().join("reactor-mcp-0123456789ab-4999999-x1");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("libgone.so"), b"a copy").unwrap();
    let unrelated = tmp.path().join("someone-else");
    std::fs::create_dir(&unrelated).unwrap();

    let dir = PluginDir::with(&["benchmarks"]);
    let tmp_path = tmp.path().to_string_lossy().into_owned();
    let mut host = HostProcess::serve_with_env(&dir, &[], &[("TMPDIR", &tmp_path)]);
    host.wait_for_stderr("private copy folder(s)", Duration::from_secs(10));
    assert!(!stale.exists(), "the dead process's folder is swept");
    assert!(unrelated.exists(), "nothing else is");
}
