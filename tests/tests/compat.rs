//! The ABI's promise across real builds: `fixture-compat` built against the plugin-api of ABI
//! 0.2.0's commit runs on this host, in process and isolated, and the build against today's
//! plugin-api runs on the host of that commit, finding the services that came later absent.
//!
//! `cargo xtask compat` (which `cargo xtask test` runs) builds that commit's host and plugin
//! from `git archive` of it and names them in [`OLD_HOST_ENV`] and [`OLD_PLUGIN_ENV`]; there
//! these tests cannot skip. Run alone without them, they look where `cargo xtask compat` puts
//! its builds, and say they skipped when nothing is there.
//!
//! Each pairing runs the same checks: every tool (answers, a tool error, a panic, a log message
//! and progress, a sampling round trip, what the request looks like), the resource and the
//! template, the prompt and its completion; then `host_services`, which tells what the plugin
//! sees of the services added after 0.2.0.

// Sampling's types are deprecated by SEP-2577 (protocol 2026-07-28); clients of 2025-11-25,
// which these tests speak, still use them.
#![allow(deprecated)]

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use e2e::{
    HostProcess, PluginDir, library_file_name,
    mcp::{RawSession, Recorded, call_tool, connect_as, text},
    workspace_root,
};
use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientInfo, CreateMessageRequestParams, CreateMessageResult, Implementation, LoggingLevel,
        LoggingMessageNotificationParam, SetLevelRequestParams,
    },
    service::{NotificationContext, RequestContext},
};
use serde_json::{Value, json};

/// The variable naming the host binary built from ABI 0.2.0's commit.
const OLD_HOST_ENV: &str = "REACTOR_COMPAT_OLD_HOST";
/// The variable naming `fixture-compat` built against that commit's plugin-api.
const OLD_PLUGIN_ENV: &str = "REACTOR_COMPAT_OLD_PLUGIN";

/// A W3C trace context the tests send.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The old host and the old plugin: from the environment, else where `cargo xtask compat`
/// builds them; `None` (the test is skipped, saying so) when neither.
fn old_builds() -> Option<(PathBuf, PathBuf)> {
    if let (Some(host), Some(plugin)) = (
        std::env::var_os(OLD_HOST_ENV),
        std::env::var_os(OLD_PLUGIN_ENV),
    ) {
        let found = (PathBuf::from(host), PathBuf::from(plugin));
        assert!(
            found.0.is_file() && found.1.is_file(),
            "{OLD_HOST_ENV} or {OLD_PLUGIN_ENV} names no file: {found:?}"
        );
        return Some(found);
    }
    let built = workspace_root().join("target/compat/bin");
    let found = (
        built.join("reactor-mcp-server"),
        built.join(library_file_name("fixture_compat")),
    );
    if found.0.is_file() && found.1.is_file() {
        return Some(found);
    }
    eprintln!(
        "SKIPPED: the builds of ABI 0.2.0's commit are missing: run `cargo xtask compat` \
         (cargo xtask test does)"
    );
    None
}

/// A plugin folder holding `library` as the plugin's own file name.
fn folder_with(library: &PathBuf) -> PluginDir {
    let dir = PluginDir::new();
    dir.write(
        &library_file_name("fixture_compat"),
        std::fs::read(library).expect("the plugin's library reads"),
    );
    dir
}

/// A client that declares sampling and answers it, and records the log messages it gets.
#[derive(Debug, Clone, Default)]
struct Sampler {
    logs: Recorded<Value>,
}

impl ClientHandler for Sampler {
    fn get_info(&self) -> ClientInfo {
        ClientInfo::new(
            serde_json::from_value(json!({"sampling": {}})).expect("client capabilities"),
            Implementation::new("e2e-compat", "1"),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Ok(e2e::mcp::sampled(&params))
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.push(params.data);
    }
}

/// Calls `name` with `arguments` in `session`, as request `id`; the result.
async fn call(session: &RawSession, id: u64, name: &str, arguments: Value) -> Value {
    let (status, answer) = session
        .request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await;
    assert_eq!(status, 200, "{name}: {answer}");
    answer["result"].clone()
}

/// Everything `fixture-compat` serves alike in every build, checked through `host` (`what`
/// names the pairing in messages).
async fn serves_everything(host: &HostProcess, what: &str) {
    let url = format!("{}/mcp", host.base_url());
    let session = RawSession::open(&url).await;

    let (_, listed) = session.request(2, "tools/list", json!({})).await;
    let mut tools: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no tools: {listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|name| !["toolsets", "list_server_toolsets"].contains(name))
        .collect();
    tools.sort_unstable();
    assert_eq!(
        tools,
        [
            "add",
            "echo",
            "fail",
            "host_services",
            "panics",
            "request",
            "sample",
            "steps",
            "touch"
        ],
        "{what}"
    );

    assert_eq!(
        call(&session, 3, "echo", json!({"text": "hi"})).await["content"][0]["text"],
        "hi",
        "{what}"
    );
    assert_eq!(
        call(&session, 4, "add", json!({"a": 2, "b": 3})).await["structuredContent"],
        json!({"sum": 5}),
        "{what}"
    );
    let failed = call(&session, 5, "fail", json!({})).await;
    assert_eq!(failed["isError"], true, "{what}: {failed}");
    assert!(
        failed.to_string().contains("failed on purpose"),
        "{what}: {failed}"
    );
    let panicked = call(&session, 6, "panics", json!({})).await;
    assert_eq!(panicked["isError"], true, "{what}: {panicked}");
    assert!(
        panicked.to_string().contains("panicked on purpose"),
        "{what}: {panicked}"
    );
    assert_eq!(
        call(&session, 7, "touch", json!({})).await["content"][0]["text"],
        "touched",
        "{what}"
    );

    let (_, stepped) = session
        .exchange(
            9,
            "tools/call",
            json!({"name": "steps", "arguments": {}, "_meta": {"progressToken": "p"}}),
        )
        .await;
    let progress: Vec<&Value> = stepped
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| &m["params"]["progress"])
        .collect();
    assert_eq!(
        progress,
        [&json!(1.0), &json!(2.0), &json!(3.0)],
        "{what}: {stepped:?}"
    );

    let request = call(&session, 10, "request", json!({})).await;
    assert_eq!(
        request["structuredContent"],
        json!({"session": true, "active": ["compat"], "capabilities": [], "caller": null}),
        "{what}"
    );

    let (_, note) = session
        .request(11, "resources/read", json!({"uri": "compat://note"}))
        .await;
    assert_eq!(
        note["result"]["contents"][0]["text"], "a note",
        "{what}: {note}"
    );
    let (_, word) = session
        .request(12, "resources/read", json!({"uri": "compat://words/abi"}))
        .await;
    assert_eq!(
        word["result"]["contents"][0]["text"], "the word is abi",
        "{what}: {word}"
    );
    let (_, prompt) = session
        .request(
            13,
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(
        prompt["result"]["messages"][0]["content"]["text"], "Say hello to Ada",
        "{what}: {prompt}"
    );
    let (_, completed) = session
        .request(
            14,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"},
                   "argument": {"name": "name", "value": "A"}}),
        )
        .await;
    assert_eq!(
        completed["result"]["completion"]["values"],
        json!(["Ada", "Alan"]),
        "{what}: {completed}"
    );

    let sampler = Sampler::default();
    let client = connect_as(&url, sampler.clone()).await;
    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .expect("the level is set");
    call_tool(client.peer(), "steps", json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sampler.logs.all().iter().any(|data| data == "stepping") {
        assert!(Instant::now() < deadline, "{what}: no log message arrived");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let sampled = call_tool(client.peer(), "sample", json!({"prompt": "ping"})).await;
    assert!(
        text(&sampled).contains("you said: ping"),
        "{what}: {}",
        text(&sampled)
    );
    let request = call_tool(client.peer(), "request", json!({})).await;
    assert_eq!(
        request.structured_content.unwrap_or_default()["capabilities"],
        json!(["sampling"]),
        "{what}"
    );
}

/// What `host_services` answers in `host`, for a call carrying [`TRACEPARENT`].
async fn host_services(host: &HostProcess) -> Value {
    let session = RawSession::open(&format!("{}/mcp", host.base_url())).await;
    let (_, answer) = session
        .request(
            2,
            "tools/call",
            json!({"name": "host_services", "arguments": {},
                   "_meta": {"traceparent": TRACEPARENT}}),
        )
        .await;
    answer["result"]["structuredContent"].clone()
}

/// What `host_services` answers in `host` for a call whose HTTP request carries
/// [`TRACEPARENT`] and a `tracestate` header, and nothing in `_meta`.
async fn host_services_traced_by_headers(host: &HostProcess) -> Value {
    let session = RawSession::open(&format!("{}/mcp", host.base_url())).await;
    let response = session
        .http
        .post(&session.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", "2025-06-18")
        .header("traceparent", TRACEPARENT)
        .header("tracestate", "vendor=1")
        .body(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "host_services", "arguments": {}}})
            .to_string(),
        )
        .send()
        .await
        .expect("the call is sent");
    let body = response.text().await.unwrap_or_default();
    let answer = e2e::mcp::messages(&body)
        .into_iter()
        .find(|m| m["id"] == 2)
        .unwrap_or_else(|| panic!("no answer: {body}"));
    answer["result"]["structuredContent"]["trace_context"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_built_against_abi_0_2_0_serves_everything_on_this_host() {
    let Some((_, old_plugin)) = old_builds() else {
        return;
    };
    let dir = folder_with(&old_plugin);
    for (what, flags) in [
        ("in process", &[][..]),
        ("isolated", &["--isolate", "compat"][..]),
    ] {
        let host = HostProcess::serve(&dir, flags);
        serves_everything(&host, &format!("0.2.0 plugin on this host, {what}")).await;
        assert_eq!(
            host_services(&host).await,
            json!({"built_against": "0.2.0"}),
            "{what}"
        );
        assert!(
            !host.stderr_so_far().contains("WARN"),
            "{what}: {}",
            host.stderr_so_far()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_built_today_serves_on_the_0_2_0_host_and_finds_later_services_absent() {
    let Some((old_host, _)) = old_builds() else {
        return;
    };
    let dir = PluginDir::with(&["fixture-compat"]);
    let host = HostProcess::serve_build(old_host, &dir, &[], &[]);
    serves_everything(&host, "today's plugin on the 0.2.0 host").await;
    assert_eq!(
        host_services(&host).await,
        json!({
            "built_against": "current",
            "host_abi": "0.2.0",
            "trace_context": {"not_offered": "this host (plugin-abi 0.2.0) does not offer \
                `trace_context`, which came with plugin-abi 0.2.1"},
        })
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_built_today_gets_the_trace_context_in_process_and_isolated() {
    let dir = PluginDir::with(&["fixture-compat"]);
    for (what, flags) in [
        ("in process", &[][..]),
        ("isolated", &["--isolate", "compat"][..]),
    ] {
        let mut host = HostProcess::serve(&dir, flags);
        serves_everything(&host, &format!("today's plugin, {what}")).await;
        assert_eq!(
            host_services(&host).await,
            json!({
                "built_against": "current",
                "host_abi": plugin_abi::VERSION,
                "trace_context": {"traceparent": TRACEPARENT},
            }),
            "{what}"
        );
        assert_eq!(
            host_services_traced_by_headers(&host).await,
            json!({"traceparent": TRACEPARENT, "tracestate": "vendor=1"}),
            "{what}: from the HTTP headers"
        );
        let logged = host.wait_for_stderr("reading the host's services", Duration::from_secs(10));
        assert!(
            logged.contains("plugin::compat") && logged.contains(r#"tool="host_services""#),
            "{what}: the plugin's tracing event is in the host's log: {logged}"
        );
    }
}
