//! The harness against small `sh` scripts standing in for a server: `sh -c SCRIPT sh ARGS`, so
//! the `--ready-file PATH` the harness adds is `$1 $2` in the script.

use super::*;

/// A script that writes the ready object for `127.0.0.1:4040` and its own pid, the way the host
/// does (to `PATH.tmp`, renamed), says so on stderr, then stays up.
const READY_THEN_SLEEP: &str = r#"
printf '{"url": "http://127.0.0.1:4040/mcp", "address": "127.0.0.1:4040", "pid": %s}' $$ > "$2.tmp"
mv "$2.tmp" "$2"
echo "listening on http://127.0.0.1:4040/mcp" >&2
exec sleep 60
"#;

fn script(text: &str) -> Launch {
    let mut launch = Launch::new("sh");
    launch.args(["-c", text, "sh"]);
    launch
}

#[test]
fn serve_reads_the_ready_file_and_drop_kills_the_process() {
    let (process, ready) = script(READY_THEN_SLEEP).serve().unwrap();
    assert_eq!(ready.url, "http://127.0.0.1:4040/mcp");
    assert_eq!(ready.address, "127.0.0.1:4040".parse().unwrap());
    assert_eq!(ready.pid, process.pid());
    let proc_dir = PathBuf::from(format!("/proc/{}", process.pid()));
    let linux = cfg!(target_os = "linux");
    assert!(!linux || proc_dir.exists());
    drop(process);
    assert!(!proc_dir.exists(), "the process is gone after drop");
}

#[test]
fn a_program_that_exits_before_it_is_ready_fails_at_once_with_its_stderr() {
    let started = Instant::now();
    let error = script("echo 'cannot bind 127.0.0.1:4040' >&2; exit 3")
        .serve()
        .unwrap_err();
    assert!(started.elapsed() < READY_TIMEOUT / 2, "{error}");
    let Error::Exited { status, stderr, .. } = &error else {
        panic!("expected Exited, got {error:?}");
    };
    assert_eq!(status.code(), Some(3));
    assert_eq!(stderr, "cannot bind 127.0.0.1:4040\n");
    assert!(error.to_string().contains("cannot bind"), "{error}");
}

#[test]
fn a_program_that_never_writes_the_file_times_out_with_its_stderr() {
    let error = script("echo starting >&2; exec sleep 60")
        .timeout(Duration::from_millis(300))
        .serve()
        .unwrap_err();
    let Error::TimedOut { stderr, .. } = &error else {
        panic!("expected TimedOut, got {error:?}");
    };
    assert_eq!(stderr, "starting\n");
}

#[test]
fn a_ready_file_that_is_not_the_object_is_an_error() {
    let error = script(r#"echo '{"url": 1}' > "$2"; exec sleep 60"#)
        .serve()
        .unwrap_err();
    assert!(
        matches!(&error, Error::BadReadyFile { reason, .. } if reason.contains("`url`")),
        "{error:?}"
    );
}

#[test]
fn output_is_collected_and_logged_and_the_exit_reported() {
    let dir = ReadyDir::create().unwrap();
    let log = dir.file();
    let mut process = script("echo out; echo err >&2; echo 'second line' >&2")
        .log_to(&log)
        .spawn()
        .unwrap();
    assert_eq!(
        process.wait_for_stderr("second", Duration::from_secs(20)),
        Some("second line".to_owned())
    );
    let status = process.wait_for_exit(Duration::from_secs(20));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    assert_eq!(process.stdout(), "out\n");
    assert_eq!(process.stderr(), "err\nsecond line\n");
    assert_eq!(
        process.wait_for_stderr("absent", Duration::from_secs(20)),
        None
    );
    let logged = fs::read_to_string(&log).unwrap();
    for line in ["out", "err", "second line"] {
        assert!(logged.lines().any(|l| l == line), "{logged}");
    }
}

#[test]
fn the_hosts_variables_and_rust_log_are_left_out_unless_set() {
    assert!(is_left_out(OsStr::new("REACTOR_MCP_PORT")));
    assert!(!is_left_out(OsStr::new("PATH")));
    let command = Launch::new("x")
        .env("REACTOR_MCP_EXTENSIONS", "a")
        .env("RUST_LOG", "debug")
        .command();
    let envs: Vec<_> = command.get_envs().collect();
    assert!(envs.contains(&(OsStr::new("REACTOR_MCP_EXTENSIONS"), Some(OsStr::new("a")))));
    assert!(envs.contains(&(OsStr::new("RUST_LOG"), Some(OsStr::new("debug")))));
    let bare = Launch::new("x").command();
    assert!(bare.get_envs().any(|e| e == (OsStr::new("RUST_LOG"), None)));
}

#[test]
fn a_program_that_cannot_start_is_named() {
    let error = Launch::new("/nonexistent/harness-test-program")
        .serve()
        .unwrap_err();
    assert!(matches!(error, Error::Spawn { .. }), "{error:?}");
    assert!(
        error.to_string().contains("harness-test-program"),
        "{error}"
    );
}
