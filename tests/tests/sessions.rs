//! The bounds on sessions, end to end: the real host with small limits, hand-driven sessions
//! (which, unlike rmcp's client, hold no `GET` stream open, so only their requests count as use)
//! and rmcp's client where a real client side is needed.
//!
//! Covered: an `initialize` beyond `--max-sessions` gets 503 with a JSON-RPC error while earlier
//! sessions keep working; a session idle past `--session-idle-timeout` is closed, answers 404
//! and gives back its place; an open `GET` stream keeps its session until the client drops it;
//! a call longer than the idle timeout gets its answer; subscriptions beyond
//! `--max-subscriptions` or `--max-uri-length` are refused naming the bound; a sampling request
//! the client never answers fails after `--client-request-timeout`.

// Sampling and resources/subscribe are deprecated by SEP-2577 (protocol 2026-07-28); clients of
// 2025-11-25, which these tests speak, still use them.
#![allow(deprecated)]

use std::time::{Duration, Instant};

use e2e::{
    HostProcess, PluginDir,
    mcp::{self, RawSession, call_tool, connect_as, text},
};
use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{ClientInfo, CreateMessageRequestParams, CreateMessageResult, Implementation},
    service::RequestContext,
};
use serde_json::{Value, json};

/// How long a test waits for something that should happen within a second or two.
const PATIENCE: Duration = Duration::from_secs(15);

/// A host serving `crates` with `args`, and its MCP URL with `query`.
fn serve(crates: &[&str], args: &[&str], query: &str) -> (PluginDir, HostProcess, String) {
    let dir = PluginDir::with(crates);
    let host = HostProcess::serve(&dir, args);
    let url = format!("{}/mcp{query}", host.base_url());
    (dir, host, url)
}

/// Posts an `initialize` (id 7) without a session; the HTTP status and the body as JSON.
async fn initialize(url: &str) -> (u16, Value) {
    let response = mcp::initialize(&e2e::http(), url, 7).await;
    let status = response.status().as_u16();
    let body = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// Asserts that `session` is still served: `ping` answers 200 with a result.
async fn assert_served(session: &RawSession, id: u64) {
    let (status, answer) = session.request(id, "ping", json!({})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"], json!({}), "{answer}");
}

/// Polls a server with `--max-sessions 1` with `initialize`s until one is served (the one
/// session there was is closed); how long that took. The polls carry no session id, so they are
/// no use of the session that holds the place.
async fn until_the_place_is_free(url: &str) -> Duration {
    let started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if initialize(url).await.0 == 200 {
            return started.elapsed();
        }
        assert!(started.elapsed() < PATIENCE, "the session was never closed");
    }
}

fn assert_full(status: u16, body: &Value, max: u64) {
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["error"]["code"], -32000, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("full") && message.contains(&format!("{max} sessions")),
        "{message}"
    );
    assert_eq!(body["error"]["data"]["max_sessions"], max, "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_initialize_beyond_the_max_gets_503_and_earlier_sessions_keep_working() {
    let (_dir, _host, url) = serve(&["benchmarks"], &["--max-sessions", "2"], "?benchmarks");
    let first = RawSession::open(&url).await;
    let second = RawSession::open(&url).await;
    for _ in 0..3 {
        let (status, body) = initialize(&url).await;
        assert_full(status, &body, 2);
    }
    assert_served(&first, 2).await;
    let (status, answer) = second
        .request(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");

    // A session the client ends gives its place back.
    let deleted = first
        .http
        .delete(&url)
        .header("mcp-session-id", &first.id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let third = RawSession::open(&url).await;
    assert_served(&third, 4).await;
    assert_served(&second, 5).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_idle_past_the_timeout_is_closed_answers_404_and_gives_back_its_place() {
    let (_dir, _host, url) = serve(
        &["benchmarks"],
        &["--max-sessions", "1", "--session-idle-timeout", "1"],
        "",
    );
    let session = RawSession::open(&url).await;
    assert_served(&session, 2).await;
    let (status, body) = initialize(&url).await;
    assert_full(status, &body, 1);

    let closed_after = until_the_place_is_free(&url).await;
    assert!(
        closed_after >= Duration::from_millis(900),
        "{closed_after:?}"
    );
    let (status, answer) = session.request(3, "ping", json!({})).await;
    assert_eq!(status, 404, "{answer}");
    println!("an idle session was closed {closed_after:?} after its last request");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_get_stream_keeps_its_session_until_the_client_goes() {
    let (_dir, _host, url) = serve(
        &["benchmarks"],
        &["--max-sessions", "1", "--session-idle-timeout", "1"],
        "",
    );
    let session = RawSession::open(&url).await;
    let stream = session
        .http
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_served(&session, 2).await;

    // Polled with session-less initializes (refused while the session holds the one place),
    // which do not count as the session's use.
    drop(stream);
    let closed_after = until_the_place_is_free(&url).await;
    assert_eq!(session.request(3, "ping", json!({})).await.0, 404);
    println!("the session was closed {closed_after:?} after its GET stream was dropped");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_longer_than_the_idle_timeout_gets_its_answer() {
    let (_dir, _host, url) = serve(
        &["benchmarks"],
        &["--session-idle-timeout", "1"],
        "?benchmarks",
    );
    let session = RawSession::open(&url).await;
    let started = Instant::now();
    let (status, answer) = session
        .request(
            2,
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 3000}}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "slept 3000 ms",
        "{answer}"
    );
    assert!(started.elapsed() >= Duration::from_secs(3));
    // The idle time starts when the call's stream ends: the session is still there.
    assert_served(&session, 3).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn subscriptions_beyond_the_count_or_the_uri_length_are_refused_naming_the_bound() {
    let (_dir, _host, url) = serve(
        &["fixture-library"],
        &["--max-subscriptions", "2", "--max-uri-length", "64"],
        "?library",
    );
    let session = RawSession::open(&url).await;
    let subscribe = async |id: u64, uri: &str| {
        let (status, answer) = session
            .request(id, "resources/subscribe", json!({"uri": uri}))
            .await;
        assert_eq!(status, 200, "{answer}");
        answer
    };
    for (id, uri) in [(2, "library://note"), (3, "library://books/1")] {
        let answer = subscribe(id, uri).await;
        assert_eq!(answer["result"], json!({}), "{uri}: {answer}");
    }
    // Subscribing again to a URI held is no new subscription.
    assert_eq!(subscribe(4, "library://note").await["result"], json!({}));

    let answer = subscribe(5, "library://books/2").await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("--max-subscriptions"), "{message}");
    assert_eq!(answer["error"]["data"]["max_subscriptions"], 2, "{answer}");

    let long = format!("library://books/{}", "9".repeat(100));
    let answer = subscribe(6, &long).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("--max-uri-length"), "{message}");
    assert_eq!(answer["error"]["data"]["max_uri_length"], 64, "{answer}");
    assert_eq!(
        answer["error"]["data"]["uri_length"],
        long.len(),
        "{answer}"
    );

    // Unsubscribing makes room.
    let (status, answer) = session
        .request(7, "resources/unsubscribe", json!({"uri": "library://note"}))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(subscribe(8, "library://books/2").await["result"], json!({}));
}

/// A client that declares sampling and never answers it.
#[derive(Debug, Clone, Default)]
struct Silent;

impl ClientHandler for Silent {
    fn get_info(&self) -> ClientInfo {
        ClientInfo::new(
            serde_json::from_value(json!({"sampling": {}})).expect("client capabilities"),
            Implementation::new("e2e-silent", "1"),
        )
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        std::future::pending().await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sampling_request_the_client_never_answers_fails_after_the_timeout() {
    let (_dir, _host, url) = serve(
        &["fixture-context"],
        &["--client-request-timeout", "1"],
        "?context",
    );
    let client = connect_as(&url, Silent).await;
    let started = Instant::now();
    let result = tokio::time::timeout(
        PATIENCE,
        call_tool(&client, "sample", json!({"prompt": "hello"})),
    )
    .await
    .expect("the call ends once the sampling request times out");
    let took = started.elapsed();
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let message = text(&result);
    assert!(
        message.contains("sampling/createMessage")
            && message.contains("within 1 s")
            && message.contains("--client-request-timeout"),
        "{message}"
    );
    assert!(took >= Duration::from_secs(1), "{took:?}");
    println!("an unanswered sampling request failed after {took:?}");
    client.cancel().await.ok();
}

/// Ends the session `id` at `url` with a `DELETE`; the HTTP status.
async fn end_session(url: &str, id: &str) -> u16 {
    e2e::http()
        .delete(url)
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread")]
async fn ending_a_session_answers_204_and_ending_one_not_open_answers_404() {
    let (_dir, _host, url) = serve(&["benchmarks"], &[], "?only=benchmarks");
    let session = RawSession::open(&url).await;
    assert_eq!(end_session(&url, &session.id).await, 204);
    assert_eq!(end_session(&url, &session.id).await, 404, "ended already");
    assert_eq!(end_session(&url, "no-such-session").await, 404);
    let (status, _) = session.request(2, "tools/list", json!({})).await;
    assert_eq!(status, 404, "an ended session is not found");
}
