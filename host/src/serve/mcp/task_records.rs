//! Tasks across replicas, with `--redis-url`: each replica records the state of the tasks it
//! runs in Redis whenever it changes (started, waiting for input, answered, cancelled, ended),
//! and any replica answers `tasks/get|update|cancel` for a task another one made.
//!
//! A task runs where it was made (its id starts with that replica's name). `tasks/get` asks
//! that replica for the task's state; `tasks/update` and `tasks/cancel` are carried out there.
//! When that replica is gone, `tasks/get` answers from the record: an ended task's result
//! outlives its replica for the task's TTL, and a task that was still running is failed,
//! naming the replica that stopped.

use std::{collections::HashMap, sync::Arc, sync::Mutex, time::Duration};

use rmcp::{
    ErrorData,
    model::{DetailedTask, InputResponses, TaskPayload},
    task_manager::TaskManager,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::tasks::{Owner, TaskIds, Tasks};
use crate::{
    shared::{Shared, SharedError},
    util::lock::lock,
};

/// A task as recorded in Redis: whom it belongs to and its state.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    owner: Owner,
    task: DetailedTask,
}

/// A request about a task, sent to the replica that runs it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum TaskRequest {
    /// `tasks/get`.
    Get { owner: Owner, id: String },
    /// `tasks/update`.
    Update {
        owner: Owner,
        id: String,
        answers: InputResponses,
    },
    /// `tasks/cancel`.
    Cancel { owner: Owner, id: String },
}

impl TaskRequest {
    /// Carries the request out on `tasks`, this replica's.
    pub(crate) fn answer(self, tasks: &Tasks) -> Result<Value, String> {
        let answered = match self {
            Self::Get { owner, id } => tasks
                .get_here(&owner, &id)
                .and_then(|task| serde_json::to_value(task).map_err(internal)),
            Self::Update { owner, id, answers } => tasks
                .update_here(&owner, &id, answers)
                .map(|()| Value::Null),
            Self::Cancel { owner, id } => tasks.cancel_here(&owner, &id).map(|()| Value::Null),
        };
        answered.map_err(|e| e.message.into_owned())
    }
}

fn internal(error: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

/// What records the tasks of this replica, and reaches those of the others.
#[derive(Clone)]
pub(crate) struct Records {
    pub(super) manager: TaskManager,
    pub(super) owners: Arc<Mutex<HashMap<String, Owner>>>,
    pub(super) ids: TaskIds,
    pub(super) shared: Arc<Shared>,
    pub(super) ttl: Duration,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records").finish_non_exhaustive()
    }
}

impl Records {
    /// This replica's name.
    pub(super) fn replica(&self) -> &str {
        self.shared.replica()
    }

    fn key(&self, external: &str) -> String {
        self.shared.key(&format!("task:{external}"))
    }

    /// Records the state of the task rmcp calls `internal`, after the writes before it.
    pub(crate) fn record(&self, internal: &str) {
        let Some(owner) = lock(&self.owners).get(internal).cloned() else {
            return;
        };
        let Ok(mut task) = self.manager.get_task(internal) else {
            return;
        };
        let external = self.ids.external(internal);
        task.task.task_id.clone_from(&external);
        // Kept as long as rmcp keeps an ended task: its TTL from its last change.
        self.shared
            .put(self.key(&external), &Record { owner, task }, self.ttl * 2);
    }

    /// Records the task once rmcp has settled it (its operation just returned).
    pub(crate) fn record_once_settled(&self, internal: String) {
        let records = self.clone();
        tokio::spawn(async move {
            for _ in 0..1000 {
                match records.manager.get_task(&internal) {
                    Ok(task) if !task.status().is_terminal() => {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    _ => break,
                }
            }
            records.record(&internal);
        });
    }

    /// `tasks/get` of the task `id` that `replica` made.
    pub(super) async fn get_elsewhere(
        &self,
        replica: &str,
        owner: &Owner,
        id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        let asked = TaskRequest::Get {
            owner: owner.clone(),
            id: id.to_owned(),
        };
        match self.ask(replica, asked).await {
            Ok(task) => serde_json::from_value(task).map_err(internal),
            Err(Reached::Refused(error)) => Err(error),
            Err(Reached::Not(why)) => self.last_state(replica, owner, id, &why).await,
        }
    }

    /// The task `id` as its record last says, for `owner`: failed, naming `replica` and `why`,
    /// if it had not ended (the replica that ran it is gone).
    pub(super) async fn last_state(
        &self,
        replica: &str,
        owner: &Owner,
        id: &str,
        why: &str,
    ) -> Result<DetailedTask, ErrorData> {
        let mut record = self.recorded(owner, id).await?;
        if !record.task.status().is_terminal() {
            record.task = DetailedTask::new(
                record.task.task,
                TaskPayload::Failed {
                    error: stopped(id, replica, why),
                },
            );
        }
        Ok(record.task)
    }

    /// `tasks/update` of the task `id` that `replica` runs.
    pub(super) async fn update_elsewhere(
        &self,
        replica: &str,
        owner: &Owner,
        id: &str,
        answers: InputResponses,
    ) -> Result<(), ErrorData> {
        let asked = TaskRequest::Update {
            owner: owner.clone(),
            id: id.to_owned(),
            answers,
        };
        self.carry_out(replica, owner, id, asked).await
    }

    /// `tasks/cancel` of the task `id` that `replica` runs.
    pub(super) async fn cancel_elsewhere(
        &self,
        replica: &str,
        owner: &Owner,
        id: &str,
    ) -> Result<(), ErrorData> {
        let asked = TaskRequest::Cancel {
            owner: owner.clone(),
            id: id.to_owned(),
        };
        self.carry_out(replica, owner, id, asked).await
    }

    /// Has `replica` carry out `asked`; an ended task needs nothing from a replica that is gone.
    async fn carry_out(
        &self,
        replica: &str,
        owner: &Owner,
        id: &str,
        asked: TaskRequest,
    ) -> Result<(), ErrorData> {
        match self.ask(replica, asked).await {
            Ok(_) => Ok(()),
            Err(Reached::Refused(error)) => Err(error),
            Err(Reached::Not(why)) => {
                let record = self.recorded(owner, id).await?;
                if record.task.status().is_terminal() {
                    return Ok(());
                }
                Err(ErrorData::internal_error(
                    format!("task {id} cannot be reached: {why}"),
                    Some(json!({ "replica": replica })),
                ))
            }
        }
    }

    async fn ask(&self, replica: &str, asked: TaskRequest) -> Result<Value, Reached> {
        let body = serde_json::to_value(asked).map_err(|e| Reached::Not(e.to_string()))?;
        match self.shared.ask(replica, json!({ "task": body })).await {
            Ok(answer) => Ok(answer),
            Err(SharedError::Refused(message)) => {
                Err(Reached::Refused(ErrorData::invalid_params(message, None)))
            }
            Err(other) => Err(Reached::Not(other.to_string())),
        }
    }

    /// The record of task `id`, if `owner` has it.
    async fn recorded(&self, owner: &Owner, id: &str) -> Result<Record, ErrorData> {
        let record: Option<Record> = self.shared.get(&self.key(id)).await.map_err(|e| {
            ErrorData::internal_error(format!("task {id} cannot be read: {e}"), None)
        })?;
        match record {
            Some(record) if record.owner == *owner => Ok(record),
            _ => Err(ErrorData::invalid_params(
                format!("unknown task: {id}"),
                None,
            )),
        }
    }
}

/// Why a request about a task got no answer from its replica.
enum Reached {
    /// The replica answered: the task's error.
    Refused(ErrorData),
    /// The replica could not be reached: why.
    Not(String),
}

/// The error of a task whose replica stopped while it ran.
fn stopped(id: &str, replica: &str, why: &str) -> serde_json::Map<String, Value> {
    let error = ErrorData::internal_error(
        format!("task {id} stopped with replica `{replica}`, which ran it: {why}"),
        None,
    );
    match serde_json::to_value(error) {
        Ok(Value::Object(object)) => object,
        _ => serde_json::Map::new(),
    }
}
