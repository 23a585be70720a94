//! The hot path end to end: the real host binary, `benchmarks` and `fixture-context`, plain
//! HTTP so the test sees how each request was answered.
//!
//! Covered: in a session, `tools/call`, `tools/list` and `ping` are answered by the host as
//! JSON, with the answer rmcp gives (`--no-hot-path`) as an event stream; a call that reports
//! progress answers as an event stream, progress first; a client that may be sent requests is
//! served by rmcp; `notifications/cancelled` ends a call answered by the host; a 2026-07-28
//! request without a session is answered as JSON, and one whose `Mcp-Name` header contradicts
//! its body still gets rmcp's `400`; under `--stateless`, a plain request too; a list the host
//! writes from its serialised copy is rmcp's, for each protocol era and through a filter.

use std::time::{Duration, Instant};

use e2e::{
    HostProcess, PluginDir,
    mcp::{RawSession, messages, post, post_2026},
};
use serde_json::{Value, json};

fn plugins() -> PluginDir {
    PluginDir::with(&["fixture-context", "benchmarks"])
}

/// The content type of `response`, and its JSON-RPC messages.
async fn read(response: reqwest::Response) -> (u16, String, Vec<Value>) {
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.text().await.unwrap_or_default();
    (status, kind, messages(&body))
}

/// Posts a request in `session`; its status, content type and messages.
async fn ask(
    session: &RawSession,
    id: u64,
    method: &str,
    params: Value,
) -> (u16, String, Vec<Value>) {
    let mut body = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if !params.is_null() {
        body["params"] = params;
    }
    read(post(&session.http, &session.url, Some(&session.id), body).await).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_s_hot_requests_are_answered_as_json_with_rmcp_s_answer() {
    let dir = plugins();
    let hot = HostProcess::serve(&dir, &[]);
    let cold = HostProcess::serve(&dir, &["--no-hot-path"]);
    let mut answers = Vec::new();
    for (host, expected) in [(&hot, "application/json"), (&cold, "text/event-stream")] {
        let session = RawSession::open(&format!("{}/mcp?only=benchmarks", host.base_url())).await;
        let echo = json!({"name": "echo", "arguments": {"text": "hot"}});
        let (status, kind, echoed) = ask(&session, 2, "tools/call", echo).await;
        assert_eq!((status, kind.as_str()), (200, expected), "{echoed:?}");
        let (_, kind, listed) = ask(&session, 3, "tools/list", Value::Null).await;
        assert_eq!(kind, expected);
        let (_, kind, pong) = ask(&session, 4, "ping", Value::Null).await;
        assert_eq!(kind, expected);
        let unknown = json!({"name": "nope", "arguments": {}});
        let (_, _, unknown) = ask(&session, 5, "tools/call", unknown).await;
        answers.push((echoed, listed, pong, unknown));
    }
    let (hot, cold) = (&answers[0], &answers[1]);
    assert_eq!(hot.0, cold.0, "tools/call");
    assert_eq!(hot.0[0]["result"]["content"][0]["text"], "hot");
    assert_eq!(hot.1, cold.1, "tools/list");
    assert_eq!(hot.2, cold.2, "ping");
    assert_eq!(hot.2[0]["result"], json!({}));
    assert_eq!(hot.3, cold.3, "an unknown tool");
    assert_eq!(hot.3[0]["error"]["code"], -32602, "{:?}", hot.3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_from_its_serialised_copy_is_rmcp_s_in_each_era_and_through_a_filter() {
    let dir = plugins();
    let hot = HostProcess::serve(&dir, &[]);
    let cold = HostProcess::serve(&dir, &["--no-hot-path"]);
    let mut answers = Vec::new();
    for host in [&hot, &cold] {
        let mut lists = Vec::new();
        for query in [
            "only=benchmarks",
            "toolsets=benchmarks,context&tools=echo,task_*",
        ] {
            let url = format!("{}/mcp?{query}", host.base_url());
            let session = RawSession::open(&url).await;
            for id in [2, 3] {
                let (_, _, listed) = ask(&session, id, "tools/list", Value::Null).await;
                lists.push(listed);
            }
            let (_, _, modern) =
                read(post_2026(&url, 4, "tools/list", None, json!({})).await).await;
            lists.push(modern);
        }
        answers.push(lists);
    }
    assert_eq!(answers[0], answers[1]);
    let names = |listed: &[Value]| -> Vec<String> {
        listed[0]["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed:?}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let all = names(&answers[0][0]);
    assert!(all.contains(&"echo".to_owned()) && all.len() > 2, "{all:?}");
    let mut filtered = names(&answers[0][3]);
    filtered.sort();
    assert_eq!(filtered, ["echo", "task_elicit", "task_greet", "task_wait"]);
    assert_eq!(
        answers[0][5][0]["result"]["ttlMs"], 0,
        "{:?}",
        answers[0][5]
    );
    assert!(answers[0][0][0]["result"].get("ttlMs").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_reporting_progress_is_answered_as_an_event_stream_progress_first() {
    let dir = plugins();
    let host = HostProcess::serve(&dir, &[]);
    let session = RawSession::open(&format!("{}/mcp?only=context", host.base_url())).await;
    let steps = json!({"name": "steps", "arguments": {"n": 20}, "_meta": {"progressToken": "p"}});
    let (status, kind, answer) = ask(&session, 2, "tools/call", steps).await;
    assert_eq!((status, kind.as_str()), (200, "text/event-stream"));
    e2e::mcp::assert_progress_in_order(&answer, "p", 20);
    assert_eq!(answer.last().unwrap()["id"], 2, "{answer:?}");
    assert_eq!(
        answer.last().unwrap()["result"]["content"][0]["text"],
        "20 steps"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_may_be_sent_requests_is_served_by_rmcp() {
    let dir = plugins();
    let host = HostProcess::serve(&dir, &[]);
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    let http = e2e::http();
    let opened = post(
        &http,
        &url,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"sampling": {}},
            "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    let id = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(&http, &url, Some(&id), initialized).await.status(),
        202
    );
    let session = RawSession { http, url, id };
    let echo = json!({"name": "echo", "arguments": {"text": "cold"}});
    let (status, kind, answer) = ask(&session, 2, "tools/call", echo).await;
    assert_eq!((status, kind.as_str()), (200, "text/event-stream"));
    assert_eq!(answer[0]["result"]["content"][0]["text"], "cold");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_cancels_a_call_the_host_answers() {
    let dir = plugins();
    let host = HostProcess::serve(&dir, &[]);
    let session = RawSession::open(&format!("{}/mcp?only=benchmarks", host.base_url())).await;
    let started = Instant::now();
    let sleep = json!({"name": "sleep", "arguments": {"ms": 60_000}});
    let call = ask(&session, 7, "tools/call", sleep);
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 7, "reason": "enough"}});
        let sent = post(&session.http, &session.url, Some(&session.id), cancelled).await;
        assert_eq!(sent.status(), 202);
    };
    let ((status, _, answer), ()) = tokio::join!(call, cancel);
    let took = started.elapsed();
    println!("a 60 s sleep cancelled after 300 ms: answered in {took:?}: {answer:?}");
    assert!(took < Duration::from_secs(10), "not cancelled: {took:?}");
    assert_eq!(status, 200);
    // The session goes on.
    let echo = json!({"name": "echo", "arguments": {"text": "after"}});
    let (_, _, echoed) = ask(&session, 8, "tools/call", echo).await;
    assert_eq!(echoed[0]["result"]["content"][0]["text"], "after");
}

/// Posts a 2026-07-28 `tools/call` of `echo` without a session, naming `name` in `Mcp-Name`.
async fn call_2026(url: &str, name: &str) -> (u16, String, Vec<Value>) {
    let params = json!({"name": "echo", "arguments": {"text": "modern"}});
    read(post_2026(url, 3, "tools/call", Some(name), params).await).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_request_without_a_session_is_answered_as_json_and_checked_as_rmcp_checks_it() {
    let dir = plugins();
    for flags in [&[][..], &["--stateless"][..]] {
        let host = HostProcess::serve(&dir, flags);
        let url = format!("{}/mcp?only=benchmarks", host.base_url());
        let (status, kind, answer) = call_2026(&url, "echo").await;
        assert_eq!(
            (status, kind.as_str()),
            (200, "application/json"),
            "{answer:?}"
        );
        assert_eq!(answer[0]["result"]["content"][0]["text"], "modern");
        let (status, _, refused) = call_2026(&url, "add").await;
        assert_eq!(status, 400, "{flags:?}: {refused:?}");
        assert!(
            refused[0]["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Mcp-Name")),
            "{refused:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_request_to_a_stateless_server_is_answered_by_the_host() {
    let dir = plugins();
    let host = HostProcess::serve(&dir, &["--stateless"]);
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    let echo = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "plain"}}});
    let (status, kind, answer) = read(post(&e2e::http(), &url, None, echo).await).await;
    assert_eq!((status, kind.as_str()), (200, "application/json"));
    assert_eq!(answer[0]["result"]["content"][0]["text"], "plain");
    let listed = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (_, _, listed) = read(post(&e2e::http(), &url, None, listed).await).await;
    let names: Vec<&str> = listed[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");
}
