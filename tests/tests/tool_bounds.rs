//! What a client cannot make a plugin do, end to end: `blob` and `sleep` refuse arguments over
//! their schema's `maximum` (the host refuses before the plugin sees them, and stays up);
//! `sandboxes` keeps each session's sandboxes apart, through `sandboxes-datalayer`'s wrapper too,
//! and bounds their number and name length; a tool reads its session; a plugin whose blocking
//! pool is full answers "busy" at once, and serves again once its calls end.

use std::time::{Duration, Instant};

use e2e::{
    HostProcess, PluginDir,
    mcp::{Client, RawSession, call, call_tool, connect, get_json, text},
};
use rmcp::{
    RoleClient,
    model::{CallToolRequest, CallToolResult, ClientRequest},
    service::{Peer, PeerRequestOptions},
};
use serde_json::{Value, json};

/// How long a test waits for something that should happen within milliseconds.
const PATIENCE: Duration = Duration::from_secs(10);

/// The text of an error result; panics, showing the result, if the call succeeded.
fn error_text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "not an error: {result:?}");
    text(result)
}

/// A successful result's structured content, or its text parsed as JSON.
fn value(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "an error: {}", text(result));
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| serde_json::from_str(&text(result)).expect("JSON text"))
}

/// A host serving `benchmarks`, and a client of `/mcp?only=benchmarks`.
async fn benchmarks() -> (PluginDir, HostProcess, Client) {
    let dir = PluginDir::with(&["benchmarks"]);
    let host = HostProcess::serve(&dir, &[]);
    let client = connect(&format!("{}/mcp?only=benchmarks", host.base_url())).await;
    (dir, host, client)
}

/// Panics unless `result` is the host's refusal of `tool`'s `argument` for being over `max`.
fn assert_over_maximum(result: &CallToolResult, tool: &str, argument: &str, max: u64) {
    let message = error_text(result);
    assert!(
        message.starts_with(&format!(
            "invalid arguments for tool `{tool}`: argument `{argument}`: "
        )) && message.ends_with(&format!("is greater than the maximum of {max}")),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blob_over_its_bound_is_refused_naming_the_field_and_the_host_stays_up() {
    let (_dir, host, client) = benchmarks().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let blob = tools.iter().find(|t| t.name == "blob").expect("blob");
    assert_eq!(
        blob.input_schema["properties"]["bytes"]["maximum"],
        json!(16 * 1024 * 1024)
    );

    let refused = call_tool(&client, "blob", json!({"bytes": 1e15})).await;
    assert_over_maximum(&refused, "blob", "bytes", 16 * 1024 * 1024);
    let (status, _) = get_json(&format!("{}/healthz", host.base_url())).await;
    assert_eq!(status, 200, "the host is still up");
    let small = call_tool(&client, "blob", json!({"bytes": 4096})).await;
    assert_eq!(text(&small).len(), 4096);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sleep_over_an_hour_is_refused_naming_the_field() {
    let (_dir, _host, client) = benchmarks().await;
    let refused = call_tool(&client, "sleep", json!({"ms": 3_600_001})).await;
    assert_over_maximum(&refused, "sleep", "ms", 3_600_000);
    assert_eq!(
        text(&call_tool(&client, "sleep", json!({"ms": 1})).await),
        "slept 1 ms"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_session_sees_and_stops_only_its_own_sandboxes() {
    // With `sandboxes-datalayer`, as `cargo xtask serve` installs them: its wrapper passes the
    // caller's context on, so the session reaches `sandboxes`.
    let dir = PluginDir::with(&["sandboxes", "sandboxes-datalayer"]);
    let host = HostProcess::serve(&dir, &[]);
    let url = format!("{}/mcp?only=sandboxes", host.base_url());
    let a = connect(&url).await;
    let b = connect(&url).await;

    let launched = value(&call_tool(&a, "launch_sandbox", json!({"sandbox_name": "a's"})).await);
    assert_eq!(launched["id"], "sbx-1");
    assert_eq!(
        value(&call_tool(&b, "list_sandboxes", json!({})).await),
        json!([])
    );
    let stop = call_tool(&b, "stop_sandbox", json!({"id": "sbx-1"})).await;
    assert_eq!(error_text(&stop), "you have no sandbox with id sbx-1");
    let own = value(&call_tool(&b, "launch_sandbox", json!({"sandbox_name": "b's"})).await);
    assert_eq!(own["id"], "sbx-1", "ids count per session");

    let listed = value(&call_tool(&a, "list_sandboxes", json!({})).await);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["name"], "a's");
    assert_eq!(listed[0]["status"], "running", "B's stop did not reach it");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_keeps_at_most_32_sandboxes_with_names_of_at_most_128_characters() {
    let dir = PluginDir::with(&["sandboxes"]);
    let host = HostProcess::serve(&dir, &[]);
    let client = connect(&format!("{}/mcp?only=sandboxes", host.base_url())).await;

    let long = call_tool(
        &client,
        "launch_sandbox",
        json!({"sandbox_name": "x".repeat(129)}),
    )
    .await;
    let message = error_text(&long);
    assert!(
        message.starts_with("invalid arguments for tool `launch_sandbox`: argument `sandbox_name`"),
        "{message}"
    );
    let long_variant = call_tool(
        &client,
        "launch_sandbox",
        json!({"sandbox_name": "v", "variant": "y".repeat(129)}),
    )
    .await;
    assert!(error_text(&long_variant).contains("argument `variant`"));

    for n in 1..=32 {
        let name = format!("{n:0>128}");
        let launched =
            value(&call_tool(&client, "launch_sandbox", json!({"sandbox_name": name})).await);
        assert_eq!(launched["id"], format!("sbx-{n}"));
    }
    let one_more = call_tool(&client, "launch_sandbox", json!({"sandbox_name": "33"})).await;
    assert_eq!(
        error_text(&one_more),
        "this space has 32 sandboxes running, the most it may have: stop one first"
    );
    value(&call_tool(&client, "stop_sandbox", json!({"id": "sbx-7"})).await);
    let launched =
        value(&call_tool(&client, "launch_sandbox", json!({"sandbox_name": "33"})).await);
    assert_eq!(launched["id"], "sbx-33");
    let listed = value(&call_tool(&client, "list_sandboxes", json!({})).await);
    assert_eq!(listed.as_array().map(Vec::len), Some(32));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_reads_its_session_and_none_when_stateless() {
    let dir = PluginDir::with(&["fixture-context"]);
    let host = HostProcess::serve(&dir, &[]);
    let session = RawSession::open(&format!("{}/mcp?context", host.base_url())).await;
    let (status, answer) = session
        .request(2, "tools/call", json!({"name": "session", "arguments": {}}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        answer["result"]["content"][0]["text"], session.id,
        "{answer}"
    );

    let stateless = HostProcess::serve(&dir, &["--stateless"]);
    let client = connect(&format!("{}/mcp?context", stateless.base_url())).await;
    assert_eq!(
        text(&call_tool(&client, "session", json!({})).await),
        "null"
    );
}

/// Sends `tools/call NAME {}` without waiting for its answer; the handle cancels it.
async fn start(client: &Peer<RoleClient>, name: &str) -> rmcp::service::RequestHandle<RoleClient> {
    client
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(call(name, json!({})))),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("the call is sent")
}

/// Calls `tool` until `done` holds for its result; that result. Panics after [`PATIENCE`].
async fn call_until(
    client: &Peer<RoleClient>,
    tool: &str,
    what: &str,
    done: impl Fn(&CallToolResult) -> bool,
) -> CallToolResult {
    let started = Instant::now();
    loop {
        let result = call_tool(client, tool, json!({})).await;
        if done(&result) {
            return result;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "{what}: not within {PATIENCE:?}: {result:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// How many of the events `seen` reports are `event`.
fn count(result: &CallToolResult, event: &str) -> usize {
    let events: Vec<String> = serde_json::from_str(&text(result)).expect("a list of strings");
    events.iter().filter(|e| *e == event).count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_blocking_pool_answers_busy_at_once_and_serves_again_when_calls_end() {
    let dir = PluginDir::with(&["fixture-context"]);
    let host = HostProcess::serve_with_env(&dir, &[], &[("REACTOR_MCP_PLUGIN_THREADS", "2")]);
    let client = connect(&format!("{}/mcp?context", host.base_url())).await;

    // Two synchronous calls that run until cancelled hold both of the plugin's threads (`seen`
    // is async, so it watches them without a thread of the pool).
    let first = start(&client, "wait_for_cancel_sync").await;
    call_until(&client, "seen", "the first call runs", |r| {
        count(r, "sync waiting") == 1
    })
    .await;
    let second = start(&client, "wait_for_cancel_sync").await;
    call_until(&client, "seen", "the second call runs", |r| {
        count(r, "sync waiting") == 2
    })
    .await;

    // Another synchronous tool is refused at once, whoever calls it.
    let asked = Instant::now();
    let busy = call_tool(&client, "active", json!({})).await;
    let answered = asked.elapsed();
    eprintln!("a call to a plugin whose pool is full was answered in {answered:?}");
    assert_eq!(
        error_text(&busy),
        "plugin `context` is busy: 2 calls running, try again later"
    );
    assert!(answered < Duration::from_secs(1), "{answered:?}");
    let other = connect(&format!("{}/mcp?context", host.base_url())).await;
    let refused = call_tool(&other, "active", json!({})).await;
    assert!(error_text(&refused).contains("is busy"));
    // An async tool does not use the pool.
    let session = call_tool(&client, "session", json!({})).await;
    assert_ne!(session.is_error, Some(true), "{session:?}");

    first.cancel(None).await.expect("the cancellation is sent");
    second.cancel(None).await.expect("the cancellation is sent");
    call_until(&client, "seen", "both calls end", |r| {
        count(r, "sync saw cancellation") == 2
    })
    .await;
    let active = call_until(&client, "active", "the pool is free again", |r| {
        r.is_error != Some(true)
    })
    .await;
    assert_eq!(value(&active), json!(["context"]));
}
