//! `PluginTest` and the host answer alike: each fixture plugin's tools are called with the same
//! arguments in process, through `plugin_api::testing::PluginTest`, and over HTTP, through the
//! real host serving the fixture's library; both must give the same `CallToolResult` (content,
//! structured content, error flag), the same log messages (level, logger, data) and the same
//! progress reports, in order.
//!
//! Each fixture has a table with an entry for every tool its plugin declares: the arguments to
//! call it with and how the two answers compare, or why it is left out. A tool without an entry
//! fails the test, so a new tool is compared or its absence explained. Where the two rightly
//! differ, the entry says what must still agree.
//!
//! One host serves each fixture. Its side is a hand-driven session ([`RawSession`]) at log level
//! `debug`, with a progress token on every call: rmcp's client hands each notification to a task
//! of its own and loses the order the host sent them in, which the raw session reads off the
//! streams as sent. Progress comes on the call's own stream, before its result. Log messages come
//! in order on the session's standalone stream (`GET`), apart from the result: a call's are those
//! there once as many as `PluginTest` saw have arrived (or [`PATIENCE`] has passed); one too many
//! shows at the next call, and one left at the end fails the test.
//!
//! The results a tool may build are many more than the fixtures build: one more test, in
//! process, compares `PluginTest`'s reading of each of a list of them with rmcp's, the host's.

use std::time::{Duration, Instant};

use e2e::{
    HostProcess, PluginDir,
    mcp::{RawSession, Recorded},
};
use plugin_api::{
    Tool, ToolResult,
    testing::{Call, PluginTest},
};
use serde_json::{Value, json};

/// How long the host's log messages for a call may take to arrive after its answer.
const PATIENCE: Duration = Duration::from_secs(5);

/// How the host's answer to a call compares with `PluginTest`'s.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// The same result, logs and progress.
    Alike,
    /// Both refuse the arguments, naming this one: the host checks them against the input
    /// schema before the plugin parses them, in words of its own. Logs and progress alike.
    Refused(&'static str),
    /// Both fail a request to the client that is not one a server sends, naming its method:
    /// the host refuses the method, `PluginTest`'s client has no answer for it, so the reasons
    /// differ. Logs and progress alike.
    ClientFails(&'static str),
}

/// What a fixture's table says of one of its tools.
#[derive(Debug)]
enum Plan {
    /// Call it once with each of these arguments, in order.
    Calls(Vec<(Value, Expect)>),
    /// Leave it out, for this reason.
    Skipped(&'static str),
}

/// Call the tool once with `arguments`, expecting the same answer from both.
fn alike(arguments: Value) -> Plan {
    Plan::Calls(vec![(arguments, Expect::Alike)])
}

/// A fixture plugin whose tools are compared.
#[derive(Debug)]
struct Fixture {
    /// Its crate, whose library the host loads.
    krate: &'static str,
    /// The URL's query, naming every toolset of the plugin's tools.
    query: &'static str,
    /// One entry per tool the plugin declares.
    table: Vec<(&'static str, Plan)>,
}

/// What one side answered a call with, in the terms both share.
#[derive(Debug)]
struct Answer {
    /// The `CallToolResult`'s `content`, `structuredContent` and `isError`.
    result: Value,
    /// Each log message's level, logger and data, in order.
    logs: Vec<Value>,
    /// Each progress report's progress, total and message, in order.
    progress: Vec<(f64, Option<f64>, Option<String>)>,
}

impl Answer {
    /// What `PluginTest` says of a call.
    fn in_process(call: &Call) -> Self {
        let logs = call.logs().into_iter().map(
            |log| json!({"level": log.level.as_str(), "logger": log.logger, "data": log.data}),
        );
        let progress = call
            .progress()
            .into_iter()
            .map(|p| (p.progress, p.total, p.message));
        Self {
            result: shared(&call.result().to_json()),
            logs: logs.collect(),
            progress: progress.collect(),
        }
    }

    /// What the host sent for the call `id` whose progress token is `token`: the messages of
    /// its own stream (progress, then its answer, which must be a result) and the log messages
    /// of the session's stream.
    fn served(messages: &[Value], logged: &[Value], id: u64, token: &str) -> Self {
        let answer = messages.iter().find(|m| m["id"] == id);
        let Some(result) = answer.and_then(|a| a.get("result")) else {
            panic!("tools/call {id} has no result: {messages:?}")
        };
        let progress = messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| {
                let params = &m["params"];
                assert_eq!(params["progressToken"], token, "{m}");
                let progress = params["progress"].as_f64();
                (
                    progress.unwrap_or_else(|| panic!("progress is not a number: {m}")),
                    params["total"].as_f64(),
                    params["message"].as_str().map(str::to_owned),
                )
            });
        let logs = logged.iter().map(|m| {
            let params = &m["params"];
            json!({"level": params["level"], "logger": params["logger"], "data": params["data"]})
        });
        Self {
            result: shared(result),
            logs: logs.collect(),
            progress: progress.collect(),
        }
    }

    /// Whether the result says `isError: true`.
    fn is_error(&self) -> bool {
        self.result["isError"] == true
    }

    /// The text of the result's first block: an error's message.
    fn message(&self) -> &str {
        self.result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
    }
}

/// The fields of a `CallToolResult` both sides must agree on.
fn shared(result: &Value) -> Value {
    json!({
        "content": result["content"],
        "structuredContent": result["structuredContent"],
        "isError": result["isError"],
    })
}

impl Expect {
    /// Asserts that `in_process` and `served`, the two answers to `what`, compare as expected.
    fn check(self, what: &str, in_process: &Answer, served: &Answer) {
        assert_eq!(
            (&in_process.logs, &in_process.progress),
            (&served.logs, &served.progress),
            "{what}: the logs and progress of PluginTest (left) and of the host (right)"
        );
        let named = match self {
            Self::Alike => {
                assert_eq!(
                    in_process.result, served.result,
                    "{what}: the result of PluginTest (left) and of the host (right)"
                );
                return;
            }
            Self::Refused(argument) => format!("`{argument}`"),
            Self::ClientFails(method) => method.to_owned(),
        };
        for (side, answer) in [("PluginTest", in_process), ("the host", served)] {
            assert!(answer.is_error(), "{what}: {side} did not fail: {answer:?}");
            assert!(
                answer.message().contains(&named),
                "{what}: {side}'s message does not name {named}: {answer:?}"
            );
        }
    }
}

/// A host serving one fixture, and a session of it at log level `debug`.
struct Host {
    // Held for their drops: the folder is deleted, the process killed.
    _dir: PluginDir,
    _process: HostProcess,
    session: RawSession,
    /// The log messages of the session's standalone stream not yet counted to a call.
    logged: Recorded<Value>,
    /// The JSON-RPC id of the last request.
    last_id: u64,
}

impl Host {
    async fn start(fixture: &Fixture) -> Self {
        let dir = PluginDir::with(&[fixture.krate]);
        // Without the host's own tool, it lists the plugin's tools alone.
        let process = HostProcess::serve(&dir, &["--no-toolsets-tool"]);
        let url = format!("{}/mcp?{}", process.base_url(), fixture.query);
        let session = RawSession::open(&url).await;
        let logged = listen(&session).await;
        let mut host = Self {
            _dir: dir,
            _process: process,
            session,
            logged,
            last_id: 0,
        };
        let level = host
            .request("logging/setLevel", json!({"level": "debug"}))
            .await;
        assert!(level.get("result").is_some(), "{level}");
        host
    }

    fn next_id(&mut self) -> u64 {
        self.last_id += 1;
        self.last_id
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id();
        let (status, answer) = self.session.request(id, method, params).await;
        assert_eq!(status, 200, "{method}: {answer}");
        answer
    }

    /// The names of the tools served, sorted.
    async fn tool_names(&mut self) -> Vec<String> {
        let listed = self.request("tools/list", json!({})).await;
        let tools = listed["result"]["tools"].as_array().cloned();
        let mut names: Vec<String> = tools
            .unwrap_or_else(|| panic!("tools/list: {listed}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        names.sort();
        names
    }

    /// Calls `tool`, waiting for `expected_logs` log messages at most [`PATIENCE`].
    async fn call(&mut self, tool: &str, arguments: &Value, expected_logs: usize) -> Answer {
        let id = self.next_id();
        let token = format!("parity-{id}");
        let params = json!({
            "name": tool,
            "arguments": arguments,
            "_meta": {"progressToken": token},
        });
        let (status, messages) = self.session.exchange(id, "tools/call", params).await;
        assert_eq!(status, 200, "tools/call {tool}: {messages:?}");
        let logged = self.logs(expected_logs).await;
        Answer::served(&messages, &logged, id, &token)
    }

    /// The log messages that arrived, once `expected` have or [`PATIENCE`] has passed.
    async fn logs(&self, expected: usize) -> Vec<Value> {
        let started = Instant::now();
        while self.logged.all().len() < expected && started.elapsed() < PATIENCE {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.logged.take()
    }
}

/// Opens `session`'s standalone stream and records the log messages it brings, in order.
async fn listen(session: &RawSession) -> Recorded<Value> {
    let mut stream = session
        .http
        .get(&session.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {}: {e}", session.url));
    assert_eq!(stream.status(), 200, "the session's standalone stream");
    let logged = Recorded::default();
    let recorder = logged.clone();
    tokio::spawn(async move {
        let mut pending = String::new();
        while let Ok(Some(chunk)) = stream.chunk().await {
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find('\n') {
                let line: String = pending.drain(..=end).collect();
                let message = line.strip_prefix("data:").map(str::trim);
                if let Some(message) = message.and_then(|m| serde_json::from_str::<Value>(m).ok())
                    && message["method"] == "notifications/message"
                {
                    recorder.push(message);
                }
            }
        }
    });
    logged
}

/// Calls each tool `plugin` declares, as `fixture`'s table says, through `plugin` and through a
/// host serving the fixture, and compares the answers. The calls belong to the host's session on
/// both sides, whose client declares no capabilities: the host refuses it a request to the
/// client, and so does `PluginTest` once they are set.
async fn compare(plugin: PluginTest, fixture: Fixture) {
    let mut host = Host::start(&fixture).await;
    let plugin = plugin
        .with_session(host.session.id.clone())
        .with_client_capabilities(json!({}));
    let declared: Vec<String> = plugin.tools().iter().map(|t| t.name.clone()).collect();
    let mut sorted = declared.clone();
    sorted.sort();
    assert_eq!(
        host.tool_names().await,
        sorted,
        "{}: the tools",
        fixture.krate
    );
    for (tool, _) in &fixture.table {
        assert!(
            declared.iter().any(|t| t == tool),
            "{}'s table names `{tool}`, which it does not declare",
            fixture.krate
        );
    }
    for tool in &declared {
        let Some((_, plan)) = fixture.table.iter().find(|(t, _)| t == tool) else {
            panic!(
                "{}'s table has no entry for its tool `{tool}`",
                fixture.krate
            );
        };
        let calls = match plan {
            Plan::Calls(calls) => calls,
            Plan::Skipped(reason) => {
                eprintln!("{} {tool}: not compared: {reason}", fixture.krate);
                continue;
            }
        };
        for (arguments, expect) in calls {
            let in_process = Answer::in_process(&plugin.call(tool, arguments.clone()));
            let served = host.call(tool, arguments, in_process.logs.len()).await;
            let what = format!("{} {tool}({arguments})", fixture.krate);
            expect.check(&what, &in_process, &served);
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let left = host.logs(0).await;
    assert!(
        left.is_empty(),
        "{}: the host logged more: {left:?}",
        fixture.krate
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn context_tools_log_report_progress_and_build_results_alike() {
    let waits = "waits until the call is cancelled, which a PluginTest call cannot be";
    let fixture = Fixture {
        krate: "fixture-context",
        query: "toolsets=context",
        table: vec![
            ("log_levels", alike(json!({}))),
            (
                "steps",
                Plan::Calls(vec![
                    (json!({"n": 3}), Expect::Alike),
                    (json!({"n": "three"}), Expect::Refused("n")),
                    (json!({}), Expect::Refused("n")),
                ]),
            ),
            ("wait_for_cancel", Plan::Skipped(waits)),
            ("wait_for_cancel_sync", Plan::Skipped(waits)),
            ("task_wait", alike(json!({"ms": 1}))),
            ("task_greet", alike(json!({}))),
            (
                "task_elicit",
                Plan::Skipped(
                    "only ever a task: the host refuses it to a client without the tasks \
                     extension, PluginTest has no tasks",
                ),
            ),
            ("seen", alike(json!({}))),
            ("sample", alike(json!({"prompt": "hi"}))),
            ("elicit", alike(json!({"message": "Your name?"}))),
            // Of the two requests it makes at once, both refuse the sampling one first.
            ("greet", alike(json!({}))),
            (
                "set_available",
                alike(json!({"kind": "tool", "name": "relay", "available": true})),
            ),
            (
                "ask_unknown",
                Plan::Calls(vec![(json!({}), Expect::ClientFails("tools/list"))]),
            ),
            ("active", alike(json!({}))),
            ("capabilities", alike(json!({}))),
            ("session", alike(json!({}))),
            ("caller", alike(json!({}))),
            ("picture", alike(json!({}))),
            ("sound", alike(json!({}))),
            ("mixed", alike(json!({}))),
            ("soft_error", alike(json!({}))),
            ("bad_result", alike(json!({}))),
            ("relay", alike(json!({}))),
        ],
    };
    compare(PluginTest::new::<fixture_context::Fixture>(), fixture).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn base_tools_answer_values_and_refuse_bad_arguments_alike() {
    let fixture = Fixture {
        krate: "fixture-base",
        query: "toolsets=base,quiet",
        table: vec![
            (
                "trace",
                Plan::Calls(vec![
                    (json!({"path": ["parity"]}), Expect::Alike),
                    (json!({"path": "parity"}), Expect::Refused("path")),
                    (json!({}), Expect::Refused("path")),
                ]),
            ),
            ("described", alike(json!({}))),
            ("list_things", alike(json!({}))),
            ("things_listed", alike(json!({}))),
            ("fragile", alike(json!({}))),
            ("fragile_panic", alike(json!({}))),
            ("plain", alike(json!({}))),
        ],
    };
    compare(PluginTest::new::<fixture_base::Base>(), fixture).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn panicky_tools_panic_alike_before_and_after_an_await() {
    let fixture = Fixture {
        krate: "fixture-panicky",
        query: "toolsets=panicky",
        table: vec![
            (
                "boom",
                Plan::Calls(vec![
                    (json!({"message": "kaboom"}), Expect::Alike),
                    (json!({"message": 7}), Expect::Refused("message")),
                    (json!({}), Expect::Refused("message")),
                ]),
            ),
            ("fine", alike(json!({}))),
            ("boom_later", alike(json!({}))),
        ],
    };
    compare(PluginTest::new::<fixture_panicky::Panicky>(), fixture).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dynamic_tools_answer_alike() {
    let fixture = Fixture {
        krate: "fixture-dynamic",
        query: "toolsets=dynamic",
        table: vec![
            ("static_tool", alike(json!({}))),
            ("dynamic_upper", alike(json!({"text": "parity"}))),
            ("dynamic_count", alike(json!({}))),
        ],
    };
    compare(PluginTest::new::<fixture_dynamic::Dynamic>(), fixture).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn library_tools_answer_alike_in_a_toolset_off_by_default() {
    let fixture = Fixture {
        krate: "fixture-library",
        query: "toolsets=librarian",
        table: vec![
            (
                "write_note",
                Plan::Calls(vec![
                    (json!({"text": "parity"}), Expect::Alike),
                    (json!({}), Expect::Refused("text")),
                ]),
            ),
            (
                "write_note_later",
                Plan::Calls(vec![
                    (json!({"text": "later", "ms": 1}), Expect::Alike),
                    (json!({"text": "later"}), Expect::Refused("ms")),
                ]),
            ),
        ],
    };
    compare(PluginTest::new::<fixture_library::Library>(), fixture).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reload_tools_answer_alike_after_an_await() {
    let fixture = Fixture {
        krate: "fixture-reload",
        query: "toolsets=reloadable",
        table: vec![
            ("build", alike(json!({}))),
            (
                "build_after",
                Plan::Calls(vec![
                    (json!({"ms": 1}), Expect::Alike),
                    (json!({"ms": -1}), Expect::Refused("ms")),
                ]),
            ),
        ],
    };
    compare(PluginTest::new::<fixture_reload::Reloadable>(), fixture).await;
}

/// A tool that answers the result it is given (`{"result": ...}`), as it built it.
fn built() -> Tool {
    Tool::new("built", "Answer the result given.")
        .sync(|arguments: Value| ToolResult::from_json(arguments["result"].clone()))
}

/// `PluginTest` reads a result a tool built as the host does, with rmcp's `CallToolResult`,
/// which `plugin-api` mirrors: what the host refuses is refused in the same words (the host's
/// message around serde's), what it reads is served alike. Shapes the fixtures do not build,
/// compared in process with rmcp's reading, so an rmcp that reads them otherwise shows here.
#[test]
fn built_results_are_read_as_the_host_reads_them() {
    let plugin = PluginTest::new::<fixture_base::Base>().with_tool(built());
    let text = |text: Value| json!({"type": "text", "text": text});
    let annotated = |annotations: Value| json!({"content": [{"type": "text", "text": "a", "annotations": annotations}]});
    let link = |extra: Value| {
        let mut link = json!({"type": "resource_link", "uri": "a://b", "name": "b"});
        link.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ "content": [link] })
    };
    let refused = [
        json!({"content": "not a list"}),
        json!({"content": ["bare"]}),
        json!({"content": [{"text": "untyped"}]}),
        json!({"content": [{"type": "video"}]}),
        json!({"content": [{"type": "text"}]}),
        json!({"content": [text(json!(5))]}),
        json!({"content": [text(json!("a")), {"type": "image", "data": "AA=="}]}),
        json!({"content": [{"type": "audio", "mimeType": "audio/wav"}]}),
        json!({"content": [{"type": "resource", "resource": {"uri": "a://b"}}]}),
        json!({"content": [{"type": "resource", "resource": "a://b"}]}),
        json!({"content": [{"type": "resource_link", "uri": "a://b"}]}),
        link(json!({"size": -1})),
        link(json!({"icons": [{"src": "i", "theme": "blue"}]})),
        link(json!({"icons": [{"sizes": ["48x48"]}]})),
        annotated(json!({"priority": "high"})),
        annotated(json!({"audience": ["robot"]})),
        annotated(json!({"lastModified": 1})),
        annotated(json!([])),
        json!({"content": [text(json!("a"))], "isError": "yes"}),
        json!({"content": [], "_meta": []}),
        json!({"content": [{"type": "text", "text": "a", "_meta": 1}]}),
        json!({"resultType": 1, "content": []}),
        json!({"resultType": "task", "isError": true}),
        json!({"_meta": {}}),
        json!({"other": 1}),
        json!({}),
    ];
    let read = [
        json!({"isError": true}),
        json!({"content": null, "structuredContent": {"n": 1}}),
        json!({"structuredContent": null}),
        json!({"content": [text(json!("a"))], "resultType": "complete", "_meta": {"k": 1}}),
        json!({"content": [{"type": "resource", "resource": {"uri": "a://b", "blob": "AA=="}}]}),
        link(json!({"size": 3, "icons": [{"src": "i", "theme": "dark"}]})),
        annotated(json!({"priority": 0.5, "audience": ["user"], "lastModified": "now"})),
    ];
    for shape in refused.iter().chain(&read) {
        let call = plugin.call("built", json!({ "result": shape }));
        let in_process = shared(&call.result().to_json());
        let served = match serde_json::from_str::<rmcp::model::CallToolResult>(&shape.to_string()) {
            Ok(result) => serde_json::to_value(result).unwrap(),
            Err(e) => json!({
                "content": [text(json!(format!(
                    "tool built returned a result that is not a valid CallToolResult: {e}"
                )))],
                "isError": true,
            }),
        };
        assert_eq!(
            in_process,
            shared(&served),
            "{shape}: the result of PluginTest (left) and as the host reads it (right)"
        );
        assert_eq!(
            call.output().is_err(),
            refused.contains(shape),
            "{shape}: refused by PluginTest, or read"
        );
    }
}
