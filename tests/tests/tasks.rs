//! Tool calls run as tasks (the MCP tasks extension, `io.modelcontextprotocol/tasks`), end to
//! end: the real host binary, `fixture-context` (whose `task_wait` may run as a task and
//! `task_elicit` must), and rmcp's client declaring the extension (or not).
//!
//! Covered: a task's result through polled `tasks/get`; a required-task tool refused (`-32021`)
//! to a client without the extension, and run plainly an optional one; `tasks/cancel`
//! cancelling the tool (the plugin sees it); an elicitation parked in `inputRequests` and
//! answered by `tasks/update` (also with the plugin isolated); an `input_first` tool gathering
//! its input on the session (2025-11-25) or in an input-required round (2026-07-28) before it
//! becomes a task (also isolated); the per-session bound; a task invisible to another session;
//! a policy's concurrency cap held by a running task until it ends; a replica's task ids
//! starting with its name.

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use e2e::{
    HostProcess, PluginDir,
    mcp::call,
    tasks::{PATIENCE, TaskClient, TaskPeer, get, result_text, start, until},
};
use rmcp::{
    ServiceError,
    model::{
        CallToolResponse, CancelTaskParams, ErrorCode, InputResponses, TaskPayload, TaskStatus,
        UpdateTaskParams,
    },
};
use serde_json::json;

type Client = TaskPeer;

/// A host serving `fixture-context` with `host_args`, and the URL of its `context` toolset.
fn serve(host_args: &[&str]) -> (PluginDir, HostProcess, String) {
    let dir = PluginDir::with(&["fixture-context"]);
    let host = HostProcess::serve(&dir, host_args);
    let url = format!("{}/mcp?context", host.base_url());
    (dir, host, url)
}

async fn connect(url: &str, tasks: bool) -> Client {
    let client = TaskClient {
        tasks,
        ..TaskClient::default()
    };
    e2e::mcp::connect_as(url, client).await
}

fn mcp_error(error: ServiceError) -> rmcp::ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => panic!("not an MCP error: {other}"),
    }
}

async fn seen(client: &Client) -> Vec<String> {
    let result = client
        .call_tool(call("seen", json!({})))
        .await
        .expect("seen");
    let text = e2e::mcp::text(&result);
    serde_json::from_str(&text).expect("a list of strings")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_optional_task_tool_runs_as_a_task_and_its_result_is_polled() {
    let (_dir, _host, url) = serve(&[]);
    let client = connect(&url, true).await;
    let id = start(&client, "task_wait", json!({"ms": 200})).await;
    let task = until(&client, &id, TaskStatus::Completed).await;
    assert_eq!(task.task.status(), TaskStatus::Completed);
    assert_eq!(result_text(&task), "waited 200 ms");
    // A client without the extension gets a plain result.
    let plain = connect(&url, false).await;
    let result = plain
        .call_tool(call("task_wait", json!({"ms": 1})))
        .await
        .expect("a plain call");
    assert_eq!(e2e::mcp::text(&result), "waited 1 ms");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_required_task_tool_is_refused_to_a_client_without_the_extension() {
    let (_dir, _host, url) = serve(&[]);
    let client = connect(&url, false).await;
    let refused = client
        .call_tool_once(call("task_elicit", json!({})))
        .await
        .expect_err("task_elicit must run as a task");
    let error = mcp_error(refused);
    assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert_eq!(
        error.data,
        Some(
            json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_cancel_cancels_the_tool() {
    let (_dir, _host, url) = serve(&[]);
    let client = connect(&url, true).await;
    let id = start(&client, "task_wait", json!({})).await;
    let started = Instant::now();
    while !seen(&client).await.contains(&"task waiting".to_owned()) {
        assert!(started.elapsed() < PATIENCE, "the tool never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .expect("tasks/cancel");
    let task = until(&client, &id, TaskStatus::Cancelled).await;
    assert_eq!(task.task.status(), TaskStatus::Cancelled);
    while !seen(&client)
        .await
        .contains(&"task saw cancellation".to_owned())
    {
        assert!(started.elapsed() < PATIENCE, "the plugin never saw it");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Cancelling an ended task is acknowledged all the same.
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .expect("tasks/cancel again");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_waits_in_input_requests_until_tasks_update_answers_it() {
    an_elicitation_waits_in_input_requests_until_tasks_update_answers_it_in(&[]).await;
}

/// The same with `fixture-context` in a child process: the host runs the task, the child the
/// tool, whose request comes back through the host into the task's `inputRequests`.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_an_elicitation_waits_in_input_requests_until_tasks_update_answers_it() {
    an_elicitation_waits_in_input_requests_until_tasks_update_answers_it_in(&[
        "--isolate",
        "context",
    ])
    .await;
}

async fn an_elicitation_waits_in_input_requests_until_tasks_update_answers_it_in(
    host_args: &[&str],
) {
    let (_dir, _host, url) = serve(host_args);
    let client = connect(&url, true).await;
    let id = start(&client, "task_elicit", json!({})).await;
    let task = until(&client, &id, TaskStatus::InputRequired).await;
    let TaskPayload::InputRequired { input_requests } = &task.task.payload else {
        panic!("not input_required: {task:?}");
    };
    let asked = serde_json::to_value(input_requests).unwrap();
    assert_eq!(
        asked["elicitation-1"]["method"], "elicitation/create",
        "{asked}"
    );
    assert_eq!(asked["elicitation-1"]["params"]["message"], "Your name?");
    let answers = serde_json::from_value(
        json!({"elicitation-1": {"action": "accept", "content": {"name": "Ada"}}}),
    )
    .unwrap();
    client
        .update_task(UpdateTaskParams::new(&id, answers))
        .await
        .expect("tasks/update");
    let done = until(&client, &id, TaskStatus::Completed).await;
    assert_eq!(result_text(&done), "Hello, Ada!");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_input_first_tool_gathers_its_input_then_becomes_a_task() {
    an_input_first_tool_gathers_its_input_then_becomes_a_task_in(&[]).await;
}

/// The same with `fixture-context` in a child process: the child's tool asks the host to make
/// the call a task.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_an_input_first_tool_gathers_its_input_then_becomes_a_task() {
    an_input_first_tool_gathers_its_input_then_becomes_a_task_in(&["--isolate", "context"]).await;
}

async fn an_input_first_tool_gathers_its_input_then_becomes_a_task_in(host_args: &[&str]) {
    let (_dir, _host, url) = serve(host_args);
    // 2025-11-25: the name is asked on the session, once; then the call is a task, whose tool
    // runs again with the answer it gathered.
    let legacy = connect(&url, true).await;
    let id = start(&legacy, "task_greet", json!({})).await;
    let done = until(&legacy, &id, TaskStatus::Completed).await;
    assert_eq!(result_text(&done), "Hello later, Ada!");
    assert_eq!(legacy.service().elicited.load(Ordering::SeqCst), 1);

    // 2026-07-28: round 1 is an input-required result, round 2 (with the answer) the task.
    let handler = TaskClient {
        tasks: true,
        ..TaskClient::default()
    };
    let current = e2e::mcp::connect_2026(&url, handler).await;
    let Ok(CallToolResponse::InputRequired(needs)) =
        current.call_tool_once(call("task_greet", json!({}))).await
    else {
        panic!("round 1 is not an input-required result");
    };
    let keys: Vec<&String> = needs
        .input_requests
        .iter()
        .flatten()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, ["name"]);
    let mut again = call("task_greet", json!({}));
    again.input_responses = Some(InputResponses::from([(
        "name".to_owned(),
        json!({"action": "accept", "content": {"name": "Grace"}}),
    )]));
    again.request_state = needs.request_state;
    let id = match current.call_tool_once(again).await {
        Ok(CallToolResponse::Task(created)) => created.task.task_id,
        other => panic!("round 2 did not start a task: {other:?}"),
    };
    let done = until(&current, &id, TaskStatus::Completed).await;
    assert_eq!(result_text(&done), "Hello later, Grace!");
    assert_eq!(current.service().elicited.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_runs_at_most_its_bound_of_tasks() {
    let (_dir, _host, url) = serve(&["--max-tasks-per-session", "1"]);
    let client = connect(&url, true).await;
    let first = start(&client, "task_wait", json!({})).await;
    let refused = client
        .call_tool_once(call("task_wait", json!({})))
        .await
        .expect_err("one task per session");
    let error = mcp_error(refused);
    assert!(
        error.message.contains("--max-tasks-per-session (1)")
            && error.message.contains("task_wait"),
        "{}",
        error.message
    );
    // Another session has its own bound; an ended task leaves room.
    let other = connect(&url, true).await;
    start(&other, "task_wait", json!({"ms": 1})).await;
    client
        .cancel_task(CancelTaskParams::new(&first))
        .await
        .expect("tasks/cancel");
    until(&client, &first, TaskStatus::Cancelled).await;
    start(&client, "task_wait", json!({"ms": 1})).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn another_session_cannot_see_a_task() {
    let (_dir, _host, url) = serve(&[]);
    let owner = connect(&url, true).await;
    let id = start(&owner, "task_wait", json!({"ms": 2000})).await;
    let stranger = connect(&url, true).await;
    let unknown = mcp_error(get(&stranger, &id).await.expect_err("not its task"));
    assert_eq!(unknown.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(unknown.message, format!("unknown task: {id}"));
    let cancel = stranger.cancel_task(CancelTaskParams::new(&id)).await;
    assert!(cancel.is_err(), "a stranger cannot cancel it");
    assert_eq!(
        get(&owner, &id).await.expect("its own task").task.status(),
        TaskStatus::Working
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_concurrency_cap_counts_a_task_until_it_ends() {
    let dir = PluginDir::with(&["fixture-context"]);
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[[concurrency]]\nname = \"one wait\"\ntool = \"task_wait\"\nper = [\"tool\"]\nmax = 1\nqueue = 0\n",
    )
    .unwrap();
    let host = HostProcess::serve(&dir, &["--policy", policy.to_str().unwrap()]);
    let url = format!("{}/mcp?context", host.base_url());
    let client = connect(&url, true).await;
    let first = start(&client, "task_wait", json!({})).await;
    let refused = client
        .call_tool_once(call("task_wait", json!({})))
        .await
        .expect_err("the cap is held by the running task");
    let error = mcp_error(refused);
    assert_eq!(error.code, ErrorCode(429), "{error:?}");
    assert!(error.message.contains("one wait"), "{}", error.message);
    client
        .cancel_task(CancelTaskParams::new(&first))
        .await
        .expect("tasks/cancel");
    until(&client, &first, TaskStatus::Cancelled).await;
    let second = start(&client, "task_wait", json!({"ms": 1})).await;
    let done = until(&client, &second, TaskStatus::Completed).await;
    assert_eq!(result_text(&done), "waited 1 ms");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replicas_task_ids_start_with_its_name_for_the_balancer_to_route_on() {
    let (_dir, _host, url) = serve(&["--replica-id", "r1"]);
    let client = connect(&url, true).await;
    let id = start(&client, "task_wait", json!({"ms": 1})).await;
    let rest = id.strip_prefix("r1.").expect("the replica's name first");
    let task = until(&client, &id, TaskStatus::Completed).await;
    assert_eq!(task.task.task.task_id, id);
    assert_eq!(result_text(&task), "waited 1 ms");
    let elsewhere = get(&client, &format!("r2.{rest}"))
        .await
        .expect_err("another replica's task");
    let error = mcp_error(elsewhere);
    assert!(
        error
            .message
            .contains("made by replica `r2`, and this is `r1`"),
        "{}",
        error.message
    );
}
