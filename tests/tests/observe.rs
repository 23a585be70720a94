//! Observing the server end to end: `--metrics-addr` serves `/metrics` on a listener of its own,
//! read by the Prometheus project's own parser (the official Python client library's, installed
//! by `cargo xtask test`), with the counts and labels of known calls; `--log-format json` writes
//! one JSON object per line.

use std::{
    io::Write as _,
    path::PathBuf,
    process::{Command, Stdio},
    time::Duration,
};

use e2e::{
    HostProcess, PluginDir,
    mcp::{call, call_tool, connect},
    workspace_root,
};
use serde_json::{Value, json};

/// The variable naming a Python with `prometheus-client` (see `xtask/src/prometheus.rs`).
const PYTHON_ENV: &str = "REACTOR_E2E_PROMETHEUS_PYTHON";

/// The Python with the Prometheus client library: from the environment (`cargo xtask test`,
/// which installs it first), else where xtask puts it; `None` (the test is skipped, saying so)
/// when neither.
fn prometheus_python() -> Option<PathBuf> {
    if let Some(python) = std::env::var_os(PYTHON_ENV) {
        let python = PathBuf::from(python);
        assert!(python.is_file(), "{PYTHON_ENV} names no file: {python:?}");
        return Some(python);
    }
    let python = workspace_root().join(".tools/prometheus/python/bin/python");
    if python.is_file() {
        return Some(python);
    }
    eprintln!("SKIPPED: the Prometheus parser is not installed: cargo xtask test installs it");
    None
}

/// Every sample of `text` as the Prometheus client library parses it: name, labels, value.
fn parse(python: &PathBuf, text: &str) -> Vec<(String, Value, f64)> {
    let script = "import json, sys\n\
        from prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
        samples = [[s.name, s.labels, s.value]\n\
                   for family in text_string_to_metric_families(sys.stdin.read())\n\
                   for s in family.samples]\n\
        print(json.dumps(samples))\n";
    let mut child = Command::new(python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the parser refused the text: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    let samples: Vec<(String, Value, f64)> =
        serde_json::from_slice(&output.stdout).expect("the parser's JSON");
    samples
}

/// The value of the sample `name` whose labels include `labels`.
fn value(samples: &[(String, Value, f64)], name: &str, labels: &Value) -> Option<f64> {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name
                && labels
                    .as_object()
                    .unwrap()
                    .iter()
                    .all(|(k, v)| l.get(k) == Some(v))
        })
        .map(|(_, _, v)| *v)
}

/// The address `--metrics-addr 127.0.0.1:0` bound, from the host's line saying it.
fn metrics_url(host: &mut HostProcess) -> String {
    let line = host.wait_for_stderr("metrics on http://", Duration::from_secs(10));
    let start = line.find("http://").unwrap();
    line[start..].trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_known_calls_with_the_conventions_names_and_parse_as_prometheus() {
    let Some(python) = prometheus_python() else {
        return;
    };
    let dir = PluginDir::with(&["benchmarks", "sandboxes"]);
    let mut host = HostProcess::serve(&dir, &["--metrics-addr", "127.0.0.1:0"]);
    let metrics = metrics_url(&mut host);
    assert_ne!(
        metrics,
        format!("{}/metrics", host.base_url()),
        "a listener of its own"
    );
    let client = connect(&format!("{}/mcp?only=benchmarks", host.base_url())).await;
    for _ in 0..3 {
        call_tool(client.peer(), "echo", json!({"text": "hi"})).await;
    }
    for _ in 0..2 {
        call_tool(client.peer(), "add", json!({"a": 2, "b": 3})).await;
    }
    let unknown = client
        .peer()
        .call_tool(call("no_such_tool", json!({})))
        .await;
    assert!(unknown.is_err());
    let _ = client.peer().list_all_tools().await.unwrap();

    let answer = e2e::http().get(&metrics).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert!(
        answer.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text"),
        "{:?}",
        answer.headers()
    );
    let text = answer.text().await.unwrap();
    let samples = parse(&python, &text);
    let operations = "mcp_server_operation_duration_seconds_count";
    let call_of = |tool: &str| {
        json!({"mcp_method_name": "tools/call", "gen_ai_tool_name": tool,
               "mcp_protocol_version": "2025-11-25", "network_transport": "tcp"})
    };
    assert_eq!(
        value(&samples, operations, &call_of("echo")),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, operations, &call_of("add")),
        Some(2.0),
        "{text}"
    );
    let refused = json!({"mcp_method_name": "tools/call", "error_type": "-32602"});
    assert_eq!(value(&samples, operations, &refused), Some(1.0), "{text}");
    assert!(
        !text.contains("no_such_tool"),
        "an unknown name is not a label: {text}"
    );
    let listed = json!({"mcp_method_name": "tools/list"});
    assert_eq!(value(&samples, operations, &listed), Some(1.0), "{text}");
    let benchmarks = json!({"plugin": "benchmarks", "provider": "library"});
    assert_eq!(
        value(&samples, "reactor_plugins_opened_total", &benchmarks),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(
            &samples,
            "reactor_calls_in_flight",
            &json!({"plugin": "benchmarks"})
        ),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "reactor_sessions_open", &json!({})),
        Some(1.0),
        "{text}"
    );
    assert!(
        value(
            &samples,
            "reactor_plugins_opened_total",
            &json!({"plugin": "sandboxes"})
        )
        .is_none(),
        "a plugin no URL named is not opened: {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_flag_there_is_no_metrics_listener() {
    let dir = PluginDir::with(&["benchmarks"]);
    let host = HostProcess::serve(&dir, &[]);
    let client = connect(&format!("{}/mcp?toolsets=benchmarks", host.base_url())).await;
    call_tool(client.peer(), "echo", json!({"text": "hi"})).await;
    assert!(!host.stderr_so_far().contains("metrics on"));
    let (status, _) = e2e::mcp::get_json(&format!("{}/metrics", host.base_url())).await;
    assert_eq!(status, 404, "not on the MCP listener");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_logs_are_one_object_per_line() {
    let dir = PluginDir::with(&["benchmarks"]);
    let host = HostProcess::serve(&dir, &["--log-format", "json"]);
    let client = connect(&format!("{}/mcp?toolsets=benchmarks", host.base_url())).await;
    call_tool(client.peer(), "echo", json!({"text": "hi"})).await;
    let start = std::time::Instant::now();
    let opened = loop {
        let log = host.stderr_so_far();
        let opened = log
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|event| event["fields"]["message"] == "opened plugin");
        if let Some(opened) = opened {
            break opened;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(opened["level"], "INFO", "{opened}");
    assert_eq!(opened["fields"]["plugin"], "benchmarks", "{opened}");
    assert!(opened["timestamp"].is_string(), "{opened}");
    assert!(opened["target"].is_string(), "{opened}");
}
