//! Several replicas of the real host sharing state in a real Redis (Debian's `redis-server`),
//! behind a real HAProxy where a balancer is what is under test, talked to by rmcp's clients.
//! `cargo xtask fleet` runs these alone; `cargo xtask test` runs them with the rest. Without
//! `redis-server` (or `haproxy`) on the machine, a test says SKIPPED and passes, unless
//! `E2E_REQUIRE_FLEET` is set (CI and `cargo xtask fleet` set it), when it fails.
//!
//! Covered: a task started through one replica is read, answered (`tasks/update`) and
//! cancelled through the others, and its result outlives its replica; a listen stream on one
//! replica hears a resource update and a `list_changed` a call on another caused; a 2025-11-25
//! session goes on through the balancer after its replica is killed, and requests racing to
//! take it over are all answered; 2026-07-28 calls and
//! multi-round calls go round-robin across the replicas; `/readyz` says when Redis is gone.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use e2e::{
    HostProcess, PluginDir,
    mcp::{call, call_tool, connect_2026, connect_as, get_json, text},
    tasks::{TaskClient, result_text, start, until},
};
use rmcp::model::{
    CallToolResponse, CancelTaskParams, ClientConfig, InputResponses, ServerNotification,
    SubscriptionFilter, TaskPayload, TaskStatus, UpdateTaskParams,
};
use serde_json::{Value, json};

/// How long a test waits for what should happen within a second or so.
const PATIENCE: Duration = Duration::from_secs(15);

/// The key all replicas seal 2026-07-28 round states with.
const STATE_KEY: &str = "fleet-test-request-state-key-0123456789abcdef";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn installed(program: &str) -> Option<PathBuf> {
    ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"]
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.is_file())
}

/// Says a test is skipped for want of `program`, or fails it when the fleet tests are required.
fn skipped(test: &str, program: &str, package: &str) {
    let why = format!("{program} is not installed (apt-get install {package})");
    assert!(
        std::env::var_os("E2E_REQUIRE_FLEET").is_none(),
        "{test}: {why}, and E2E_REQUIRE_FLEET is set"
    );
    eprintln!("SKIPPED {test}: {why}");
}

/// A process of this test, killed when dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A Redis of its own on a free port, or None (and SKIPPED said) without `redis-server`.
fn redis(test: &str) -> Option<(Daemon, String)> {
    let Some(server) = installed("redis-server") else {
        skipped(test, "redis-server", "redis-server");
        return None;
    };
    let port = free_port();
    let child = Command::new(server)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server starts");
    let daemon = Daemon(child);
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < PATIENCE, "redis-server never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some((daemon, format!("redis://127.0.0.1:{port}")))
}

/// Replica `name` sharing `redis`, serving `dir`.
fn replica(dir: &PluginDir, redis: &str, name: &str, more: &[&str]) -> HostProcess {
    let mut args = vec!["--redis-url", redis, "--replica-id", name];
    args.extend_from_slice(more);
    HostProcess::serve_with_env(dir, &args, &[("REACTOR_MCP_REQUEST_STATE_KEY", STATE_KEY)])
}

/// Waits until every replica says it is ready (Redis reached, channels heard).
async fn all_ready(replicas: &[&HostProcess]) {
    for replica in replicas {
        let started = Instant::now();
        loop {
            let (status, body) = get_json(&format!("{}/readyz", replica.base_url())).await;
            if status == 200 {
                assert_eq!(body["redis"], "connected", "{body}");
                break;
            }
            assert!(started.elapsed() < PATIENCE, "never ready: {body}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Replicas r1 and r2 of `plugins`, sharing a Redis of their own, both ready; None (and
/// SKIPPED said) without `redis-server`.
async fn two_replicas(
    test: &str,
    plugins: &[&str],
) -> Option<(Daemon, PluginDir, HostProcess, HostProcess)> {
    let (redis, url) = redis(test)?;
    let dir = PluginDir::with(plugins);
    let (r1, r2) = (
        replica(&dir, &url, "r1", &[]),
        replica(&dir, &url, "r2", &[]),
    );
    all_ready(&[&r1, &r2]).await;
    Some((redis, dir, r1, r2))
}

/// HAProxy on a free port in front of `replicas` (name, address), balancing `balance`, with
/// the stickiness and task routing of `deploy/haproxy.cfg`; None (and SKIPPED said) without it.
fn haproxy(
    test: &str,
    balance: &str,
    replicas: &[(&str, &HostProcess)],
) -> Option<(Daemon, String, tempfile::TempDir)> {
    let Some(program) = installed("haproxy") else {
        skipped(test, "haproxy", "haproxy");
        return None;
    };
    let port = free_port();
    let mut config = format!(
        "global\n    log stdout format raw local0 err\n\
         defaults\n    mode http\n    timeout connect 2s\n    timeout client 1h\n    timeout server 1h\n\
         \x20   retries 3\n    option redispatch 1\n    retry-on conn-failure empty-response\n\
         frontend mcp\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\
         backend replicas\n    balance {balance}\n    option httpchk\n\
         \x20   http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost\n\
         \x20   stick-table type string len 128 size 100k expire 1h\n\
         \x20   stick store-response res.hdr(mcp-session-id)\n\
         \x20   stick match req.hdr(mcp-session-id)\n"
    );
    for (name, _) in replicas {
        config.push_str(&format!(
            "    use-server {name} if {{ req.hdr(mcp-name) -m beg {name}. }}\n"
        ));
    }
    for (name, host) in replicas {
        config.push_str(&format!(
            "    server {name} {} check inter 200ms fall 1 rise 1\n",
            host.addr()
        ));
    }
    let dir = tempfile::tempdir().expect("a folder for haproxy.cfg");
    let file = dir.path().join("haproxy.cfg");
    std::fs::write(&file, config).expect("haproxy.cfg written");
    let child = Command::new(program)
        .arg("-f")
        .arg(&file)
        .arg("-db")
        .stdout(Stdio::null())
        .spawn()
        .expect("haproxy starts");
    let daemon = Daemon(child);
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < PATIENCE, "haproxy never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some((daemon, format!("http://127.0.0.1:{port}"), dir))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_started_on_one_replica_is_read_answered_and_cancelled_through_the_others() {
    let Some((_redis, url)) = redis("tasks across replicas") else {
        return;
    };
    let dir = PluginDir::with(&["fixture-context"]);
    let (r1, r2, r3) = (
        replica(&dir, &url, "r1", &[]),
        replica(&dir, &url, "r2", &[]),
        replica(&dir, &url, "r3", &[]),
    );
    all_ready(&[&r1, &r2, &r3]).await;
    let client = |host: &HostProcess| {
        let url = format!("{}/mcp?context", host.base_url());
        async move { connect_2026(&url, TaskClient::taking_tasks()).await }
    };
    let (one, two, three) = (client(&r1).await, client(&r2).await, client(&r3).await);

    // An elicitation waits in the task's inputRequests; another replica sees it, a third answers.
    let id = start(&one, "task_elicit", json!({})).await;
    assert!(id.starts_with("r1."), "{id}");
    let task = until(&two, &id, TaskStatus::InputRequired).await;
    let TaskPayload::InputRequired { input_requests } = &task.task.payload else {
        panic!("not input_required through r2: {task:?}");
    };
    let asked = serde_json::to_value(input_requests).unwrap();
    assert_eq!(
        asked["elicitation-1"]["params"]["message"], "Your name?",
        "{asked}"
    );
    let answers: InputResponses = serde_json::from_value(
        json!({"elicitation-1": {"action": "accept", "content": {"name": "Ada"}}}),
    )
    .unwrap();
    three
        .update_task(UpdateTaskParams::new(&id, answers))
        .await
        .expect("tasks/update through r3");
    let done = until(&two, &id, TaskStatus::Completed).await;
    assert_eq!(result_text(&done), "Hello, Ada!");

    // A task that waits until cancelled, cancelled through another replica.
    let waiting = start(&one, "task_wait", json!({})).await;
    assert_eq!(
        until(&three, &waiting, TaskStatus::Working)
            .await
            .task
            .status(),
        TaskStatus::Working
    );
    three
        .cancel_task(CancelTaskParams::new(&waiting))
        .await
        .expect("tasks/cancel through r3");
    let cancelled = until(&two, &waiting, TaskStatus::Cancelled).await;
    assert_eq!(cancelled.task.status(), TaskStatus::Cancelled);

    // The result outlives its replica; a task still running when it died is failed, naming it.
    let running = start(&one, "task_wait", json!({})).await;
    until(&two, &running, TaskStatus::Working).await;
    drop(one);
    drop(r1);
    let after = until(&two, &id, TaskStatus::Completed).await;
    assert_eq!(result_text(&after), "Hello, Ada!", "read from Redis");
    let failed = until(&three, &running, TaskStatus::Failed).await;
    let TaskPayload::Failed { error } = &failed.task.payload else {
        panic!("not failed: {failed:?}");
    };
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("replica `r1`"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listen_stream_on_one_replica_hears_what_a_call_on_another_changed() {
    let Some((_redis, _dir, r1, r2)) = two_replicas(
        "events across replicas",
        &["fixture-library", "fixture-context"],
    )
    .await
    else {
        return;
    };
    let listener = connect_2026(
        &format!("{}/mcp?toolsets=library,context", r2.base_url()),
        ClientConfig::default(),
    )
    .await;
    let mut filter = SubscriptionFilter::new();
    filter.resource_subscriptions = Some(vec!["library://note".to_owned()]);
    filter.tools_list_changed = Some(true);
    let mut stream = listener.listen(filter).await.expect("acknowledged");
    let mut next = async || {
        tokio::time::timeout(PATIENCE, stream.next())
            .await
            .expect("a notification within the patience")
            .expect("the stream is open")
            .expect("a notification")
    };

    let writer = connect_2026(
        &format!("{}/mcp?only=librarian", r1.base_url()),
        ClientConfig::default(),
    )
    .await;
    call_tool(&writer, "write_note", json!({"text": "closed on Sunday"})).await;
    let heard = next().await;
    let ServerNotification::ResourceUpdatedNotification(update) = heard else {
        panic!("not a resource update: {heard:?}");
    };
    assert_eq!(update.params.uri, "library://note");

    let switcher = connect_2026(
        &format!("{}/mcp?context", r1.base_url()),
        ClientConfig::default(),
    )
    .await;
    call_tool(
        &switcher,
        "set_available",
        json!({"kind": "tool", "name": "log_levels", "available": false}),
    )
    .await;
    let heard = next().await;
    assert!(
        matches!(heard, ServerNotification::ToolListChangedNotification(_)),
        "not a tools list change: {heard:?}"
    );
    let tools = e2e::mcp::tool_names(&listener).await;
    assert!(
        !tools.contains(&"log_levels".to_owned()),
        "r2 applied what r1's plugin turned off: {tools:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2025_session_goes_on_after_its_replica_is_killed() {
    let Some((_redis, _dir, r1, r2)) =
        two_replicas("sessions across replicas", &["fixture-context"]).await
    else {
        return;
    };
    // `first`: every new session goes to r1 while it is up.
    let Some((_proxy, front, _config)) = haproxy(
        "sessions across replicas",
        "first",
        &[("r1", &r1), ("r2", &r2)],
    ) else {
        return;
    };
    let client = connect_as(&format!("{front}/mcp?context"), TaskClient::taking_tasks()).await;
    let before = call_tool(&client, "log_levels", json!({})).await;
    drop(r1);
    let after = call_tool(&client, "log_levels", json!({})).await;
    assert_eq!(text(&after), text(&before), "the same session, on r2");
    let sessions: Value = get_json(&format!("{}/healthz", r2.base_url())).await.1;
    assert!(
        r2.stderr_so_far()
            .contains("took over a session another replica opened"),
        "r2 took the session over: {sessions}"
    );
}

/// A raw JSON-RPC POST to `url` in session `session` (none for `initialize`).
async fn post(url: &str, session: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = e2e::http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.expect("the replica answers")
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_racing_to_take_over_a_session_are_all_answered() {
    let Some((_redis, _dir, r1, r2)) =
        two_replicas("racing take-overs", &["fixture-context"]).await
    else {
        return;
    };
    let opened = post(
        &format!("{}/mcp?context", r1.base_url()),
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .expect("a session id")
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let endpoint = format!("{}/mcp?context", r1.base_url());
    assert_eq!(
        post(&endpoint, Some(&session), &initialized).await.status(),
        202
    );
    let on_r2 = format!("{}/mcp?context", r2.base_url());
    // Spread over the take-over (which opens the plugin), so some arrive while it is under way.
    let calls = (0..24).map(|id| {
        let body = json!({"jsonrpc": "2.0", "id": 10 + id, "method": "tools/call",
            "params": {"name": "log_levels", "arguments": {}}});
        let (on_r2, session) = (&on_r2, &session);
        async move {
            tokio::time::sleep(Duration::from_millis(5 * id)).await;
            let answer = post(on_r2, Some(session), &body).await;
            (answer.status(), answer.text().await.unwrap_or_default())
        }
    });
    for (status, body) in futures::future::join_all(calls).await {
        assert_eq!(
            status,
            200,
            "a racing request to r2: {body}\n{}",
            r2.stderr_so_far()
        );
        assert!(body.contains("\"result\""), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_and_multi_round_calls_go_round_robin_across_replicas() {
    let Some((_redis, url)) = redis("round-robin calls") else {
        return;
    };
    let dir = PluginDir::with(&["fixture-context"]);
    let replicas = [
        replica(&dir, &url, "r1", &[]),
        replica(&dir, &url, "r2", &[]),
        replica(&dir, &url, "r3", &[]),
    ];
    all_ready(&replicas.iter().collect::<Vec<_>>()).await;
    let named: Vec<(&str, &HostProcess)> = ["r1", "r2", "r3"].into_iter().zip(&replicas).collect();
    let Some((_proxy, front, _config)) = haproxy("round-robin calls", "roundrobin", &named) else {
        return;
    };
    let client = connect_2026(&format!("{front}/mcp?context"), TaskClient::taking_tasks()).await;
    for _ in 0..30 {
        call_tool(&client, "log_levels", json!({})).await;
    }
    for round in 0..6 {
        let Ok(CallToolResponse::InputRequired(needs)) =
            client.call_tool_once(call("task_greet", json!({}))).await
        else {
            panic!("round 1 of call {round} is not an input-required result");
        };
        let mut again = call("task_greet", json!({}));
        again.input_responses = Some(InputResponses::from([(
            "name".to_owned(),
            json!({"action": "accept", "content": {"name": "Grace"}}),
        )]));
        again.request_state = needs.request_state;
        let id = match client.call_tool_once(again).await {
            Ok(CallToolResponse::Task(created)) => created.task.task_id,
            other => panic!("round 2 of call {round} did not start a task: {other:?}"),
        };
        let done = until(&client, &id, TaskStatus::Completed).await;
        assert_eq!(result_text(&done), "Hello later, Grace!");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn readyz_says_when_redis_is_gone() {
    let Some((redis, url)) = redis("readiness without Redis") else {
        return;
    };
    let dir = PluginDir::with(&["fixture-context"]);
    let r1 = replica(&dir, &url, "r1", &[]);
    all_ready(&[&r1]).await;
    drop(redis);
    let started = Instant::now();
    loop {
        let (status, body) = get_json(&format!("{}/readyz", r1.base_url())).await;
        if status == 503 {
            assert_eq!(body["redis"], "unreachable", "{body}");
            break;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "still ready without Redis: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Calls that need nothing shared go on.
    let client = connect_2026(
        &format!("{}/mcp?context", r1.base_url()),
        TaskClient::taking_tasks(),
    )
    .await;
    call_tool(&client, "log_levels", json!({})).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_draw_on_one_rate_limit() {
    let Some((_redis, url)) = redis("a shared rate limit") else {
        return;
    };
    let dir = PluginDir::with(&["fixture-context"]);
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[[limit]]\nname = \"fleet\"\nrate = 4\nperiod = \"1m\"\n",
    )
    .unwrap();
    let policy = ["--policy", policy.to_str().unwrap()];
    let (r1, r2) = (
        replica(&dir, &url, "r1", &policy),
        replica(&dir, &url, "r2", &policy),
    );
    all_ready(&[&r1, &r2]).await;
    let client = |host: &HostProcess| {
        let url = format!("{}/mcp?context", host.base_url());
        async move { connect_2026(&url, ClientConfig::default()).await }
    };
    let (one, two) = (client(&r1).await, client(&r2).await);
    for _ in 0..2 {
        call_tool(&one, "log_levels", json!({})).await;
        call_tool(&two, "log_levels", json!({})).await;
    }
    for (name, replica) in [("r1", &one), ("r2", &two)] {
        let refused = replica
            .call_tool(call("log_levels", json!({})))
            .await
            .expect_err("the fifth call of the minute, on either replica");
        // The front door's HTTP 429 (its body names the limit: tests/tests/policies.rs).
        assert!(
            refused.to_string().contains("HTTP 429"),
            "{name}: {refused}"
        );
    }
}

/// Sends `signal` to the process `pid`.
fn signal(pid: u32, signal: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill -{signal} {pid}");
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_leave_the_balancer_without_losing_calls_that_had_not_reached_them() {
    let Some((_redis, url)) = redis("replicas leaving under load") else {
        return;
    };
    let dir = PluginDir::with(&["fixture-context"]);
    let delay = ["--shutdown-delay", "1"];
    let replicas = [
        replica(&dir, &url, "r1", &delay),
        replica(&dir, &url, "r2", &delay),
        replica(&dir, &url, "r3", &delay),
    ];
    all_ready(&replicas.iter().collect::<Vec<_>>()).await;
    let named: Vec<(&str, &HostProcess)> = ["r1", "r2", "r3"].into_iter().zip(&replicas).collect();
    let Some((_proxy, front, _config)) =
        haproxy("replicas leaving under load", "roundrobin", &named)
    else {
        return;
    };
    let [r1, r2, r3] = replicas;
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(Mutex::new(Vec::<(Instant, String)>::new()));
    let served = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..4 {
        let client = connect_2026(&format!("{front}/mcp?context"), ClientConfig::default()).await;
        let (stop, failed, served) = (Arc::clone(&stop), Arc::clone(&failed), Arc::clone(&served));
        clients.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match client.call_tool(call("log_levels", json!({}))).await {
                    Ok(_) => {
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(error) => failed
                        .lock()
                        .unwrap()
                        .push((Instant::now(), error.to_string())),
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // SIGTERM: /readyz turns 503 while the replica still serves, so HAProxy stops first.
    let mut r1 = r1;
    signal(r1.pid(), "TERM");
    let (status, body) = get_json(&format!("{}/readyz", r1.base_url())).await;
    assert_eq!(status, 503, "not ready once SIGTERM came: {body}");
    assert!(
        r1.wait_for_exit(PATIENCE).is_some(),
        "r1 ended after its delay and drain"
    );
    let after_term = failed.lock().unwrap().len();
    assert_eq!(
        after_term,
        0,
        "a replica leaving on SIGTERM lost calls: {:?}",
        failed.lock().unwrap()
    );

    // SIGKILL: only the calls r2 was running may fail; HAProxy sends the rest elsewhere.
    let killed = Instant::now();
    drop(r2);
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    let failed = failed.lock().unwrap();
    assert!(
        failed.len() <= 4,
        "more calls failed than were in flight on the killed replica: {failed:?}"
    );
    assert!(
        failed
            .iter()
            .all(|(at, _)| at.duration_since(killed) < Duration::from_millis(500)),
        "calls failed after the balancer knew: {failed:?}"
    );
    assert!(served.load(Ordering::Relaxed) > 20);
    drop(r3);
}
