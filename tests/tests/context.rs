//! Tools that talk back, end to end: the real host binary, `fixture-context` and `benchmarks`,
//! and rmcp's client with a handler that records log messages and progress and answers sampling
//! and elicitation (a second client declares neither capability).
//!
//! Covered: log messages filtered by the session's level; progress in order, and only when asked
//! for; cancellation reaching the plugin at once (timings printed); sampling and elicitation
//! round trips, and their clear failures without the capability or without a session; the
//! active toolsets; results built with `ToolResult`; a wrapper passing its context on; one tool
//! body (and one prompt) asking for inputs under both protocol versions, round by round under
//! 2026-07-28, with a tampered state refused. The
//! log, progress, cancellation and sampling tests run a second time with `fixture-context`
//! isolated (`--isolate context`).

// Logging, sampling and elicitation types are deprecated by SEP-2577 (protocol 2026-07-28);
// clients of 2025-11-25, which these tests speak, still use them.
#![allow(deprecated)]

use std::time::{Duration, Instant};

use e2e::{
    HostProcess, PluginDir,
    mcp::{RawSession, Recorded, call, call_tool, connect_2026, connect_as, text},
};
use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServiceError,
    model::{
        CacheScope, CallToolRequest, CallToolResponse, CallToolResult, ClientInfo, ClientRequest,
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        ErrorCode, GetPromptRequestParams, Implementation, InputRequiredResult, InputResponses,
        ListToolsResult, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
        RequestMetaObject, ResultType, SetLevelRequestParams,
    },
    service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService},
};
use serde_json::{Value, json};

/// The host's flags that run `fixture-context` in a child process.
const ISOLATED: &[&str] = &["--isolate", "context"];

/// How long a test waits for something that should happen within milliseconds.
const PATIENCE: Duration = Duration::from_secs(10);

/// A client that records what the server sends it and, when `capable`, declares and answers
/// sampling and elicitation.
#[derive(Debug, Clone, Default)]
struct Recorder {
    capable: bool,
    logs: Recorded<LoggingMessageNotificationParam>,
    progress: Recorded<ProgressNotificationParam>,
}

impl Recorder {
    fn capable() -> Self {
        Self {
            capable: true,
            ..Self::default()
        }
    }

    fn logs(&self) -> Vec<LoggingMessageNotificationParam> {
        self.logs.all()
    }

    fn progress(&self) -> Vec<ProgressNotificationParam> {
        self.progress.all()
    }

    fn forget(&self) {
        self.logs.clear();
        self.progress.clear();
    }
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientInfo {
        let capabilities = if self.capable {
            json!({"sampling": {}, "elicitation": {}})
        } else {
            json!({})
        };
        ClientInfo::new(
            serde_json::from_value(capabilities).expect("client capabilities"),
            Implementation::new("e2e-context", "1"),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Ok(e2e::mcp::sampled(&params))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).unwrap_or_default();
        assert_eq!(asked["requestedSchema"]["required"], json!(["name"]));
        Ok(
            serde_json::from_value(json!({"action": "accept", "content": {"name": "Ada"}}))
                .expect("an elicitation result"),
        )
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.push(params);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.push(params);
    }
}

type Client = RunningService<RoleClient, Recorder>;

/// Waits until `done` holds, checking every 5 ms; how long it took. Panics after [`PATIENCE`].
async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done().await {
        assert!(
            started.elapsed() < PATIENCE,
            "{what}: not within {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    started.elapsed()
}

fn plugins() -> PluginDir {
    PluginDir::with(&["fixture-context", "benchmarks"])
}

/// A host serving `fixture-context` and `benchmarks`, and the URL of its `context` toolset, for
/// clients of either protocol version; the folder is held for the test's length.
fn serve_context() -> (PluginDir, HostProcess, String) {
    let dir = plugins();
    let host = HostProcess::serve(&dir, &[]);
    let url = format!("{}/mcp?context", host.base_url());
    (dir, host, url)
}

/// A host serving `fixture-context` and `benchmarks` (with `host_args`), and a client of
/// `/mcp?QUERY` with this handler; the folder is held for the test's length.
async fn start(
    query: &str,
    host_args: &[&str],
    recorder: Recorder,
) -> (PluginDir, HostProcess, Client) {
    let dir = plugins();
    let host = HostProcess::serve(&dir, host_args);
    let client = connect_as(&format!("{}/mcp?{query}", host.base_url()), recorder).await;
    (dir, host, client)
}

fn levels(logs: &[LoggingMessageNotificationParam]) -> Vec<String> {
    logs.iter()
        .map(|l| {
            serde_json::to_value(l.level)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_request_gets_logs_at_the_level_it_asks_and_none_without() {
    let (_dir, _host, url) = serve_context();
    let recorder = Recorder::default();
    let client = connect_2026(&url, recorder.clone()).await;
    let log_levels = async |asked: Option<LoggingLevel>| {
        let mut meta = RequestMetaObject::new();
        if let Some(level) = asked {
            meta.set_log_level(level);
        }
        let mut options = PeerRequestOptions::no_options();
        options.meta = Some(meta);
        let request = CallToolRequest::new(call("log_levels", json!({})));
        client
            .peer()
            .send_request_with_option(ClientRequest::CallToolRequest(request), options)
            .await
            .expect("the call is sent")
            .await_response()
            .await
            .expect("the call is answered");
        // Nothing more comes than what arrived by then: the rest was filtered out.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut logs = recorder.logs();
        logs.sort_by_key(|l| l.data["n"].as_u64());
        recorder.forget();
        levels(&logs)
    };
    assert_eq!(
        log_levels(Some(LoggingLevel::Critical)).await,
        ["critical", "alert", "emergency"]
    );
    assert!(log_levels(None).await.is_empty(), "no logLevel, no logs");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_call_that_needs_an_undeclared_capability_is_the_protocols_error() {
    let (_dir, _host, url) = serve_context();
    let client = connect_2026(&url, Recorder::default()).await;
    let refused = client
        .call_tool(call("sample", json!({"prompt": "hi"})))
        .await
        .expect_err("the client did not declare sampling");
    let ServiceError::McpError(error) = refused else {
        panic!("not an MCP error: {refused}");
    };
    assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert_eq!(
        error.data,
        Some(json!({"requiredCapabilities": {"sampling": {}}}))
    );
    // A 2025-11-25 client has no such error: the tool's own error is its result.
    let legacy = connect_as(&url, Recorder::default()).await;
    let result = call_tool(&legacy, "sample", json!({"prompt": "hi"})).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_carry_2026_cache_hints_in_a_stable_order() {
    let (_dir, _host, url) = serve_context();
    let current = connect_2026(&url, Recorder::default()).await;
    let tools = current.list_tools(None).await.expect("tools/list answers");
    let prompts = current
        .list_prompts(None)
        .await
        .expect("prompts/list answers");
    for (list, hints) in [
        ("tools", (tools.ttl_ms, tools.cache_scope)),
        ("prompts", (prompts.ttl_ms, prompts.cache_scope)),
    ] {
        // Fresh for no time (lists change with the plugins), the same for every caller.
        assert_eq!(hints, (Some(0), Some(CacheScope::Public)), "{list}");
    }
    let names = |tools: &ListToolsResult| -> Vec<String> {
        tools.tools.iter().map(|t| t.name.to_string()).collect()
    };
    let again = connect_2026(&url, Recorder::default()).await;
    let listed = again.list_tools(None).await.expect("tools/list answers");
    assert_eq!(names(&listed), names(&tools));
    let legacy = connect_as(&url, Recorder::default()).await;
    let legacy = legacy.list_tools(None).await.expect("tools/list answers");
    assert_eq!((legacy.ttl_ms, legacy.cache_scope), (None, None));
    assert_eq!(names(&legacy), names(&tools));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_result_built_by_the_tool_says_complete_under_2026_only() {
    let (_dir, _host, url) = serve_context();
    let current = connect_2026(&url, Recorder::default()).await;
    let picture = call_tool(&current, "picture", json!({})).await;
    assert_eq!(picture.result_type, Some(ResultType::COMPLETE));
    let legacy = connect_as(&url, Recorder::default()).await;
    let picture = call_tool(&legacy, "picture", json!({})).await;
    assert_eq!(picture.result_type, None, "rmcp strips it for 2025-11-25");
}

#[tokio::test(flavor = "multi_thread")]
async fn log_messages_arrive_filtered_by_the_sessions_level() {
    log_messages_arrive_filtered_by_the_sessions_level_in(&[]).await;
}

/// The same with `fixture-context` isolated: the `Context` crosses the child's pipe.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_log_messages_arrive_filtered_by_the_sessions_level() {
    log_messages_arrive_filtered_by_the_sessions_level_in(ISOLATED).await;
}

async fn log_messages_arrive_filtered_by_the_sessions_level_in(host_args: &[&str]) {
    let recorder = Recorder::default();
    let (_dir, _host, client) = start("context", host_args, recorder.clone()).await;
    let info = client.peer_info().expect("server info");
    assert!(info.capabilities.logging.is_some(), "logging is declared");

    let all = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
    for (set, expected) in [
        (None, &all[1..]),
        (Some(LoggingLevel::Warning), &all[3..]),
        (Some(LoggingLevel::Debug), &all[..]),
        (Some(LoggingLevel::Emergency), &all[7..]),
    ] {
        recorder.forget();
        if let Some(level) = set {
            client
                .set_level(SetLevelRequestParams::new(level))
                .await
                .expect("logging/setLevel is answered");
        }
        let result = call_tool(&client, "log_levels", json!({})).await;
        assert_eq!(text(&result), "logged at 8 levels");
        until("the log messages", async || {
            recorder.logs().len() >= expected.len()
        })
        .await;
        // Nothing more comes: the rest was filtered out.
        tokio::time::sleep(Duration::from_millis(100)).await;
        // rmcp's client handles each notification on a task of its own: order them as sent.
        let mut logs = recorder.logs();
        logs.sort_by_key(|l| l.data["n"].as_u64());
        assert_eq!(levels(&logs), expected, "after setLevel {set:?}");
        for log in &logs {
            assert_eq!(log.logger.as_deref(), Some("context"));
            assert_eq!(log.data["level"], serde_json::to_value(log.level).unwrap());
        }
    }
}

/// rmcp's client handles each notification on a task of its own, so the order its handler sees
/// is not the wire's: this test checks what arrives, the raw one below checks the order.
#[tokio::test(flavor = "multi_thread")]
async fn every_progress_report_reaches_the_client() {
    every_progress_report_reaches_the_client_in(&[]).await;
}

/// The same with `fixture-context` isolated: the `Context` crosses the child's pipe.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_every_progress_report_reaches_the_client() {
    every_progress_report_reaches_the_client_in(ISOLATED).await;
}

async fn every_progress_report_reaches_the_client_in(host_args: &[&str]) {
    let recorder = Recorder::default();
    let (_dir, _host, client) = start("context", host_args, recorder.clone()).await;
    // rmcp's client sends a progress token with every request.
    let result = call_tool(&client, "steps", json!({"n": 200})).await;
    assert_eq!(text(&result), "200 steps");
    until("200 progress reports", async || {
        recorder.progress().len() >= 200
    })
    .await;
    let mut progress = recorder.progress();
    progress.sort_by(|a, b| a.progress.total_cmp(&b.progress));
    assert_eq!(progress.len(), 200);
    for (i, report) in progress.iter().enumerate() {
        assert_eq!(report.progress, (i + 1) as f64);
        assert_eq!(report.total, Some(200.0));
        assert_eq!(
            report.message.as_deref(),
            Some(format!("step {}", i + 1).as_str())
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_arrives_in_order_only_for_a_progress_token_and_before_the_result() {
    let dir = plugins();
    let host = HostProcess::serve(&dir, &[]);
    let session = RawSession::open(&format!("{}/mcp?context", host.base_url())).await;
    let (_, without) = session
        .exchange(
            2,
            "tools/call",
            json!({"name": "steps", "arguments": {"n": 5}}),
        )
        .await;
    assert!(
        without
            .iter()
            .all(|m| m["method"] != "notifications/progress"),
        "no token, no progress: {without:?}"
    );
    assert_eq!(
        without.last().unwrap()["result"]["content"][0]["text"],
        "5 steps"
    );

    let (_, with) = session
        .exchange(
            3,
            "tools/call",
            json!({"name": "steps", "arguments": {"n": 100}, "_meta": {"progressToken": "p-1"}}),
        )
        .await;
    e2e::mcp::assert_progress_in_order(&with, "p-1", 100);
    assert_eq!(
        with.last().unwrap()["id"],
        3,
        "the result comes after every report"
    );
}

/// Starts `tool` (which waits for a cancellation) as a cancellable request, waits until the
/// plugin is running it, cancels it; the handle's time of cancellation.
async fn start_and_cancel(
    client: &Client,
    tool: &str,
    arguments: Value,
    running: impl AsyncFnOnce(),
) -> Instant {
    let handle = client
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(call(tool, arguments))),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("the call is sent");
    running().await;
    let cancelled = Instant::now();
    handle
        .cancel(Some("the test cancels it".to_owned()))
        .await
        .expect("the cancellation is sent");
    cancelled
}

async fn seen(client: &Client) -> Vec<String> {
    // A list is served as its JSON text.
    let result = call_tool(client, "seen", json!({})).await;
    serde_json::from_str(&text(&result)).expect("a list of strings")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_stops_at_once_and_the_plugin_sees_it() {
    a_cancelled_call_stops_at_once_and_the_plugin_sees_it_in(&[]).await;
}

/// The same with `fixture-context` isolated: the `Context` crosses the child's pipe.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_a_cancelled_call_stops_at_once_and_the_plugin_sees_it() {
    a_cancelled_call_stops_at_once_and_the_plugin_sees_it_in(ISOLATED).await;
}

async fn a_cancelled_call_stops_at_once_and_the_plugin_sees_it_in(host_args: &[&str]) {
    let (_dir, mut host, client) =
        start("context&benchmarks", host_args, Recorder::default()).await;
    // Open both plugins first, so the timings are of cancellation only.
    call_tool(&client, "sleep", json!({"ms": 1})).await;
    assert!(seen(&client).await.is_empty());

    // benchmarks' sleep: the host stops waiting as soon as the cancellation arrives.
    let cancelled = start_and_cancel(&client, "sleep", json!({"ms": 60_000}), async || {
        tokio::time::sleep(Duration::from_millis(200)).await;
    })
    .await;
    host.wait_for_stderr("call cancelled", PATIENCE);
    let freed = cancelled.elapsed();
    let started = Instant::now();
    assert_eq!(
        text(&call_tool(&client, "echo", json!({"text": "next"})).await),
        "next"
    );
    eprintln!(
        "cancelled sleep(60 s): the host stopped waiting {freed:?} after the cancellation was sent; \
         the next call took {:?}",
        started.elapsed()
    );
    assert!(freed < Duration::from_secs(1), "{freed:?}");

    // The fixture's async and sync waiters record that they saw the cancellation, well before
    // the grace period after which an async tool would be dropped.
    for (tool, waiting, saw) in [
        (
            "wait_for_cancel",
            "async waiting",
            "async saw cancellation: is_cancelled=true",
        ),
        (
            "wait_for_cancel_sync",
            "sync waiting",
            "sync saw cancellation",
        ),
    ] {
        let cancelled = start_and_cancel(&client, tool, json!({}), async || {
            until(waiting, async || {
                seen(&client).await.iter().any(|s| s == waiting)
            })
            .await;
        })
        .await;
        until(saw, async || seen(&client).await.iter().any(|s| s == saw)).await;
        let noticed = cancelled.elapsed();
        eprintln!("{tool}: the plugin saw the cancellation {noticed:?} after it was sent");
        assert!(noticed < Duration::from_secs(1), "{tool}: {noticed:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_and_elicitation_round_trip_with_a_capable_client() {
    sampling_and_elicitation_round_trip_with_a_capable_client_in(&[]).await;
}

/// The same with `fixture-context` isolated: the `Context` crosses the child's pipe.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_sampling_and_elicitation_round_trip_with_a_capable_client() {
    sampling_and_elicitation_round_trip_with_a_capable_client_in(ISOLATED).await;
}

async fn sampling_and_elicitation_round_trip_with_a_capable_client_in(host_args: &[&str]) {
    let (_dir, _host, client) = start("context", host_args, Recorder::capable()).await;

    let sampled = call_tool(&client, "sample", json!({"prompt": "hello"})).await;
    assert_eq!(sampled.is_error, Some(false), "{sampled:?}");
    let answer = sampled.structured_content.expect("the client's answer");
    assert_eq!(answer["model"], "e2e-model");
    assert_eq!(answer["role"], "assistant");
    assert_eq!(answer["content"]["text"], "you said: hello");

    let elicited = call_tool(&client, "elicit", json!({"message": "Your name?"})).await;
    assert_eq!(
        elicited.structured_content,
        Some(json!({"action": "accept", "content": {"name": "Ada"}}))
    );

    let capabilities = call_tool(&client, "capabilities", json!({})).await;
    let capabilities = capabilities.structured_content.expect("an object");
    assert!(capabilities.get("sampling").is_some(), "{capabilities}");
    assert!(capabilities.get("elicitation").is_some(), "{capabilities}");
}

/// What `greet` answers when the client says it is Ada and its model says "you said: hello".
const GREETED: &str = r#""you said: hello", "Ada"! ("Ada")"#;

/// How many times `greet` ran so far in the plugin's process.
async fn greet_runs(client: &Client) -> usize {
    seen(client)
        .await
        .iter()
        .filter(|s| *s == "greet ran")
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn one_tool_body_asks_a_2025_client_on_its_session_and_a_2026_client_in_rounds() {
    one_tool_body_asks_both_protocol_versions_in(&[]).await;
}

/// The same with `fixture-context` isolated: the child asks through its parent.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_one_tool_body_asks_a_2025_client_on_its_session_and_a_2026_client_in_rounds() {
    one_tool_body_asks_both_protocol_versions_in(ISOLATED).await;
}

async fn one_tool_body_asks_both_protocol_versions_in(host_args: &[&str]) {
    let dir = plugins();
    let host = HostProcess::serve(&dir, host_args);
    let url = format!("{}/mcp?context", host.base_url());

    // 2025-11-25: the inputs are requests on the session, and the tool runs once.
    let legacy = connect_as(&url, Recorder::capable()).await;
    assert_eq!(text(&call_tool(&legacy, "greet", json!({})).await), GREETED);
    assert_eq!(greet_runs(&legacy).await, 1);

    // 2026-07-28: rmcp's client answers each input-required round; the tool runs once per
    // round, from the start.
    let current = connect_2026(&url, Recorder::capable()).await;
    let result = current
        .call_tool(call("greet", json!({})))
        .await
        .expect("the rounds end with a result");
    assert_eq!(text(&result), GREETED);
    assert_eq!(greet_runs(&legacy).await, 1 + 3);

    // Round by round: the first asks for the `ask`'s two inputs under their keys ...
    let round = async |params| match current.call_tool_once(params).await {
        Ok(CallToolResponse::InputRequired(needs)) => needs,
        other => panic!("not an input-required result: {other:?}"),
    };
    let first = round(call("greet", json!({}))).await;
    let keys = |needs: &InputRequiredResult| -> Vec<String> {
        needs
            .input_requests
            .iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect()
    };
    assert_eq!(keys(&first), ["greeting", "name"]);
    let state = first.request_state.clone().expect("a state to echo");
    let answers = InputResponses::from([
        (
            "name".to_owned(),
            json!({"action": "accept", "content": {"name": "Ada"}}),
        ),
        (
            "greeting".to_owned(),
            json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}}),
        ),
    ]);
    // ... a tampered state is refused ...
    let mut tampered = call("greet", json!({}));
    tampered.input_responses = Some(answers.clone());
    tampered.request_state = Some(format!("{state}x"));
    let Err(ServiceError::McpError(refused)) = current.call_tool_once(tampered).await else {
        panic!("a tampered state was not refused");
    };
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
    assert!(
        refused.message.starts_with("requestState refused"),
        "{}",
        refused.message
    );
    // ... and the second asks for the single request, keyed by its method and place, in a
    // new state that carries the first answers.
    let mut second = call("greet", json!({}));
    second.input_responses = Some(answers);
    second.request_state = Some(state.clone());
    let second = round(second).await;
    assert_eq!(keys(&second), ["elicitation-1"]);
    let next = second.request_state.expect("a state to echo");
    assert_ne!(next, state);
    let mut last = call("greet", json!({}));
    last.input_responses = Some(InputResponses::from([(
        "elicitation-1".to_owned(),
        json!({"action": "accept", "content": {"name": "Grace"}}),
    )]));
    last.request_state = Some(next);
    let Ok(CallToolResponse::Complete(done)) = current.call_tool_once(last).await else {
        panic!("the last round did not complete");
    };
    assert_eq!(text(&done), r#""hi", "Ada"! ("Grace")"#);

    // A prompt asks the same way.
    let prompt = |client: &Client| {
        let client = client.peer().clone();
        async move {
            let got = client
                .get_prompt(GetPromptRequestParams::new("introduce"))
                .await
                .expect("the prompt is got");
            serde_json::to_value(&got.messages).unwrap()[0]["content"]["text"].clone()
        }
    };
    assert_eq!(prompt(&legacy).await, json!(r#"Introduce "Ada""#));
    let got = current
        .get_prompt(GetPromptRequestParams::new("introduce"))
        .await
        .expect("the prompt's rounds end with a result");
    assert_eq!(
        serde_json::to_value(&got.messages).unwrap()[0]["content"]["text"],
        json!(r#"Introduce "Ada""#)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_and_elicitation_fail_clearly_without_the_capability() {
    let (_dir, _host, client) = start("context", &[], Recorder::default()).await;
    for (tool, arguments, says) in [
        (
            "sample",
            json!({"prompt": "hello"}),
            "cannot send sampling/createMessage: the client did not declare the `sampling` capability",
        ),
        (
            "elicit",
            json!({"message": "Your name?"}),
            "cannot send elicitation/create: the client did not declare the `elicitation` capability",
        ),
        (
            "ask_unknown",
            json!({}),
            "the server does not send `tools/list` to clients",
        ),
    ] {
        let result = call_tool(&client, tool, arguments).await;
        assert_eq!(result.is_error, Some(true), "{tool}: {result:?}");
        assert!(text(&result).contains(says), "{tool}: {}", text(&result));
    }
    assert_eq!(
        call_tool(&client, "capabilities", json!({}))
            .await
            .structured_content,
        Some(json!({}))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateless_server_refuses_client_requests_at_once() {
    let (_dir, _host, client) = start("context", &["--stateless"], Recorder::capable()).await;
    let started = Instant::now();
    let result = tokio::time::timeout(
        PATIENCE,
        call_tool(&client, "sample", json!({"prompt": "hello"})),
    )
    .await
    .expect("no hang");
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains(
            "cannot send sampling/createMessage to the client: this request is not part of a session"
        ),
        "{}",
        text(&result)
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_reads_the_requests_active_toolsets() {
    let dir = plugins();
    let host = HostProcess::serve(&dir, &[]);
    for (query, active) in [
        ("only=context", json!(["context"])),
        ("context&benchmarks", json!(["benchmarks", "context"])),
    ] {
        let client = connect_as(
            &format!("{}/mcp?{query}", host.base_url()),
            Recorder::default(),
        )
        .await;
        let result = call_tool(&client, "active", json!({})).await;
        assert_eq!(text(&result), active.to_string(), "{query}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_context_is_not_an_argument() {
    let (_dir, _host, client) = start("context", &[], Recorder::default()).await;
    let tools = client.list_all_tools().await.expect("tools/list answers");
    let schema = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).expect("listed");
        serde_json::to_value(&tool.input_schema).unwrap()
    };
    assert_eq!(schema("steps")["required"], json!(["n"]));
    assert_eq!(
        schema("steps")["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["n"]
    );
    let none = schema("log_levels");
    assert!(
        none["properties"].as_object().is_none_or(|p| p.is_empty()),
        "{none}"
    );
    let refused = call_tool(&client, "log_levels", json!({"ctx": 1})).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn results_built_by_the_tool_are_served_as_built() {
    let (_dir, _host, client) = start("context", &[], Recorder::default()).await;
    let kinds = |result: &CallToolResult| -> Vec<String> {
        serde_json::to_value(&result.content)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap().to_owned())
            .collect()
    };

    let picture = call_tool(&client, "picture", json!({})).await;
    let json = serde_json::to_value(&picture).unwrap();
    assert_eq!(json["content"][0]["type"], "image");
    assert_eq!(json["content"][0]["mimeType"], "image/png");
    assert!(
        json["content"][0]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBOR")
    );

    let sound = call_tool(&client, "sound", json!({})).await;
    assert_eq!(kinds(&sound), ["audio"]);

    let mixed = call_tool(&client, "mixed", json!({})).await;
    assert_eq!(
        kinds(&mixed),
        [
            "text",
            "image",
            "audio",
            "resource",
            "resource",
            "resource_link"
        ]
    );
    assert_eq!(mixed.structured_content, Some(json!({"kinds": 6})));
    let json = serde_json::to_value(&mixed).unwrap();
    assert_eq!(json["content"][3]["resource"]["text"], "embedded text");
    assert_eq!(json["content"][4]["resource"]["blob"], "AAEC");
    assert_eq!(json["content"][5]["description"], "A linked resource");

    let soft = call_tool(&client, "soft_error", json!({})).await;
    assert_eq!(soft.is_error, Some(true));
    assert_eq!(text(&soft), "the fixture says no");

    let bad = call_tool(&client, "bad_result", json!({})).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(
        text(&bad)
            .starts_with("tool bad_result returned a result that is not a valid CallToolResult"),
        "{}",
        text(&bad)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrapper_passes_its_context_to_the_tool_it_wraps() {
    let recorder = Recorder::default();
    let (_dir, _host, client) = start("context", &[], recorder.clone()).await;
    let result = call_tool(&client, "relay", json!({})).await;
    assert_eq!(text(&result), "relayed");
    until("both log messages", async || recorder.logs().len() >= 2).await;
    let mut logs: Vec<(Option<String>, Value)> = recorder
        .logs()
        .into_iter()
        .map(|l| (l.logger, l.data))
        .collect();
    logs.sort_by_key(|(logger, _)| logger.clone());
    assert_eq!(
        logs,
        [
            (Some("context".to_owned()), json!("original")),
            (Some("wrapper".to_owned()), json!("wrapper")),
        ]
    );
    until("the original's progress", async || {
        recorder.progress().len() == 1
    })
    .await;
}
