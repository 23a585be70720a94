//! Plugins' own logs end to end: `fixture-logs` logs through `tracing` and the `log` crate
//! when it is built and in a tool; the real host writes each event to its own log under target
//! `plugin::logs` with a `plugin` field and the plugin's fields, filtered by `RUST_LOG` on the
//! host's side, as text and as JSON (`--log-format json`), in process and `--isolate`d (where
//! the child hands them to the host over its pipe).

use std::time::{Duration, Instant};

use e2e::{
    HostProcess, PluginDir,
    mcp::{call_tool, connect, text},
};
use serde_json::{Value, json};

/// A host serving `fixture-logs` with `extra` flags, logging at `rust_log`.
fn serve(extra: &[&str], rust_log: &str) -> (PluginDir, HostProcess) {
    let dir = PluginDir::with(&["fixture-logs"]);
    let host = HostProcess::serve_with_env(&dir, extra, &[("RUST_LOG", rust_log)]);
    (dir, host)
}

/// Calls `chatty` with `n` 3 through a new client.
async fn call_chatty(host: &HostProcess) {
    let client = connect(&format!("{}/mcp?only=logs", host.base_url())).await;
    let answer = call_tool(client.peer(), "chatty", json!({"n": 3})).await;
    assert_eq!(text(&answer), "logged about 3");
}

/// The JSON log line whose message is `message`, waiting up to 10 s for it.
async fn json_line(host: &HostProcess, message: &str) -> Value {
    let start = Instant::now();
    loop {
        let log = host.stderr_so_far();
        let found = log
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|event| event["fields"]["message"] == message);
        if let Some(found) = found {
            return found;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no line says `{message}`:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts that the host's JSON log has `chatty`'s info event, with its fields and the
/// plugin's name, and its `log` warning, both under target `plugin::logs`.
async fn assert_chatty_lines(host: &HostProcess) {
    let called = json_line(host, "chatty was called").await;
    assert_eq!(called["level"], "INFO", "{called}");
    assert_eq!(called["target"], "plugin::logs", "{called}");
    assert_eq!(
        called["fields"],
        json!({"message": "chatty was called", "n": 3, "words": "some words", "plugin": "logs"}),
        "{called}"
    );
    let warned = json_line(host, "chatty warns about 3").await;
    assert_eq!(warned["level"], "WARN", "{warned}");
    assert_eq!(warned["target"], "plugin::logs", "{warned}");
    assert_eq!(warned["fields"]["plugin"], "logs", "{warned}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugins_tracing_and_log_events_reach_the_hosts_log_with_its_name_and_fields() {
    let (_dir, mut host) = serve(&[], "info");
    call_chatty(&host).await;
    let timeout = Duration::from_secs(10);
    let built = host.wait_for_stderr("logs is built", timeout);
    assert!(built.contains(" INFO "), "{built}");
    assert!(built.contains("plugin::logs"), "{built}");
    assert!(built.contains("version=1"), "{built}");
    assert!(built.contains(r#"plugin="logs""#), "{built}");
    let warned = host.wait_for_stderr("logs warns while it is built", timeout);
    assert!(
        warned.contains(" WARN ") && warned.contains("plugin::logs"),
        "{warned}"
    );
    let called = host.wait_for_stderr("chatty was called", timeout);
    assert!(called.contains("plugin::logs"), "{called}");
    assert!(called.contains("n=3"), "{called}");
    assert!(called.contains(r#"words="some words""#), "{called}");
    let warned = host.wait_for_stderr("chatty warns about 3", timeout);
    assert!(
        warned.contains(" WARN ") && warned.contains("plugin::logs"),
        "{warned}"
    );
    assert!(
        !host.stderr_so_far().contains("chatty's debug line"),
        "RUST_LOG=info drops the plugin's debug events"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_log_lets_one_plugins_debug_events_through() {
    let (_dir, mut host) = serve(&[], "info,plugin::logs=debug");
    call_chatty(&host).await;
    let debug = host.wait_for_stderr("chatty's debug line", Duration::from_secs(10));
    assert!(debug.contains("DEBUG") && debug.contains("n=3"), "{debug}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugins_events_are_json_lines_with_their_fields() {
    let (_dir, host) = serve(&["--log-format", "json"], "info");
    call_chatty(&host).await;
    let built = json_line(&host, "logs is built").await;
    assert_eq!(built["target"], "plugin::logs", "{built}");
    assert_eq!(built["fields"]["version"], 1, "{built}");
    assert_chatty_lines(&host).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_isolated_plugins_events_cross_the_pipe_to_the_hosts_log() {
    let (_dir, host) = serve(&["--isolate", "logs", "--log-format", "json"], "info");
    call_chatty(&host).await;
    assert_chatty_lines(&host).await;
    let built = json_line(&host, "logs is built").await;
    assert_eq!(built["target"], "plugin::logs", "{built}");
    assert_eq!(
        built["fields"],
        json!({"message": "logs is built", "version": 1, "plugin": "logs"}),
        "{built}"
    );
}
