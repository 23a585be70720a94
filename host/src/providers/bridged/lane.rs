//! Tool calls to a stdio server (an isolated plugin's child, a bridged `mcp.json` server)
//! written and answered outside rmcp's client service: the calling task writes its request line
//! itself, and the task reading the server's stdout hands the answer straight to it, typed,
//! before rmcp would parse it as any of its answers. rmcp's service would take the request
//! through its channel, write it from a task of its own, and send the answer back through one
//! more: two thread hops a call that this path does not make.
//!
//! A call's request id and progress token are `lane-N`, which rmcp's numbered requests never
//! are, so the reader tells the two kinds of answers apart; everything else the server sends
//! (progress, log messages, its requests, the answers to rmcp's requests) still goes to rmcp.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use rmcp::{
    ErrorData, RoleClient,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, NumberOrString,
        ProgressToken, RequestId,
    },
    service::{ServiceError, TxJsonRpcMessage},
};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::{io::AsyncWrite, sync::oneshot};

use crate::util::{
    json_lines::{SharedWriter, write_line},
    lock::lock,
};

/// The server's stdin, as the lane and rmcp's transport share it.
pub(super) type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// What a call on the lane is answered with.
pub(crate) type Answer = Result<CallToolResult, ServiceError>;

/// How the lane's request ids begin.
const PREFIX: &str = "lane-";

/// The calls of one connection sent on the lane, waiting for their answers.
pub(crate) struct Lane {
    write: SharedWriter<Writer>,
    waiting: Mutex<Waiting>,
    next: AtomicU64,
}

impl std::fmt::Debug for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane").finish_non_exhaustive()
    }
}

/// The calls waiting, by number; none once the connection closed.
#[derive(Default)]
struct Waiting {
    answers: HashMap<u64, oneshot::Sender<Answer>>,
    closed: bool,
}

/// One call on the lane: its number, and its answer to come. Dropped before the answer, the
/// call is forgotten (its answer, if it comes, is dropped).
pub(crate) struct Ticket {
    key: u64,
    lane: Arc<Lane>,
    answer: oneshot::Receiver<Answer>,
}

/// The parts of a message the reader looks at to tell a lane answer, unparsed.
#[derive(Deserialize)]
struct Reply<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

impl Lane {
    /// A lane writing to `write` (shared with rmcp's transport).
    pub(super) fn new(write: SharedWriter<Writer>) -> Arc<Self> {
        Arc::new(Self {
            write,
            waiting: Mutex::default(),
            next: AtomicU64::new(1),
        })
    }

    /// A ticket for a new call; `TransportClosed` once the connection closed.
    pub(crate) fn ticket(self: &Arc<Self>) -> Result<Ticket, ServiceError> {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let (sender, answer) = oneshot::channel();
        let mut waiting = lock(&self.waiting);
        if waiting.closed {
            return Err(ServiceError::TransportClosed);
        }
        waiting.answers.insert(key, sender);
        Ok(Ticket {
            key,
            lane: Arc::clone(self),
            answer,
        })
    }

    /// Fails every call waiting, and every later one: the connection closed.
    pub(super) fn close(&self) {
        let mut waiting = lock(&self.waiting);
        waiting.closed = true;
        waiting.answers.clear();
    }

    /// Whether calls wait on the lane.
    fn expects(&self) -> bool {
        !lock(&self.waiting).answers.is_empty()
    }

    /// The waiting call whose request id is `id` (`lane-N`), taken off the list.
    fn claim(&self, id: &str) -> Option<oneshot::Sender<Answer>> {
        let key: u64 = id.strip_prefix(PREFIX)?.parse().ok()?;
        lock(&self.waiting).answers.remove(&key)
    }

    /// Hands `line` to its call when it answers one on the lane, and says so; `label` names
    /// the server in the error of an answer that does not read.
    pub(super) fn answered(&self, line: &[u8], label: &str) -> bool {
        if !self.expects() {
            return false;
        }
        let Ok(reply) = serde_json::from_slice::<Reply<'_>>(line) else {
            return false;
        };
        if reply.method.is_some() {
            return false;
        }
        // A lane id is a JSON string with nothing to escape.
        let id = reply.id.map(RawValue::get);
        let id = id.and_then(|id| id.strip_prefix('"')?.strip_suffix('"'));
        let Some(sender) = id.and_then(|id| self.claim(id)) else {
            return false;
        };
        let answer = match (reply.result, reply.error) {
            (Some(result), None) => serde_json::from_str::<CallToolResult>(result.get())
                .map_err(|e| unreadable(label, &e)),
            (None, Some(error)) => match serde_json::from_str::<ErrorData>(error.get()) {
                Ok(error) => Err(ServiceError::McpError(error)),
                Err(e) => Err(unreadable(label, &e)),
            },
            _ => Err(unreadable(label, &"neither a result nor an error")),
        };
        let _ = sender.send(answer);
        true
    }

    /// Fails the call on the lane whose request id is `id` with `message`, and says so.
    pub(super) fn fail(&self, id: Option<&serde_json::Value>, message: &str) -> bool {
        let Some(id) = id.and_then(serde_json::Value::as_str) else {
            return false;
        };
        let Some(sender) = self.claim(id) else {
            return false;
        };
        let error = ErrorData::internal_error(message.to_owned(), None);
        let _ = sender.send(Err(ServiceError::McpError(error)));
        true
    }
}

/// The error of an answer that does not read, as rmcp's transport words it.
fn unreadable(label: &str, error: &dyn std::fmt::Display) -> ServiceError {
    let message = format!("{label}'s answer does not parse: {error}");
    tracing::warn!("{message}");
    ServiceError::McpError(ErrorData::internal_error(message, None))
}

impl Ticket {
    /// The call's request id.
    pub(crate) fn id(&self) -> RequestId {
        NumberOrString::String(format!("{PREFIX}{}", self.key).into())
    }

    /// The call's progress token: its request id.
    pub(crate) fn progress_token(&self) -> ProgressToken {
        ProgressToken(self.id())
    }

    /// Writes the call of `params` to the server; `TransportClosed` when it cannot be.
    pub(crate) async fn send(&self, params: CallToolRequestParams) -> Result<(), ServiceError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let message = TxJsonRpcMessage::<RoleClient>::request(request, self.id());
        write_line(Arc::clone(&self.lane.write), message)
            .await
            .map_err(|error| {
                tracing::debug!("writing a call on the lane failed: {error}");
                ServiceError::TransportClosed
            })
    }

    /// The call's answer; `TransportClosed` when the connection closed first.
    pub(crate) async fn answer(mut self) -> Answer {
        (&mut self.answer)
            .await
            .unwrap_or(Err(ServiceError::TransportClosed))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        lock(&self.lane.waiting).answers.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane() -> Arc<Lane> {
        let (write, _read) = tokio::io::duplex(1 << 16);
        let write: Writer = Box::new(write);
        Lane::new(Arc::new(tokio::sync::Mutex::new(Some(write))))
    }

    #[tokio::test]
    async fn an_answer_reaches_its_call_and_other_messages_do_not() {
        let lane = lane();
        let ticket = lane.ticket().unwrap();
        let other = lane.ticket().unwrap();
        let id = serde_json::to_string(&ticket.id()).unwrap();
        let progress = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{id},"progress":1}}}}"#
        );
        assert!(!lane.answered(progress.as_bytes(), "s"));
        assert!(!lane.answered(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "s"));
        let answer = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"hi"}}]}}}}"#
        );
        assert!(lane.answered(answer.as_bytes(), "s"));
        assert!(!lane.answered(answer.as_bytes(), "s"), "answered twice");
        let result = ticket.answer().await.unwrap();
        assert_eq!(result.content[0].as_text().unwrap().text, "hi");
        lane.close();
        assert!(matches!(
            other.answer().await,
            Err(ServiceError::TransportClosed)
        ));
        assert!(matches!(lane.ticket(), Err(ServiceError::TransportClosed)));
    }

    #[tokio::test]
    async fn an_error_or_an_unreadable_answer_fails_its_call() {
        let lane = lane();
        let failed = lane.ticket().unwrap();
        let unreadable = lane.ticket().unwrap();
        let failed_id = serde_json::to_string(&failed.id()).unwrap();
        let error = format!(
            r#"{{"jsonrpc":"2.0","id":{failed_id},"error":{{"code":-32602,"message":"no such tool"}}}}"#
        );
        assert!(lane.answered(error.as_bytes(), "s"));
        let unreadable_id = serde_json::to_string(&unreadable.id()).unwrap();
        let bad = format!(r#"{{"jsonrpc":"2.0","id":{unreadable_id},"result":{{"content":7}}}}"#);
        assert!(lane.answered(bad.as_bytes(), "server `s`"));
        match failed.answer().await {
            Err(ServiceError::McpError(e)) => assert_eq!(e.message, "no such tool"),
            other => panic!("{other:?}"),
        }
        match unreadable.answer().await {
            Err(ServiceError::McpError(e)) => {
                assert!(
                    e.message.starts_with("server `s`'s answer does not parse"),
                    "{e:?}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
