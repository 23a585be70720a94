//! Hot reload end to end: the real host binary serving a plugin folder that changes under it
//! (added, replaced, removed, bad, half-written files, a burst, an `mcp.json`), with connected
//! sessions checking the `list_changed` they hear and their next `tools/list`, and a call in
//! flight across a replace; an isolated plugin restarted on its new library. `--no-watch` and
//! `SIGHUP`, `/healthz` and the generation number.

use std::time::Duration;

use e2e::{
    HostProcess, PluginDir, library_bytes, library_file_name,
    mcp::{Client, call_tool, connect, connect_2026, connect_as, get_json, text, tool_names},
    patched,
    procs::{children, descriptors, signal, threads_named},
    truncated,
};
use rmcp::{
    ClientHandler, RoleClient,
    model::{ClientConfig, ReadResourceRequestParams, ServerNotification, SubscriptionFilter},
    service::{NotificationContext, RunningService},
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// What a plugin's runtime names its threads (`plugin_api::runtime::THREAD_NAME`).
const THREAD_NAME: &str = "reactor-plugin";

/// How long a change may take to be served or heard of before a test fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// How long a test waits to be sure something is not heard or seen.
const QUIET: Duration = Duration::from_millis(700);

const RELOADABLE: &str = "fixture-reload";

/// What `build` of the fixture answers, and what a patched copy answers.
const BUILD_A: &str = "fixture-reload build A";
const BUILD_B: &str = "fixture-reload build B";

/// A client that records each `list_changed` it hears: `tools`, `resources` or `prompts`.
#[derive(Debug, Clone)]
struct Hearing(mpsc::UnboundedSender<&'static str>);

impl ClientHandler for Hearing {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("tools");
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("resources");
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("prompts");
    }
}

/// A session of `url` and the lists it hears changed.
async fn session(
    url: &str,
) -> (
    RunningService<RoleClient, Hearing>,
    mpsc::UnboundedReceiver<&'static str>,
) {
    let (sender, heard) = mpsc::unbounded_channel();
    (connect_as(url, Hearing(sender)).await, heard)
}

/// The next list heard changed, within [`PATIENCE`].
async fn next_heard(heard: &mut mpsc::UnboundedReceiver<&'static str>, what: &str) -> &'static str {
    tokio::time::timeout(PATIENCE, heard.recv())
        .await
        .unwrap_or_else(|_| panic!("{what}: no list_changed within {PATIENCE:?}"))
        .expect("the client is gone")
}

/// The next notification of a 2026-07-28 listen stream, within [`PATIENCE`].
async fn next_streamed(stream: &mut rmcp::service::Subscription) -> ServerNotification {
    tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("a notification within the patience")
        .expect("the stream is open")
        .expect("a notification")
}

/// Asserts nothing is heard within [`QUIET`].
async fn nothing_heard(heard: &mut mpsc::UnboundedReceiver<&'static str>, what: &str) {
    if let Ok(Some(list)) = tokio::time::timeout(QUIET, heard.recv()).await {
        panic!("{what}: heard that its {list} changed");
    }
}

/// `GET /PATH` of `host` as JSON.
async fn get(host: &HostProcess, path: &str) -> Value {
    let (status, body) = get_json(&format!("{}{path}", host.base_url())).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

/// The generation number `GET /toolsets` gives.
async fn generation(host: &HostProcess) -> u64 {
    get(host, "/toolsets")
        .await
        .pointer("/generation/number")
        .and_then(Value::as_u64)
        .expect("/toolsets says its generation")
}

/// Waits until `GET /toolsets?QUERY` answers `done`, and returns that answer.
async fn toolsets_once(host: &HostProcess, query: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    loop {
        let report = get(host, &format!("/toolsets?{query}")).await;
        if done(&report) {
            return report;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "/toolsets?{query} is still {report}\n--- stderr\n{}",
            host.stderr_so_far()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether a `/toolsets` report serves `tool`.
fn serves(report: &Value, tool: &str) -> bool {
    report["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t == tool))
}

/// Writes `bytes` as `file_name` in `dir` the safe way: to a hidden temporary name, renamed.
fn rename_in(dir: &PluginDir, file_name: &str, bytes: &[u8]) {
    let temporary = dir.file(&format!(".{file_name}.tmp"));
    std::fs::write(&temporary, bytes).unwrap();
    std::fs::rename(&temporary, dir.file(file_name)).unwrap();
}

fn lib(stem: &str) -> String {
    library_file_name(stem)
}

fn occurrences(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

async fn build_of(client: &Client) -> String {
    text(&call_tool(client.peer(), "build", json!({})).await)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_added_plugin_is_served_to_the_next_request_and_only_the_sessions_it_concerns_hear_of_it()
 {
    let dir = PluginDir::with(&[RELOADABLE]);
    let host = HostProcess::serve(&dir, &[]);
    let base = host.base_url();
    assert_eq!(generation(&host).await, 1);
    let (asking, mut asking_heard) = session(&format!("{base}/mcp?toolsets=benchmarks")).await;
    let (other, mut other_heard) = session(&format!("{base}/mcp?only=reloadable")).await;
    assert!(!tool_names(asking.peer()).await.contains(&"echo".to_owned()));

    rename_in(&dir, &lib("benchmarks"), &library_bytes("benchmarks"));
    assert_eq!(
        next_heard(&mut asking_heard, "the session asking for it").await,
        "tools"
    );
    assert!(tool_names(asking.peer()).await.contains(&"echo".to_owned()));
    let echoed = call_tool(asking.peer(), "echo", json!({"text": "new"})).await;
    assert_eq!(text(&echoed), "new");
    assert_eq!(generation(&host).await, 2);
    nothing_heard(&mut other_heard, "a session of another toolset").await;
    assert_eq!(build_of_peer(&other).await, BUILD_A, "it lost nothing");
    let report = get(&host, "/toolsets?toolsets=benchmarks").await;
    assert!(serves(&report, "echo"), "{report}");
    let (copies, direct) = host.mapped_private_copies(&dir);
    assert!(
        !direct,
        "no file of the plugin folder is mapped: {copies:?}"
    );
    assert!(
        copies
            .iter()
            .any(|c| c.file_name() == Some(lib("benchmarks").as_ref())),
        "opened from its private copy: {copies:?}"
    );
}

/// Copies build B over the fixture's file as `cp` does (truncated, then written, the inode
/// kept), and checks that `client`'s session hears its tools changed and that build B answers.
async fn replace_with_build_b(
    dir: &PluginDir,
    client: &RunningService<RoleClient, Hearing>,
    heard: &mut mpsc::UnboundedReceiver<&'static str>,
) {
    replace_with(dir, client, heard, BUILD_B).await;
}

/// [`replace_with_build_b`] for any `build` the length of [`BUILD_A`].
async fn replace_with(
    dir: &PluginDir,
    client: &RunningService<RoleClient, Hearing>,
    heard: &mut mpsc::UnboundedReceiver<&'static str>,
    build: &str,
) {
    std::fs::write(
        dir.file(&lib("fixture_reload")),
        patched(RELOADABLE, BUILD_A, build),
    )
    .unwrap();
    assert_eq!(
        next_heard(heard, "a session of the replaced plugin").await,
        "tools"
    );
    answers_eventually(client.peer(), build).await;
}

/// Waits until `build` answers `expected` through `peer` (a file copied over in place may be
/// seen half-written first, and left out until it is whole).
async fn answers_eventually(peer: &rmcp::service::Peer<RoleClient>, expected: &str) {
    let start = std::time::Instant::now();
    loop {
        let answer = peer.call_tool(e2e::mcp::call("build", json!({}))).await;
        if answer.as_ref().is_ok_and(|r| text(r) == expected) {
            return;
        }
        assert!(start.elapsed() < PATIENCE, "build still answers {answer:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn build_of_peer(client: &RunningService<RoleClient, Hearing>) -> String {
    text(&call_tool(client.peer(), "build", json!({})).await)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_plugin_answers_anew_while_a_call_in_flight_finishes_on_the_old_library() {
    let dir = PluginDir::with(&[RELOADABLE]);
    let mut host = HostProcess::serve(&dir, &[]);
    let url = format!("{}/mcp", host.base_url());
    let (client, mut heard) = session(&url).await;
    assert_eq!(build_of_peer(&client).await, BUILD_A);
    let peer = client.peer().clone();
    let in_flight =
        tokio::spawn(
            async move { text(&call_tool(&peer, "build_after", json!({"ms": 2000})).await) },
        );
    tokio::time::sleep(Duration::from_millis(200)).await;

    replace_with_build_b(&dir, &client, &mut heard).await;
    assert_eq!(
        tool_names(client.peer()).await,
        ["build", "build_after", "list_server_toolsets"]
    );
    assert!(
        !host.stderr_so_far().contains(&format!("{BUILD_A} stopped")),
        "a build is not stopped while a call runs on it"
    );
    assert_eq!(
        in_flight.await.unwrap(),
        BUILD_A,
        "the call in flight ends on its library"
    );
    host.wait_for_stderr(&format!("{BUILD_A} stopped"), PATIENCE);
    let fresh = connect(&url).await;
    assert_eq!(build_of(&fresh).await, BUILD_B);
    assert_eq!(
        host.mapped_plugin_file_names(&dir),
        [lib("fixture_reload")],
        "both builds are copies of the one file"
    );
    let (copies, direct) = host.mapped_private_copies(&dir);
    assert!(
        !direct,
        "no file of the plugin folder is mapped: {copies:?}"
    );
    assert_eq!(copies.len(), 2, "one private copy per build: {copies:?}");
    assert!(
        !host.stderr_so_far().contains(&format!("{BUILD_B} stopped")),
        "the build served is not stopped"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_plugins_runtime_threads_end_when_it_is_stopped() {
    let dir = PluginDir::with(&[RELOADABLE]);
    let mut host = HostProcess::serve(&dir, &[]);
    let (client, mut heard) = session(&format!("{}/mcp", host.base_url())).await;
    let use_both_pools = async |client: &RunningService<RoleClient, Hearing>| {
        build_of_peer(client).await;
        call_tool(client.peer(), "build_after", json!({"ms": 10})).await;
    };
    use_both_pools(&client).await;
    let one_build = threads_named(host.pid(), THREAD_NAME);
    assert!(
        one_build >= 3,
        "two workers and a blocking thread: {one_build}"
    );

    let builds = [
        "fixture-reload build B",
        "fixture-reload build C",
        "fixture-reload build D",
    ];
    for build in builds {
        replace_with(&dir, &client, &mut heard, build).await;
        use_both_pools(&client).await;
    }
    for stopped in [BUILD_A, builds[0], builds[1]] {
        host.wait_for_stderr(&format!("{stopped} stopped"), PATIENCE);
    }
    let start = std::time::Instant::now();
    while threads_named(host.pid(), THREAD_NAME) > one_build && start.elapsed() < PATIENCE {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The live build's idle blocking thread may have ended too (tokio keeps one 10 s).
    let left = threads_named(host.pid(), THREAD_NAME);
    assert!(
        (2..=one_build).contains(&left),
        "only the live build's threads are left: {left} of {one_build}"
    );
    assert_eq!(build_of_peer(&client).await, builds[2]);
}

/// How many times [`replaced_builds_release_their_descriptors`] renames a new build over.
const REPLACES: usize = 20;

/// The descriptors a replaced build keeps: none. Its runtime's own (epoll, eventfd) are closed
/// when it retires; a plugin built on its own has no tokio signal driver, whose socketpair
/// would be a static of the library, which is never unloaded (2 per replace).
const LEFT_PER_REPLACE: usize = 0;

#[tokio::test(flavor = "multi_thread")]
async fn replaced_builds_release_their_descriptors() {
    // Built on its own, as authors build plugins: in one build with the host, cargo would
    // give its tokio the host's `signal` feature.
    let standalone = std::fs::read(e2e::standalone_library(RELOADABLE)).expect("the library");
    let dir = PluginDir::new();
    dir.write(&lib("fixture_reload"), &standalone);
    let host = HostProcess::serve(&dir, &[]);
    let (client, _heard) = session(&format!("{}/mcp", host.base_url())).await;
    assert_eq!(build_of_peer(&client).await, BUILD_A);
    let before = descriptors(host.pid());

    let mut build = String::new();
    for n in 0..REPLACES {
        // As long as BUILD_A, so the patched library stays whole.
        build = format!("fixture-reload bu{n:05}");
        rename_in(
            &dir,
            &lib("fixture_reload"),
            &e2e::patch(standalone.clone(), BUILD_A, &build),
        );
        answers_eventually(client.peer(), &build).await;
    }
    // The replaced builds' runtimes shut down in the background.
    let start = std::time::Instant::now();
    let grown = loop {
        let grown = descriptors(host.pid()).saturating_sub(before);
        if grown < LEFT_PER_REPLACE * REPLACES + 10 || start.elapsed() > PATIENCE {
            break grown;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        grown < LEFT_PER_REPLACE * REPLACES + 10,
        "{grown} descriptors more after {REPLACES} replaces (from {before})"
    );
    assert_eq!(build_of_peer(&client).await, build);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_removed_plugin_is_gone_for_new_requests_and_its_sessions_hear_of_it() {
    let dir = PluginDir::with(&[RELOADABLE, "benchmarks"]);
    let host = HostProcess::serve(&dir, &[]);
    let (client, mut heard) = session(&format!("{}/mcp?benchmarks", host.base_url())).await;
    assert_eq!(
        text(&call_tool(client.peer(), "echo", json!({"text": "a"})).await),
        "a"
    );

    std::fs::remove_file(dir.file(&lib("benchmarks"))).unwrap();
    assert_eq!(
        next_heard(&mut heard, "a session of the removed plugin").await,
        "tools"
    );
    let names = tool_names(client.peer()).await;
    assert!(!names.contains(&"echo".to_owned()), "{names:?}");
    let refused = client
        .peer()
        .call_tool(e2e::mcp::call("echo", json!({"text": "b"})))
        .await
        .expect_err("echo is gone");
    assert!(
        refused.to_string().contains("Unknown tool: echo"),
        "{refused}"
    );
    assert_eq!(build_of_peer(&client).await, BUILD_A, "the rest is served");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_file_is_skipped_with_one_warning_and_the_rest_keeps_serving() {
    let dir = PluginDir::with(&[RELOADABLE]);
    let mut host = HostProcess::serve(&dir, &[]);
    let client = connect(&format!("{}/mcp", host.base_url())).await;
    let bad = lib("bad");
    dir.write(&bad, b"not a library at all");
    let warning = format!("skipping plugin file {}", dir.file(&bad).display());
    host.wait_for_stderr(&warning, PATIENCE);
    rename_in(&dir, &lib("benchmarks"), &library_bytes("benchmarks"));
    toolsets_once(&host, "benchmarks", |r| serves(r, "echo")).await;
    assert_eq!(occurrences(&host.stderr_so_far(), &warning), 1);
    assert_eq!(build_of(&client).await, BUILD_A);
    assert_eq!(get(&host, "/healthz").await["status"], "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_half_written_file_is_never_opened_and_is_served_once_whole() {
    let dir = PluginDir::with(&[RELOADABLE]);
    let mut host = HostProcess::serve(&dir, &[]);
    let file = lib("benchmarks");
    dir.write(&file, truncated("benchmarks"));
    host.wait_for_stderr("truncated: its headers need", PATIENCE);
    let client = connect(&format!("{}/mcp?benchmarks", host.base_url())).await;
    assert!(!tool_names(client.peer()).await.contains(&"echo".to_owned()));

    dir.write(&file, library_bytes("benchmarks"));
    toolsets_once(&host, "benchmarks", |r| serves(r, "echo")).await;
    let client = connect(&format!("{}/mcp?benchmarks", host.base_url())).await;
    assert_eq!(
        text(&call_tool(client.peer(), "echo", json!({"text": "whole"})).await),
        "whole"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_a_hundred_files_ends_in_the_right_state() {
    let dir = PluginDir::with(&[RELOADABLE]);
    let host = HostProcess::serve(&dir, &[]);
    let (client, mut heard) = session(&format!("{}/mcp?benchmarks", host.base_url())).await;
    let plugins = ["benchmarks", "fixture-base", "fixture-library"];
    let mut names = Vec::new();
    for i in 0..100 {
        let name = lib(&format!("burst{i:03}"));
        match plugins.get(i % 40) {
            Some(plugin) => dir.write(&name, library_bytes(plugin)),
            None => dir.write(&name, format!("not a library, number {i}")),
        };
        names.push(name);
    }
    let report = toolsets_once(&host, "toolsets=benchmarks,base,librarian", |r| {
        ["echo", "trace", "write_note"].iter().all(|t| serves(r, t))
    })
    .await;
    assert_eq!(
        report["active"].as_array().map(Vec::len),
        Some(4),
        "{report}"
    );
    assert_eq!(next_heard(&mut heard, "after the burst").await, "tools");
    assert_eq!(
        text(&call_tool(client.peer(), "echo", json!({"text": "x"})).await),
        "x"
    );
    for name in &names {
        std::fs::remove_file(dir.file(name)).unwrap();
    }
    toolsets_once(&host, "benchmarks", |r| !serves(r, "echo")).await;
    assert_eq!(build_of_peer(&client).await, BUILD_A);
    let healthz = get(&host, "/healthz").await;
    assert_eq!(healthz["plugins"], 1, "{healthz}");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_watch_a_change_waits_for_sighup() {
    let dir = PluginDir::with(&[RELOADABLE]);
    let host = HostProcess::serve(&dir, &["--no-watch"]);
    rename_in(&dir, &lib("benchmarks"), &library_bytes("benchmarks"));
    tokio::time::sleep(QUIET).await;
    assert!(!serves(&get(&host, "/toolsets?benchmarks").await, "echo"));
    assert_eq!(generation(&host).await, 1);
    signal(host.pid(), "HUP");
    toolsets_once(&host, "benchmarks", |r| serves(r, "echo")).await;
    assert_eq!(generation(&host).await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_that_failed_to_open_degrades_healthz_until_its_file_changes() {
    let dir = PluginDir::with(&["fixture-base", "fixture-ext-unopenable"]);
    let host = HostProcess::serve(&dir, &[]);
    let client = connect(&format!("{}/mcp", host.base_url())).await;
    assert!(
        !tool_names(client.peer())
            .await
            .contains(&"trace".to_owned())
    );
    let healthz = get(&host, "/healthz").await;
    assert_eq!(healthz["status"], "degraded", "{healthz}");
    assert_eq!(
        healthz["failed"][0]["plugin"], "ext-unopenable",
        "{healthz}"
    );
    assert!(
        healthz["failed"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("ext-unopenable")),
        "{healthz}"
    );
    std::fs::remove_file(dir.file(&lib("fixture_ext_unopenable"))).unwrap();
    toolsets_once(&host, "", |r| r["generation"]["number"] == 2).await;
    assert!(
        tool_names(client.peer())
            .await
            .contains(&"trace".to_owned())
    );
    let healthz = get(&host, "/healthz").await;
    assert_eq!(healthz["status"], "ok", "{healthz}");
    assert_eq!(healthz["generation"]["number"], 2, "{healthz}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_json_written_later_adds_its_servers_without_starting_them() {
    let dir = PluginDir::with(&[RELOADABLE]);
    let host = HostProcess::serve(&dir, &["--cache-dir", &cache_dir(&dir)]);
    let servers = json!({"mcpServers": {"search": {"url": "http://127.0.0.1:9/mcp"}}});
    rename_in(&dir, "mcp.json", servers.to_string().as_bytes());
    let report = toolsets_once(&host, "", |r| has_toolset(r, "search")).await;
    assert_eq!(report["generation"]["number"], 2);
    std::fs::remove_file(dir.file("mcp.json")).unwrap();
    toolsets_once(&host, "", |r| !has_toolset(r, "search")).await;
}

fn cache_dir(dir: &PluginDir) -> String {
    dir.path().join(".cache").display().to_string()
}

fn has_toolset(report: &Value, name: &str) -> bool {
    report["toolsets"]
        .as_array()
        .is_some_and(|sets| sets.iter().any(|s| s["name"] == name))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_listen_stream_hears_that_its_tools_changed() {
    let dir = PluginDir::with(&[RELOADABLE]);
    let host = HostProcess::serve(&dir, &[]);
    let client = connect_2026(
        &format!("{}/mcp?toolsets=benchmarks", host.base_url()),
        ClientConfig::default(),
    )
    .await;
    let mut filter = SubscriptionFilter::new();
    filter.tools_list_changed = Some(true);
    let mut stream = client.listen(filter).await.expect("acknowledged");
    assert_eq!(stream.acknowledged().tools_list_changed, Some(true));
    rename_in(&dir, &lib("benchmarks"), &library_bytes("benchmarks"));
    let heard = next_streamed(&mut stream).await;
    assert!(
        matches!(heard, ServerNotification::ToolListChangedNotification(_)),
        "{heard:?}"
    );
    assert!(tool_names(&client).await.contains(&"echo".to_owned()));
    stream.cancel().await.expect("the stream ends");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_turns_its_tools_and_prompts_off_and_on_and_sessions_hear_of_it() {
    a_plugin_turns_its_tools_and_prompts_off_and_on_in(&[]).await;
}

/// The same with `fixture-context` in a child process: the child tells the host, which serves
/// the plugin's lists.
#[tokio::test(flavor = "multi_thread")]
async fn an_isolated_plugin_turns_its_tools_and_prompts_off_and_on_and_sessions_hear_of_it() {
    a_plugin_turns_its_tools_and_prompts_off_and_on_in(&["--isolate", "context"]).await;
}

/// `fixture-context`'s resource template.
const GREETINGS: &str = "context://greetings/{name}";

async fn a_plugin_turns_its_tools_and_prompts_off_and_on_in(host_args: &[&str]) {
    let dir = PluginDir::with(&["fixture-context", "benchmarks"]);
    let host = HostProcess::serve(&dir, host_args);
    let url = format!("{}/mcp?context", host.base_url());
    let (watcher, mut heard) = session(&url).await;
    let (other, mut other_heard) = session(&format!("{}/mcp?benchmarks", host.base_url())).await;
    let current = connect_2026(&url, ClientConfig::default()).await;
    let mut filter = SubscriptionFilter::new();
    filter.tools_list_changed = Some(true);
    filter.prompts_list_changed = Some(true);
    let mut stream = current.listen(filter).await.expect("acknowledged");
    let toggle = async |kind: &str, name: &str, available: bool| {
        let args = json!({"kind": kind, "name": name, "available": available});
        call_tool(&current, "set_available", args).await
    };

    toggle("tool", "picture", false).await;
    assert_eq!(next_heard(&mut heard, "a tool turned off").await, "tools");
    let streamed = next_streamed(&mut stream).await;
    assert!(
        matches!(streamed, ServerNotification::ToolListChangedNotification(_)),
        "{streamed:?}"
    );
    assert!(!tool_names(&watcher).await.contains(&"picture".to_owned()));
    let refused = watcher
        .call_tool(e2e::mcp::call("picture", json!({})))
        .await
        .expect_err("an off tool is not callable");
    assert!(refused.to_string().contains("picture"), "{refused}");

    toggle("prompt", "introduce", false).await;
    assert_eq!(
        next_heard(&mut heard, "a prompt turned off").await,
        "prompts"
    );
    let prompts = watcher.list_all_prompts().await.expect("prompts/list");
    assert!(prompts.iter().all(|p| p.name != "introduce"));
    toggle("resource", "context://motd", false).await;
    assert_eq!(
        next_heard(&mut heard, "a resource turned off").await,
        "resources"
    );
    let resources = watcher.list_all_resources().await.expect("resources/list");
    assert!(resources.iter().all(|r| r.uri != "context://motd"));
    watcher
        .read_resource(ReadResourceRequestParams::new("context://motd"))
        .await
        .expect_err("an off resource is not read");
    let greeting = || ReadResourceRequestParams::new("context://greetings/ada");
    watcher
        .read_resource(greeting())
        .await
        .expect("read through the template");
    toggle("resource_template", GREETINGS, false).await;
    assert_eq!(
        next_heard(&mut heard, "a resource template turned off").await,
        "resources"
    );
    let templates = watcher
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list");
    assert!(templates.iter().all(|t| t.uri_template != GREETINGS));
    watcher
        .read_resource(greeting())
        .await
        .expect_err("nothing is read through an off template");
    let report = get(&host, "/toolsets").await;
    assert_eq!(
        report["off"],
        json!({
            "tools": ["picture"],
            "prompts": ["introduce"],
            "resources": ["context://motd"],
            "resource_templates": [GREETINGS],
        }),
        "{report}"
    );
    toggle("resource", "context://motd", true).await;
    assert_eq!(
        next_heard(&mut heard, "a resource turned on").await,
        "resources"
    );
    watcher
        .read_resource(ReadResourceRequestParams::new("context://motd"))
        .await
        .expect("an on resource is read");
    toggle("resource_template", GREETINGS, true).await;
    assert_eq!(
        next_heard(&mut heard, "a resource template turned on").await,
        "resources"
    );
    watcher
        .read_resource(greeting())
        .await
        .expect("read through the template on again");

    toggle("tool", "picture", true).await;
    assert_eq!(next_heard(&mut heard, "a tool turned on").await, "tools");
    assert!(tool_names(&watcher).await.contains(&"picture".to_owned()));
    // Another plugin's tool is not this one's to turn off; a session of other toolsets hears
    // nothing of any of it.
    toggle("tool", "echo", false).await;
    nothing_heard(&mut heard, "another plugin's tool").await;
    nothing_heard(&mut other_heard, "another URL").await;
    assert!(tool_names(&other).await.contains(&"echo".to_owned()));

    // From a task of the plugin's runtime, after the call has answered.
    let later = json!({"kind": "tool", "name": "picture", "available": false, "after_ms": 200});
    call_tool(&current, "set_available", later).await;
    assert_eq!(
        next_heard(&mut heard, "a tool turned off after the call").await,
        "tools"
    );
    assert!(!tool_names(&watcher).await.contains(&"picture".to_owned()));
    stream.cancel().await.expect("the stream ends");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_capabilities_say_lists_change() {
    let dir = PluginDir::with(&[RELOADABLE]);
    let host = HostProcess::serve(&dir, &[]);
    let client = connect(&format!("{}/mcp", host.base_url())).await;
    let info = client.peer_info().expect("initialized");
    let capabilities = serde_json::to_value(&info.capabilities).unwrap();
    assert_eq!(capabilities["tools"]["listChanged"], true, "{capabilities}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_isolated_plugin_is_restarted_on_the_new_library() {
    let dir = PluginDir::with(&[RELOADABLE]);
    let host = HostProcess::serve(&dir, &["--isolate", "reloadable"]);
    let (client, mut heard) = session(&format!("{}/mcp", host.base_url())).await;
    assert_eq!(build_of_peer(&client).await, BUILD_A);
    let first = children(host.pid());
    assert_eq!(first.len(), 1, "one child serves the isolated plugin");

    replace_with_build_b(&dir, &client, &mut heard).await;
    let start = std::time::Instant::now();
    while children(host.pid()).contains(&first[0]) {
        assert!(start.elapsed() < PATIENCE, "the old child still runs");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        children(host.pid()).len(),
        1,
        "a new child serves the new library"
    );
}
