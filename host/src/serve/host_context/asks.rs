//! Requests to the client a call makes (sampling, elicitation, roots, custom): asked of the
//! client (2025-11-25), answered from the call's round (2026-07-28), kept in a task's
//! `inputRequests`, or relayed to an isolated plugin's parent.

use std::{sync::Arc, time::Duration};

use futures::channel::oneshot;
use rmcp::model::{CustomRequest, ServerRequest};
use rmcp::{
    RoleServer, ServiceError,
    service::{Peer, PeerRequestOptions},
};
use serde_json::Value;

use super::{context::*, rounds};
use crate::call::wire::{ASK_METHOD, TASK_METHOD};
use crate::serve::host_context::rounds::Round;

/// How a call's requests to the client are served.
pub(crate) struct ClientRequests {
    /// How long the client has to answer one (over a session).
    pub(crate) timeout: Duration,
    /// Under 2026-07-28, the answers of this round of the call.
    pub(crate) round: Option<Arc<Round>>,
    /// Whether the call may become a task (the plain phase of an `input_first` task call).
    pub(crate) becomes_task: bool,
    /// Where the answers a client gives on its session are kept, for the task the call may
    /// become.
    pub(crate) gathered: Option<Arc<Round>>,
}

/// Sends `requests` to the client at once (to the parent in one request, when it
/// `tells_parent`) and replies with their results under their keys as a JSON object, or why the
/// first that failed did.
pub(super) async fn ask_all(
    peer: &Peer<RoleServer>,
    requests: Vec<Keyed>,
    timeout: Duration,
    reply: oneshot::Sender<Result<String, String>>,
    route: Route<'_>,
    gathered: Option<&Round>,
) {
    match route {
        Route::Client => {}
        Route::Parent => return ask_parent(peer, requests, timeout, reply).await,
        Route::Task(task, round) => return ask_task(task, round, requests, reply).await,
    }
    let answers = futures::future::join_all(requests.into_iter().map(|keyed| async move {
        (
            keyed.key,
            ask(peer, keyed.request, &keyed.method, timeout).await,
        )
    }))
    .await;
    let answers: Result<serde_json::Map<String, Value>, String> = answers
        .into_iter()
        .map(|(key, answer)| answer.map(|answer| (key, answer)))
        .collect();
    if let (Ok(answers), Some(gathered)) = (&answers, gathered) {
        gathered.record(answers);
    }
    let _ = reply.send(answers.map(|answers| Value::Object(answers).to_string()));
}

/// Where a call's requests for the client go.
#[derive(Clone, Copy)]
pub(super) enum Route<'a> {
    /// To the client, over the request's session.
    Client,
    /// To an isolated plugin's parent, which asks its own client.
    Parent,
    /// Into the `inputRequests` of the task the call runs as, answered by `tasks/update`,
    /// unless the round the task started from has the answer.
    Task(&'a crate::serve::mcp::tasks::Input, Option<&'a Round>),
}

/// Parks the task on `requests` until the client answers each with `tasks/update`, and replies
/// with the answers under their keys, or why the first that failed did.
pub(super) async fn ask_task(
    task: &crate::serve::mcp::tasks::Input,
    round: Option<&Round>,
    requests: Vec<Keyed>,
    reply: oneshot::Sender<Result<String, String>>,
) {
    let answers = futures::future::join_all(requests.into_iter().map(|keyed| async move {
        let gathered = round.and_then(|r| r.answers(&[(keyed.key.clone(), keyed.method.as_str())]));
        if let Some(mut gathered) = gathered {
            return Ok((
                keyed.key.clone(),
                gathered.remove(&keyed.key).unwrap_or_default(),
            ));
        }
        let Some(request) = rounds::input_request(keyed.request) else {
            return Err(format!("{} cannot be asked within a task", keyed.method));
        };
        let answer = task.ask(keyed.key.clone(), request, &keyed.method).await?;
        Ok((keyed.key, answer))
    }))
    .await;
    let answers: Result<serde_json::Map<String, Value>, String> = answers.into_iter().collect();
    let _ = reply.send(answers.map(|answers| Value::Object(answers).to_string()));
}

/// Asks an isolated plugin's parent whether the call becomes a task ([`TASK_METHOD`]): when
/// it does, the parent ends the call it made (and this one with it); otherwise it answers.
pub(super) async fn ask_parent_for_task(
    peer: &Peer<RoleServer>,
    timeout: Duration,
    told: oneshot::Sender<()>,
) {
    let request = CustomRequest::new(TASK_METHOD, None);
    let _ = ask(
        peer,
        ServerRequest::CustomRequest(request),
        TASK_METHOD,
        timeout,
    )
    .await;
    let _ = told.send(());
}

/// Sends `requests` to an isolated plugin's parent in one request ([`ASK_METHOD`]), which asks
/// its own client for them, and replies with their results under their keys.
pub(super) async fn ask_parent(
    peer: &Peer<RoleServer>,
    requests: Vec<Keyed>,
    timeout: Duration,
    reply: oneshot::Sender<Result<String, String>>,
) {
    let requests: serde_json::Map<String, Value> = requests
        .into_iter()
        .filter_map(|k| {
            let request = serde_json::to_value(rounds::input_request(k.request)?).ok()?;
            Some((k.key, request))
        })
        .collect();
    let request = CustomRequest::new(ASK_METHOD, Some(Value::Object(requests)));
    let answer = ask(
        peer,
        ServerRequest::CustomRequest(request),
        ASK_METHOD,
        timeout,
    )
    .await;
    let _ = reply.send(answer.map(|answers| answers.to_string()));
}

/// Sends `request` to the client and resolves to its result, or why it failed; gives up (and
/// tells the client it was cancelled) after `timeout`.
pub(super) async fn ask(
    peer: &Peer<RoleServer>,
    request: ServerRequest,
    method: &str,
    timeout: Duration,
) -> Result<Value, String> {
    let answered = match peer
        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
        .await
    {
        Ok(handle) => handle.await_response().await,
        Err(error) => Err(error),
    };
    match answered {
        Ok(result) => serde_json::to_value(&result)
            .map_err(|e| format!("the client's answer to {method} could not be read: {e}")),
        Err(ServiceError::McpError(error)) => Err(format!(
            "the client answered {method} with an error: {} (code {})",
            error.message, error.code.0
        )),
        Err(ServiceError::Timeout { timeout }) => Err(unanswered(method, timeout)),
        Err(error) => Err(format!("{method} failed: {error}")),
    }
}

/// What a tool is told of a request the client did not answer in time.
pub(super) fn unanswered(method: &str, timeout: Duration) -> String {
    format!(
        "the client did not answer {method} within {} s (--client-request-timeout); the request \
         was cancelled",
        timeout.as_secs_f64()
    )
}
