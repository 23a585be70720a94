//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for plugin tools: the
//! server's tasks, who may see each, and how many may run.
//!
//! rmcp's [`TaskManager`] keeps the tasks: it runs each call's future, answers `tasks/get`
//! (status, `inputRequests`, the inlined result or error), routes `tasks/update` answers to the
//! requests a task waits on, records `tasks/cancel`, and fails a task whose TTL elapsed
//! (aborting its future, which cancels the tool). [`Tasks`] adds what a shared server needs:
//! - each task belongs to the session and caller that created it ([`Owner`]); to anyone else it
//!   does not exist (`-32602`, as an unknown id);
//! - at most `max_running` tasks run on the server, `per_owner` per session (or per caller
//!   when there are no sessions) and `per_caller` per authenticated caller across its sessions;
//!   one more is refused with an error naming the limit.
//!
//! A running task's requests to the client (sampling, elicitation, roots) go through
//! [`Input`]: the task is parked in `input_required` with the request in `inputRequests`
//! under its key (the tool's, or one the call made: `elicitation-1`), until `tasks/update`
//! answers it.

use rmcp::{
    RoleServer,
    model::{CallToolResponse, CallToolResult, CreateTaskResult},
    service::RequestContext,
};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};
use tokio_util::sync::CancellationToken;

pub(crate) use super::task_records::{Records, TaskRequest};
use super::{
    Handler,
    outcome::{call_result, missing_capability, panicked},
    owner,
    tools::TaskPolicy,
};
use crate::shared::Shared;
use crate::util::lock::lock;
use crate::{
    build::LoadedTool,
    call::{CallError, CallOutput},
    selection::Resolution,
    serve::host_context::{self, Call, rounds::Round},
};
use rmcp::{
    ErrorData,
    model::{ClientCapabilities, DetailedTask, InputRequest, InputResponses, Task},
    task_manager::{TaskContext, TaskExit, TaskFuture, TaskManager, TaskOptions},
};
use serde_json::Value;

/// Whom a task belongs to: the session it was created in (none without sessions) and the
/// authenticated caller (none without authentication). Only the same pair sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct Owner {
    #[serde(with = "arc_str")]
    pub(crate) session: Option<Arc<str>>,
    pub(crate) caller: Option<String>,
}

/// An owner's session as JSON text.
mod arc_str {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &Option<Arc<str>>, s: S) -> Result<S::Ok, S::Error> {
        v.as_deref().serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Arc<str>>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(Arc::from))
    }
}

/// The bounds on tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskLimits {
    /// The most tasks running at once on the server (`--max-tasks`).
    pub(crate) max_running: usize,
    /// The most tasks running at once per owner (`--max-tasks-per-session`).
    pub(crate) per_owner: usize,
    /// The most tasks running at once per authenticated caller, across its sessions
    /// (`--max-tasks-per-caller`).
    pub(crate) per_caller: usize,
    /// How long a task may run, and how long its result is kept after it ends (`--task-ttl`).
    pub(crate) ttl: Duration,
}

/// The task ids of one replica: `REPLICA.ID` when the server has a replica id
/// (`--replica-id`), so a load balancer routes `tasks/*` requests on the part before the first
/// `.`; the id rmcp made alone otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TaskIds {
    replica: Option<String>,
}

impl TaskIds {
    /// The ids of the replica `replica`, if any.
    pub(crate) fn new(replica: Option<String>) -> Self {
        Self { replica }
    }

    /// The id a client is given for the task rmcp calls `id`.
    pub(super) fn external(&self, id: &str) -> String {
        match &self.replica {
            Some(replica) => format!("{replica}.{id}"),
            None => id.to_owned(),
        }
    }

    /// The replica that made the task a client calls `id`, when it is not this one.
    fn elsewhere<'a>(&self, id: &'a str) -> Option<&'a str> {
        let replica = self.replica.as_deref()?;
        let (prefix, _) = id.split_once('.')?;
        (prefix != replica).then_some(prefix)
    }

    /// The id rmcp knows for the task a client calls `id`; refused, naming both replicas, when
    /// another replica made it.
    fn internal<'a>(&self, id: &'a str) -> Result<&'a str, ErrorData> {
        let Some(replica) = &self.replica else {
            return Ok(id);
        };
        match id.split_once('.') {
            Some((prefix, rest)) if prefix == replica => Ok(rest),
            Some((prefix, _)) => Err(ErrorData::invalid_params(
                format!(
                    "unknown task: {id}: it was made by replica `{prefix}`, and this is \
                     `{replica}`; a load balancer routes tasks/* requests on the part of the id \
                     before the first `.` (README: Running several replicas)"
                ),
                None,
            )),
            None => Err(ErrorData::invalid_params(
                format!("unknown task: {id}"),
                None,
            )),
        }
    }
}

/// The server's tasks and their owners.
pub(crate) struct Tasks {
    manager: TaskManager,
    ids: TaskIds,
    /// The owner of every task the manager may still hold, by task id.
    owners: Arc<Mutex<HashMap<String, Owner>>>,
    limits: TaskLimits,
    /// Where each task's state is recorded for the other replicas, with `--redis-url`.
    records: Option<Records>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The capability a client lacks to take a task: the tasks extension.
pub(crate) fn missing_extension() -> ErrorData {
    ErrorData::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    )
}

impl Tasks {
    pub(crate) fn new(limits: TaskLimits, ids: TaskIds, shared: Option<Arc<Shared>>) -> Self {
        let (manager, owners) = (TaskManager::new(), Arc::<Mutex<_>>::default());
        let records = shared.map(|shared| Records {
            manager: manager.clone(),
            owners: Arc::clone(&owners),
            ids: ids.clone(),
            shared,
            ttl: limits.ttl,
        });
        Self {
            manager,
            ids,
            owners,
            limits,
            records,
        }
    }

    /// What records this server's tasks for the other replicas, with `--redis-url`.
    pub(crate) fn records(&self) -> Option<&Records> {
        self.records.as_ref()
    }

    /// Starts `operation` as a task of `owner`, within the limits, and returns its seed state
    /// for the `CreateTaskResult`; `tool` names the call in the error when a limit is reached.
    pub(crate) fn spawn(
        &self,
        owner: Owner,
        tool: &str,
        operation: impl FnOnce(TaskContext) -> TaskFuture,
    ) -> Result<Task, ErrorData> {
        let mut owners = self.lock();
        self.forget_evicted(&mut owners);
        let running = self.manager.running_task_count();
        if running >= self.limits.max_running {
            return Err(full(format!(
                "cannot run tool `{tool}` as a task: {running} tasks are running on this \
                 server, the most --max-tasks ({}) allows; wait for one to end or cancel one",
                self.limits.max_running
            )));
        }
        let mine = owners
            .iter()
            .filter(|(id, o)| **o == owner && self.is_running(id))
            .count();
        if mine >= self.limits.per_owner {
            return Err(full(format!(
                "cannot run tool `{tool}` as a task: this session has {mine} tasks running, the \
                 most --max-tasks-per-session ({}) allows; wait for one to end or cancel one",
                self.limits.per_owner
            )));
        }
        if let Some(caller) = &owner.caller {
            let theirs = owners
                .iter()
                .filter(|(id, o)| o.caller.as_ref() == Some(caller) && self.is_running(id))
                .count();
            if theirs >= self.limits.per_caller {
                return Err(full(format!(
                    "cannot run tool `{tool}` as a task: this caller has {theirs} tasks running, \
                     the most --max-tasks-per-caller ({}) allows; wait for one to end or cancel one",
                    self.limits.per_caller
                )));
            }
        }
        let ttl = u64::try_from(self.limits.ttl.as_millis()).unwrap_or(u64::MAX);
        let records = self.records.clone();
        let mut task = self
            .manager
            .spawn(TaskOptions::new().with_ttl_ms(ttl), |context| {
                let id = context.task_id().to_owned();
                let running = operation(context);
                match records {
                    Some(records) => Box::pin(async move {
                        let ended = running.await;
                        records.record_once_settled(id);
                        ended
                    }),
                    None => running,
                }
            });
        owners.insert(task.task_id.clone(), owner);
        drop(owners);
        if let Some(records) = &self.records {
            records.record(&task.task_id);
        }
        task.task_id = self.ids.external(&task.task_id);
        Ok(task)
    }

    /// `tasks/get`: the task's state, if `owner` has it; asked of the replica that runs it,
    /// or read from its record, when another replica made it.
    pub(crate) async fn get(&self, owner: &Owner, id: &str) -> Result<DetailedTask, ErrorData> {
        let Some(records) = &self.records else {
            return self.get_here(owner, id);
        };
        if let Some(replica) = self.ids.elsewhere(id) {
            return records.get_elsewhere(replica, owner, id).await;
        }
        // A task of an earlier run of this replica (restarted under the same name) is known
        // by its record only.
        match self.get_here(owner, id) {
            Err(unknown) => records
                .last_state(records.replica(), owner, id, "it restarted")
                .await
                .map_err(|_| unknown),
            found => found,
        }
    }

    /// `tasks/get` of a task this replica made.
    pub(crate) fn get_here(&self, owner: &Owner, id: &str) -> Result<DetailedTask, ErrorData> {
        let internal = self.check(owner, id)?;
        let mut task = self.manager.get_task(internal)?;
        task.task.task_id = id.to_owned();
        Ok(task)
    }

    /// `tasks/update`: hands the client's answers to the requests the task waits on, on the
    /// replica that runs it.
    pub(crate) async fn update(
        &self,
        owner: &Owner,
        id: &str,
        answers: InputResponses,
    ) -> Result<(), ErrorData> {
        if let (Some(records), Some(replica)) = (&self.records, self.ids.elsewhere(id)) {
            return records.update_elsewhere(replica, owner, id, answers).await;
        }
        self.update_here(owner, id, answers)
    }

    /// `tasks/update` of a task this replica runs.
    pub(crate) fn update_here(
        &self,
        owner: &Owner,
        id: &str,
        answers: InputResponses,
    ) -> Result<(), ErrorData> {
        let internal = self.check(owner, id)?;
        self.manager.update_task(internal, answers)?;
        if let Some(records) = &self.records {
            records.record(internal);
        }
        Ok(())
    }

    /// `tasks/cancel`: cancels the tool (a no-op on an ended task), on the replica that runs
    /// it.
    pub(crate) async fn cancel(&self, owner: &Owner, id: &str) -> Result<(), ErrorData> {
        if let (Some(records), Some(replica)) = (&self.records, self.ids.elsewhere(id)) {
            return records.cancel_elsewhere(replica, owner, id).await;
        }
        self.cancel_here(owner, id)
    }

    /// `tasks/cancel` of a task this replica runs.
    pub(crate) fn cancel_here(&self, owner: &Owner, id: &str) -> Result<(), ErrorData> {
        let internal = self.check(owner, id)?;
        self.manager.cancel_task(internal)?;
        if let Some(records) = &self.records {
            records.record(internal);
        }
        Ok(())
    }

    /// The id rmcp knows for the task a client calls `id`; fails unless this replica made it
    /// and `owner` created it (it may since have been evicted).
    fn check<'a>(&self, owner: &Owner, id: &'a str) -> Result<&'a str, ErrorData> {
        let internal = self.ids.internal(id)?;
        let mut owners = self.lock();
        self.forget_evicted(&mut owners);
        match owners.get(internal) {
            Some(o) if o == owner => Ok(internal),
            _ => Err(ErrorData::invalid_params(
                format!("unknown task: {id}"),
                None,
            )),
        }
    }

    fn is_running(&self, id: &str) -> bool {
        self.manager
            .get_task(id)
            .is_ok_and(|t| !t.status().is_terminal())
    }

    /// Drops the owners of tasks the manager evicted (expired past their retention).
    fn forget_evicted(&self, owners: &mut HashMap<String, Owner>) {
        owners.retain(|id, _| self.manager.get_task(id).is_ok());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owner>> {
        lock(&self.owners)
    }
}

impl Drop for Tasks {
    /// Aborts the tasks still running (the server is stopping).
    fn drop(&mut self) {
        self.manager.shutdown();
    }
}

/// A limit on tasks was reached.
fn full(message: String) -> ErrorData {
    ErrorData::invalid_request(message, None)
}

/// Where a running task's requests to the client go: into its `inputRequests`, answered by
/// `tasks/update`. Put in the request extensions of the call [`crate::serve::host_context::Call`] runs.
#[derive(Clone)]
pub(crate) struct Input {
    task: TaskContext,
    records: Option<Records>,
}

impl Input {
    pub(crate) fn new(task: TaskContext, records: Option<Records>) -> Self {
        Self { task, records }
    }

    /// Parks the task on `request` (for `method`) under `key` until the client answers it with
    /// `tasks/update`; the answer, or why there is none.
    pub(crate) async fn ask(
        &self,
        key: String,
        request: InputRequest,
        method: &str,
    ) -> Result<Value, String> {
        let asking = std::pin::pin!(self.task.request_input(key, request));
        let answered = match &self.records {
            // The request is in the task's `inputRequests` once the first poll returns.
            Some(records) => {
                let mut asking = asking;
                match futures::poll!(asking.as_mut()) {
                    std::task::Poll::Ready(answered) => answered,
                    std::task::Poll::Pending => {
                        records.record(self.task.task_id());
                        asking.await
                    }
                }
            }
            None => asking.await,
        };
        match answered {
            Ok(value) => Ok(value),
            Err(TaskExit::Cancelled) => Err(format!(
                "{method} was not answered: task {} was cancelled",
                self.task.task_id()
            )),
            Err(TaskExit::Error(e)) => Err(format!("{method} failed: {}", e.message)),
        }
    }
}

impl Handler {
    /// Starts a call of `tool` as a task of the request's session and caller, and answers with
    /// the task. It runs as a plain call would (progress, logs, its context), except that it
    /// outlives the request, `tasks/cancel` cancels it, and its requests to the client wait in
    /// the task's `inputRequests` for `tasks/update`.
    pub(super) fn call_as_task(
        &self,
        tool: LoadedTool,
        arguments: String,
        context: &RequestContext<RoleServer>,
        resolution: &Arc<Resolution>,
        gathered: Option<Arc<Round>>,
        policed: TaskPolicy,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut request = context.clone();
        // The request ends now; the call ends with the task.
        request.ct = CancellationToken::new();
        let (level, resolution) = (self.level.clone(), Arc::clone(resolution));
        let updates = self.state.updates.clone();
        // A task's requests wait in its `inputRequests`, unless the round it started from has
        // their answers.
        let client = self.client_requests(gathered);
        let caller = self.parent_caller(context);
        let name = tool.decl.name.clone();
        let (availability, plugin) = (
            self.state.availability.clone(),
            Arc::from(tool.plugin.as_str()),
        );
        let records = self.state.tasks.records().cloned();
        let task = self
            .state
            .tasks
            .spawn(owner(context), &name.clone(), move |task| {
                request.extensions.insert(Input::new(task.clone(), records));
                Box::pin(async move {
                    let run = Call {
                        request: &request,
                        level: &level,
                        resolution: &resolution,
                        updates: &updates,
                        client,
                        caller,
                        availability: Some(availability),
                        plugin: Some(plugin),
                    }
                    .run(|host| tool.call_with(arguments, host));
                    tokio::select! {
                        () = task.cancelled() => Err(TaskExit::Cancelled),
                        finished = run => policed.finish(&name, &tool.plugin, finished),
                    }
                })
            })?;
        tracing::info!(task = %task.task_id, "a call runs as a task");
        Ok(CreateTaskResult::new(task).into())
    }
}

/// How a call run as a task ended: a panic (the host's failure, not the tool's answer) and a
/// capability the client lacks fail the task; any other outcome completes it with the result
/// a plain call gives.
pub(super) fn task_outcome(
    tool: &str,
    finished: Option<host_context::Finished<Result<CallOutput, CallError>>>,
) -> Result<CallToolResult, TaskExit> {
    let Some(finished) = finished else {
        return Err(TaskExit::Cancelled);
    };
    // A task's requests wait in its `inputRequests`: it never ends for input.
    let Ok(outcome) = finished.outcome else {
        return Err(TaskExit::Error(ErrorData::internal_error(
            format!("task of tool {tool} ended asking for input"),
            None,
        )));
    };
    match (outcome, finished.undeclared) {
        (Err(_), Some(capability)) => Err(TaskExit::Error(missing_capability(capability))),
        (Err(CallError::Panicked(message)), None) => Err(TaskExit::Error(
            ErrorData::internal_error(panicked(tool, message), None),
        )),
        (outcome, _) => Ok(call_result(tool, outcome)),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock, TaskStatus};

    use super::*;

    fn owner(session: &str) -> Owner {
        Owner {
            session: Some(Arc::from(session)),
            caller: None,
        }
    }

    fn limits(max_running: usize, per_owner: usize, ttl: Duration) -> TaskLimits {
        TaskLimits {
            max_running,
            per_owner,
            per_caller: max_running,
            ttl,
        }
    }

    /// An operation that runs until it is cancelled (as the host's do) or aborted.
    fn forever(task: TaskContext) -> TaskFuture {
        Box::pin(async move {
            task.cancelled().await;
            Err(TaskExit::Cancelled)
        })
    }

    /// Waits until the task `id` of `owner` has `status`.
    async fn until(tasks: &Tasks, owner: &Owner, id: &str, status: TaskStatus) {
        for _ in 0..200 {
            if tasks.get_here(owner, id).unwrap().status() == status {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("task {id} never became {status:?}");
    }

    fn done(_task: TaskContext) -> TaskFuture {
        Box::pin(async { Ok(CallToolResult::success(vec![ContentBlock::text("done")])) })
    }

    #[tokio::test]
    async fn a_session_runs_at_most_its_bound_and_the_error_names_it() {
        let tasks = Tasks::new(
            limits(10, 2, Duration::from_secs(60)),
            TaskIds::default(),
            None,
        );
        let a = owner("a");
        tasks.spawn(a.clone(), "t", forever).unwrap();
        let second = tasks.spawn(a.clone(), "t", forever).unwrap();
        let error = tasks.spawn(a.clone(), "t", forever).unwrap_err();
        assert!(
            error.message.contains("--max-tasks-per-session (2)")
                && error.message.contains("tool `t`"),
            "{}",
            error.message
        );
        // Another session has its own bound.
        tasks.spawn(owner("b"), "t", forever).unwrap();
        // An ended task no longer counts.
        tasks.cancel_here(&a, &second.task_id).unwrap();
        until(&tasks, &a, &second.task_id, TaskStatus::Cancelled).await;
        tasks.spawn(a, "t", forever).unwrap();
    }

    #[tokio::test]
    async fn a_caller_runs_at_most_its_bound_across_its_sessions() {
        let tasks = Tasks::new(
            TaskLimits {
                per_caller: 3,
                ..limits(100, 2, Duration::from_secs(60))
            },
            TaskIds::default(),
            None,
        );
        let of = |session: &str, caller: Option<&str>| Owner {
            session: Some(Arc::from(session)),
            caller: caller.map(str::to_owned),
        };
        let first = of("s1", Some("key:alice"));
        tasks.spawn(first.clone(), "t", forever).unwrap();
        let ended = tasks.spawn(first.clone(), "t", forever).unwrap();
        tasks
            .spawn(of("s2", Some("key:alice")), "t", forever)
            .unwrap();
        let error = tasks
            .spawn(of("s3", Some("key:alice")), "t", forever)
            .unwrap_err();
        assert!(
            error.message.contains("--max-tasks-per-caller (3)")
                && error.message.contains("tool `t`"),
            "{}",
            error.message
        );
        assert_eq!(
            error.code,
            tasks.spawn(first.clone(), "t", forever).unwrap_err().code,
            "the same error as per session"
        );
        // Another caller, and callers without authentication, have their own bounds.
        tasks
            .spawn(of("s3", Some("key:bob")), "t", forever)
            .unwrap();
        for session in ["u1", "u2", "u3", "u4"] {
            tasks.spawn(of(session, None), "t", forever).unwrap();
        }
        // An ended task no longer counts.
        tasks.cancel_here(&first, &ended.task_id).unwrap();
        until(&tasks, &first, &ended.task_id, TaskStatus::Cancelled).await;
        tasks
            .spawn(of("s3", Some("key:alice")), "t", forever)
            .unwrap();
    }

    #[tokio::test]
    async fn the_server_runs_at_most_its_bound() {
        let tasks = Tasks::new(
            limits(2, 10, Duration::from_secs(60)),
            TaskIds::default(),
            None,
        );
        tasks.spawn(owner("a"), "t", forever).unwrap();
        tasks.spawn(owner("b"), "t", forever).unwrap();
        let error = tasks.spawn(owner("c"), "t", forever).unwrap_err();
        assert!(
            error.message.contains("--max-tasks (2)"),
            "{}",
            error.message
        );
    }

    #[tokio::test]
    async fn finished_tasks_do_not_count() {
        let tasks = Tasks::new(
            limits(1, 1, Duration::from_secs(60)),
            TaskIds::default(),
            None,
        );
        let first = tasks.spawn(owner("a"), "t", done).unwrap();
        until(&tasks, &owner("a"), &first.task_id, TaskStatus::Completed).await;
        tasks.spawn(owner("a"), "t", done).unwrap();
    }

    #[tokio::test]
    async fn only_the_owner_sees_a_task() {
        let tasks = Tasks::new(
            limits(10, 10, Duration::from_secs(60)),
            TaskIds::default(),
            None,
        );
        let task = tasks.spawn(owner("a"), "t", forever).unwrap();
        let other = Owner {
            session: Some(Arc::from("a")),
            caller: Some("key:mallory".into()),
        };
        for someone in [owner("b"), other] {
            let error = tasks.get_here(&someone, &task.task_id).unwrap_err();
            assert_eq!(error.message, format!("unknown task: {}", task.task_id));
            assert!(tasks.cancel_here(&someone, &task.task_id).is_err());
            assert!(
                tasks
                    .update_here(&someone, &task.task_id, InputResponses::new())
                    .is_err()
            );
        }
        assert_eq!(
            tasks.get_here(&owner("a"), &task.task_id).unwrap().status(),
            TaskStatus::Working
        );
    }

    #[tokio::test]
    async fn a_replicas_task_ids_carry_its_name_and_another_replicas_are_named() {
        let tasks = Tasks::new(
            limits(10, 10, Duration::from_secs(60)),
            TaskIds::new(Some("r1".to_owned())),
            None,
        );
        let task = tasks.spawn(owner("a"), "t", forever).unwrap();
        let rest = task.task_id.strip_prefix("r1.").expect("routable");
        let got = tasks.get_here(&owner("a"), &task.task_id).unwrap();
        assert_eq!(got.task.task_id, task.task_id);
        let foreign = tasks
            .get_here(&owner("a"), &format!("r2.{rest}"))
            .unwrap_err();
        assert!(
            foreign
                .message
                .contains("made by replica `r2`, and this is `r1`"),
            "{}",
            foreign.message
        );
        assert!(
            tasks.get_here(&owner("a"), rest).is_err(),
            "without its prefix"
        );
        tasks.cancel_here(&owner("a"), &task.task_id).unwrap();
        until(&tasks, &owner("a"), &task.task_id, TaskStatus::Cancelled).await;
    }

    #[tokio::test]
    async fn a_task_past_its_ttl_fails_then_is_forgotten() {
        let tasks = Tasks::new(
            limits(10, 1, Duration::from_millis(30)),
            TaskIds::default(),
            None,
        );
        let a = owner("a");
        let task = tasks.spawn(a.clone(), "t", forever).unwrap();
        assert_eq!(task.ttl_ms, Some(30));
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(
            tasks.get_here(&a, &task.task_id).unwrap().status(),
            TaskStatus::Failed
        );
        // Expired, it no longer counts against the session.
        let next = tasks.spawn(a.clone(), "t", done).unwrap();
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert!(tasks.get_here(&a, &task.task_id).is_err(), "evicted");
        assert!(!tasks.lock().contains_key(&task.task_id));
        drop(next);
    }
}
