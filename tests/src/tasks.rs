//! What tests of the tasks extension share: a client that takes tasks, starting one, polling
//! one to a status, and reading a completed task's text.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServiceError,
    model::{
        CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
        GetTaskParams, GetTaskResult, Implementation, TaskPayload, TaskStatus,
    },
    service::{RequestContext, RunningService},
};
use serde_json::{Value, json};

use crate::mcp::call;

/// How long [`until`] waits for a task to reach a status.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// A client that declares the tasks extension (or not) and elicitation, to which it answers
/// that the user is Ada (counting how often it was asked).
#[derive(Debug, Clone, Default)]
pub struct TaskClient {
    /// Whether it declares the tasks extension.
    pub tasks: bool,
    /// How often it was asked to elicit.
    pub elicited: Arc<AtomicUsize>,
}

impl TaskClient {
    /// A client that takes tasks.
    pub fn taking_tasks() -> Self {
        Self {
            tasks: true,
            ..Self::default()
        }
    }
}

impl ClientHandler for TaskClient {
    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.elicited.fetch_add(1, Ordering::SeqCst);
        Ok(
            serde_json::from_value(json!({"action": "accept", "content": {"name": "Ada"}}))
                .expect("an elicitation result"),
        )
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.tasks {
            json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
        } else {
            json!({"elicitation": {}})
        };
        let capabilities: ClientCapabilities =
            serde_json::from_value(capabilities).expect("client capabilities");
        ClientConfig::new(capabilities, Implementation::new("tasks-test", "0"))
    }
}

/// A running [`TaskClient`].
pub type TaskPeer = RunningService<RoleClient, TaskClient>;

/// Calls `tool`; the id of the task it created. Panics on any other answer.
pub async fn start(client: &TaskPeer, tool: &str, arguments: Value) -> String {
    match client.call_tool_once(call(tool, arguments)).await {
        Ok(CallToolResponse::Task(created)) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            assert!(created.task.ttl_ms.is_some_and(|ttl| ttl > 0));
            created.task.task_id
        }
        other => panic!("{tool} did not start a task: {other:?}"),
    }
}

/// `tasks/get` of `id`.
pub async fn get(client: &TaskPeer, id: &str) -> Result<GetTaskResult, ServiceError> {
    client.get_task(GetTaskParams::new(id)).await
}

/// Polls `tasks/get` until the task's status is `status` (or it ended); its last state.
pub async fn until(client: &TaskPeer, id: &str, status: TaskStatus) -> GetTaskResult {
    let started = Instant::now();
    loop {
        let task = get(client, id)
            .await
            .unwrap_or_else(|e| panic!("tasks/get {id}: {e}"));
        if task.task.status() == status || task.task.status().is_terminal() {
            return task;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "task {id} is still {:?}",
            task.task.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The text of a completed task's inlined result.
pub fn result_text(task: &GetTaskResult) -> String {
    match &task.task.payload {
        TaskPayload::Completed { result } => result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        other => panic!("not completed: {other:?}"),
    }
}
