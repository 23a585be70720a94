//! Isolated plugins end to end (`--isolate`): the real host binary runs `fixture-crashy` in a
//! child process of its own binary, beside `benchmarks` in process, and real MCP clients call
//! both. Each way a plugin can end its process (abort, segfault, `exit`, a stack overflow)
//! answers the call with the plugin, tool and signal or exit code named, leaves every other
//! session serving, and the next call starts a new child; a call that never returns times out
//! and its child is replaced, a frozen one (SIGSTOP) even with calls queued behind it; a large
//! answer crosses once, and one over the message limit fails at once, keeping the child; the
//! child's stdout goes to the log; stopping the host stops the
//! child. `context.rs` and `extensions.rs` run their `Context` and extension tests isolated too.

use std::time::{Duration, Instant};

use e2e::{
    HostProcess, PluginDir,
    mcp::{call_tool, connect, get_json, text},
    procs::{children, processes},
    run_host,
};
use serde_json::{Value, json};

/// A host serving `fixture-crashy` isolated and `benchmarks` in process, with `extra` flags.
fn serve(extra: &[&str]) -> (PluginDir, HostProcess) {
    let dir = PluginDir::with(&["fixture-crashy", "benchmarks"]);
    let mut args = vec!["--isolate", "crashy"];
    args.extend_from_slice(extra);
    let host = HostProcess::serve(&dir, &args);
    (dir, host)
}

/// The id of the process `crashy` answers from.
async fn crashy_pid(client: &e2e::mcp::Client) -> u32 {
    let answer = call_tool(client.peer(), "pid", json!({})).await;
    text(&answer)
        .parse()
        .unwrap_or_else(|_| panic!("{answer:?}"))
}

/// Waits up to 10 s for `done`.
async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_isolated_plugin_is_served_from_a_child_started_on_first_need() {
    let (_dir, mut host) = serve(&[]);
    let (_, toolsets) = get_json(&format!("{}/toolsets?only=crashy", host.base_url())).await;
    assert!(
        toolsets["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("abort")),
        "{toolsets}"
    );
    let (_, contributions) = get_json(&format!("{}/contributions", host.base_url())).await;
    let abort = contributions["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "abort")
        .unwrap_or_else(|| panic!("{contributions}"));
    assert_eq!(abort["provider"], "isolated library", "{abort}");
    assert_eq!(
        children(host.pid()),
        Vec::<u32>::new(),
        "nothing started yet"
    );

    let client = connect(&format!("{}/mcp?only=crashy,benchmarks", host.base_url())).await;
    let pid = crashy_pid(&client).await;
    assert_ne!(pid, host.pid());
    assert_eq!(children(host.pid()), [pid], "one child, the plugin's");
    let echoed = call_tool(client.peer(), "echo", json!({"text": "in process"})).await;
    assert_eq!(text(&echoed), "in process");

    let shouted = call_tool(client.peer(), "shout", json!({"text": "hey"})).await;
    assert_eq!(
        text(&shouted),
        "hey",
        "the child's stdout is not the stream"
    );
    host.wait_for_stderr("shouted: hey", Duration::from_secs(5));

    let (_, health) = get_json(&format!("{}/healthz", host.base_url())).await;
    assert_eq!(health["status"], "ok");
    assert_eq!(
        health["processes"],
        json!([{"plugin": "crashy", "kind": "isolated_library", "pid": pid, "failures": 0,
                "parked": false, "retry_in_s": null}])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_way_to_die_answers_the_call_and_the_next_call_starts_a_new_child() {
    for (tool, arguments, how) in [
        ("abort", json!({}), "was killed by signal 6 (SIGABRT)"),
        ("segfault", json!({}), "was killed by signal 11 (SIGSEGV)"),
        ("exit", json!({"code": 7}), "exited with code 7"),
        // Rust's stack-overflow handler prints a message and aborts.
        ("overflow", json!({}), "was killed by signal"),
    ] {
        let (_dir, mut host) = serve(&[]);
        let client = connect(&format!("{}/mcp?only=crashy,benchmarks", host.base_url())).await;
        let other = connect(&format!("{}/mcp?only=benchmarks", host.base_url())).await;
        let first = crashy_pid(&client).await;

        let died = call_tool(client.peer(), tool, arguments).await;
        assert_eq!(died.is_error, Some(true), "{tool}: {died:?}");
        let expected = format!("plugin `crashy` failed the call of `{tool}`: its process {how}");
        assert!(text(&died).starts_with(&expected), "{tool}: {died:?}");
        host.wait_for_stderr("its last stderr lines", Duration::from_secs(5));

        let echoed = call_tool(other.peer(), "echo", json!({"text": "still here"})).await;
        assert_eq!(
            text(&echoed),
            "still here",
            "{tool}: another session serves on"
        );
        let echoed = call_tool(client.peer(), "echo", json!({"text": "me too"})).await;
        assert_eq!(
            text(&echoed),
            "me too",
            "{tool}: the same session serves on"
        );
        let next = crashy_pid(&client).await;
        assert_ne!(next, first, "{tool}: a new child");
        assert!(
            !processes().iter().any(|(pid, ..)| *pid == first),
            "{tool}: the old child is gone"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_answers_every_call_in_flight_on_that_child() {
    let (_dir, host) = serve(&[]);
    let url = format!("{}/mcp?only=crashy", host.base_url());
    let (waiting, killer) = (connect(&url).await, connect(&url).await);
    crashy_pid(&waiting).await;
    let hanging = tokio::spawn(async move {
        let answer = call_tool(waiting.peer(), "hang", json!({})).await;
        (waiting, answer)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let died = call_tool(killer.peer(), "abort", json!({})).await;
    assert!(text(&died).contains("SIGABRT"), "{died:?}");
    let (_waiting, answer) = hanging.await.unwrap();
    assert_eq!(answer.is_error, Some(true));
    assert_eq!(
        text(&answer),
        "plugin `crashy` failed the call of `hang`: its process was killed by signal 6 (SIGABRT)"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn crashing_again_at_once_waits_for_a_backoff_which_healthz_shows() {
    let (_dir, host) = serve(&[]);
    let client = connect(&format!("{}/mcp?only=crashy", host.base_url())).await;
    for _ in 0..2 {
        let died = call_tool(client.peer(), "abort", json!({})).await;
        assert!(text(&died).contains("SIGABRT"), "{died:?}");
    }
    let waiting = call_tool(client.peer(), "pid", json!({})).await;
    assert!(
        text(&waiting).starts_with(
            "plugin `crashy` is not started again yet: it went away or failed to start 2 times in a row; next try in "
        ),
        "{waiting:?}"
    );
    let (_, health) = get_json(&format!("{}/healthz", host.base_url())).await;
    let process = &health["processes"][0];
    assert_eq!(process["failures"], 2, "{health}");
    assert_eq!(process["pid"], Value::Null, "{health}");
    assert!(process["retry_in_s"].as_f64().unwrap() > 0.0, "{health}");
    let (_, toolsets) = get_json(&format!("{}/toolsets", host.base_url())).await;
    assert_eq!(toolsets["processes"][0]["failures"], 2, "{toolsets}");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    crashy_pid(&client).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_never_returns_times_out_and_its_child_is_replaced() {
    let (_dir, host) = serve(&["--call-timeout", "crashy=1"]);
    let client = connect(&format!("{}/mcp?only=crashy", host.base_url())).await;
    let first = crashy_pid(&client).await;
    let hung = call_tool(client.peer(), "hang", json!({})).await;
    assert_eq!(text(&hung), "tool `hang` timed out after 1 s");
    eventually("the stuck child to end", async || {
        !processes().iter().any(|(pid, ..)| *pid == first)
    })
    .await;
    assert_ne!(crashy_pid(&client).await, first, "a new child serves");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_frozen_child_is_replaced_though_calls_keep_coming() {
    let (_dir, host) = serve(&["--call-timeout", "crashy=1"]);
    let url = format!("{}/mcp?only=crashy", host.base_url());
    let client = connect(&url).await;
    let frozen = crashy_pid(&client).await;
    e2e::procs::signal(frozen, "STOP");
    let stopped = Instant::now();
    // Callers keep calls in flight on the frozen child, a new one as each times out, until
    // it is gone: that must not postpone its end.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let callers: Vec<_> = (0..4)
        .map(|_| {
            let (url, done) = (url.clone(), std::sync::Arc::clone(&done));
            tokio::spawn(async move {
                let client = connect(&url).await;
                while !done.load(std::sync::atomic::Ordering::Relaxed)
                    && stopped.elapsed() < Duration::from_secs(30)
                {
                    call_tool(client.peer(), "shout", json!({"text": "hi"})).await;
                }
            })
        })
        .collect();
    eventually("the frozen child to end", async || {
        !processes().iter().any(|(pid, ..)| *pid == frozen)
    })
    .await;
    eprintln!(
        "the frozen child ended {:?} after SIGSTOP",
        stopped.elapsed()
    );
    assert!(
        callers.iter().all(|caller| !caller.is_finished()),
        "it ended while calls kept coming"
    );
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for caller in callers {
        caller.await.unwrap();
    }
    assert_ne!(crashy_pid(&client).await, frozen, "a new child serves");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_answer_crosses_the_pipe_once_and_one_over_the_limit_fails_at_once() {
    let dir = PluginDir::with(&["benchmarks"]);
    let host = HostProcess::serve(&dir, &["--isolate", "benchmarks", "--call-timeout", "30"]);
    let client = connect(&format!("{}/mcp?only=benchmarks", host.base_url())).await;
    // 12 MiB of text: twice that, as the answer was carried before, is over the 16 MiB limit.
    let large = call_tool(client.peer(), "blob", json!({"bytes": 12 << 20})).await;
    assert_eq!(text(&large).len(), 12 << 20);
    let child = children(host.pid());
    assert_eq!(child.len(), 1, "one child: {child:?}");

    let started = Instant::now();
    let over = call_tool(client.peer(), "blob", json!({"bytes": 16 << 20})).await;
    eprintln!(
        "the answer over the limit failed after {:?}",
        started.elapsed()
    );
    assert_eq!(over.is_error, Some(true));
    let message = text(&over);
    assert!(
        message.starts_with("plugin `benchmarks` failed the call of `blob`")
            && message.contains("plugin `benchmarks`'s answer is 16777")
            && message.contains("bytes, over the limit of 16777216 bytes for one message"),
        "{message}"
    );
    let small = call_tool(client.peer(), "blob", json!({"bytes": 3})).await;
    assert_eq!(text(&small), "xxx");
    assert_eq!(children(host.pid()), child, "the healthy child was kept");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_child_and_leaves_no_process() {
    let (_dir, mut host) = serve(&[]);
    let client = connect(&format!("{}/mcp?only=crashy", host.base_url())).await;
    let pid = crashy_pid(&client).await;
    e2e::procs::signal(host.pid(), "TERM");
    assert!(host.wait_for_exit(Duration::from_secs(15)).is_some());
    assert!(
        host.stderr_so_far().contains("stopped plugin"),
        "the plugin's stop hook ran"
    );
    eventually("the child to end", async || {
        !processes().iter().any(|(p, ..)| *p == pid)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_host_leaves_no_child() {
    let (_dir, mut host) = serve(&[]);
    let client = connect(&format!("{}/mcp?only=crashy", host.base_url())).await;
    let pid = crashy_pid(&client).await;
    e2e::procs::signal(host.pid(), "KILL");
    assert!(host.wait_for_exit(Duration::from_secs(5)).is_some());
    eventually("the orphaned child to end", async || {
        !processes().iter().any(|(p, ..)| *p == pid)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_isolated_plugin_keeps_all_but_its_wraps_of_other_plugins_tools() {
    let dir = PluginDir::with(&["sandboxes", "sandboxes-datalayer"]);
    let listed = run_host(&["list", "--isolate", "sandboxes-datalayer"], &dir);
    listed.assert_success();
    let warning = "is isolated without its extension of `launch_sandbox`: its extension of \
                   `launch_sandbox` wraps another plugin's tool, which its code could not call \
                   from a child process";
    assert!(listed.stderr.contains(warning), "{}", listed.stderr);
    assert!(
        listed.stdout.contains("sandboxes-datalayer"),
        "listed, not skipped: {}",
        listed.stdout
    );

    let host = HostProcess::serve(&dir, &["--isolate", "sandboxes-datalayer"]);
    let client = connect(&format!("{}/mcp?toolsets=sandboxes", host.base_url())).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let description = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name);
        tool.and_then(|t| t.description.clone())
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        !description("launch_sandbox").contains("Datalayer"),
        "the refused wrap leaves launch_sandbox as sandboxes serves it"
    );
    let launched = call_tool(
        client.peer(),
        "launch_sandbox",
        json!({"sandbox_name": "x"}),
    )
    .await;
    assert_ne!(launched.is_error, Some(true), "{launched:?}");
}

/// Without `--isolate`, a plugin that aborts or faults ends the host, and the host's log says
/// which plugins ran in process and how to keep the server up.
#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_that_ends_the_host_in_process_leaves_a_line_naming_it() {
    use std::os::unix::process::ExitStatusExt as _;

    for (tool, signal) in [("abort", 6), ("segfault", 11)] {
        let dir = PluginDir::with(&["fixture-crashy", "benchmarks"]);
        let mut host = HostProcess::serve(&dir, &[]);
        let client = connect(&format!("{}/mcp?toolsets=crashy", host.base_url())).await;
        // The host dies with the call: rmcp's client may wait on for an answer that never
        // comes, so the test waits for the process instead.
        let peer = client.peer().clone();
        let calling = tokio::spawn(async move {
            let _ = peer.call_tool(e2e::mcp::call(tool, json!({}))).await;
        });
        let status = host
            .wait_for_exit(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{tool}: the host did not end"));
        assert_eq!(status.signal(), Some(signal), "{tool}: {status:?}");
        let log = host.stderr_so_far();
        let line = log
            .lines()
            .find(|l| l.starts_with("FATAL reactor-mcp-server"))
            .unwrap_or_else(|| panic!("{tool}: no line in the log:\n{log}"));
        assert!(line.contains("(crashy)"), "{tool}: {line}");
        assert!(line.contains("--isolate NAME"), "{tool}: {line}");
        assert_eq!(
            log.matches("FATAL reactor-mcp-server").count(),
            1,
            "{tool}: once"
        );
        calling.abort();
    }
}

/// An isolated plugin's child keeps the host's environment (the plugin may need it, as in
/// process) but never the host's own settings and secrets: no `REACTOR_MCP_*` variable (the
/// key that seals 2026-07-28 rounds among them) but how to log.
#[tokio::test(flavor = "multi_thread")]
async fn an_isolated_child_never_sees_the_hosts_settings_or_secrets() {
    let dir = PluginDir::with(&["fixture-crashy"]);
    let host = HostProcess::serve_with_env(
        &dir,
        &["--isolate", "crashy"],
        &[
            ("REACTOR_MCP_REQUEST_STATE_KEY", &"k".repeat(32)),
            ("REACTOR_MCP_LOG_LEVEL", "info"),
            ("PLUGIN_TOKEN", "for the plugin"),
        ],
    );
    let client = connect(&format!("{}/mcp?toolsets=crashy", host.base_url())).await;
    let answer = call_tool(client.peer(), "environment", json!({})).await;
    let names: Vec<String> = serde_json::from_str(&text(&answer)).expect("a JSON list");
    assert!(names.iter().any(|n| n == "PLUGIN_TOKEN"), "{names:?}");
    assert!(
        names.iter().any(|n| n == "REACTOR_MCP_LOG_LEVEL"),
        "{names:?}"
    );
    let leaked: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("REACTOR_MCP_") && *n != "REACTOR_MCP_LOG_LEVEL")
        .collect();
    assert!(
        leaked.is_empty(),
        "the host's settings reached the child: {leaked:?}"
    );
}
