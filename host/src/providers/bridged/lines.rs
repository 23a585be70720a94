//! The client's end of a stdio server's pipes (a bridged `mcp.json` server, an isolated
//! plugin's child): one JSON-RPC message per line, bounded by the entry's
//! `max_message_bytes`. rmcp's own line transport drops a line over its limit without a word,
//! so the call it answered waited out its whole timeout, and ended with "timed out". Here an
//! answer over the limit fails its call at once, with an error naming its size and the limit,
//! and the process, which is healthy, stays; so does an answer that does not parse. Other lines
//! that do not parse are logged and skipped.

use std::{io, sync::Arc};

use rmcp::{
    ErrorData, RoleClient,
    model::{ErrorCode, NumberOrString},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use super::lane::{Lane, Writer};
use crate::util::json_lines::{LineRead, LineReader, SharedWriter, close, write_line};

/// MCP to a server over its stdout and stdin.
pub(super) struct ServerLines<R> {
    read: LineReader<R>,
    write: SharedWriter<Writer>,
    /// The calls written outside rmcp's service, whose answers are read here.
    lane: Arc<Lane>,
    /// The server, as messages name it.
    label: String,
}

impl<R> ServerLines<R>
where
    R: AsyncRead + Send + Unpin,
{
    /// Reads the server's messages of at most `max` bytes from `read`, writes to `write`.
    pub(super) fn new<W>(read: R, write: W, max: usize, label: String) -> Self
    where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let write: SharedWriter<Writer> = Arc::new(tokio::sync::Mutex::new(Some(Box::new(write))));
        Self {
            read: LineReader::new(read, max),
            lane: Lane::new(Arc::clone(&write)),
            write,
            label,
        }
    }

    /// The lane of this connection's calls.
    pub(super) fn lane(&self) -> Arc<Lane> {
        Arc::clone(&self.lane)
    }
}

impl<R> Drop for ServerLines<R> {
    fn drop(&mut self) {
        self.lane.close();
    }
}

/// `id` as a request id, when it is one (a string or an integer).
pub(crate) fn request_id(id: Option<&Value>) -> Option<NumberOrString> {
    match id? {
        Value::String(id) => Some(NumberOrString::String(id.as_str().into())),
        Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        _ => None,
    }
}

/// The error answer to request `id` that fails it with `message`.
fn failed(id: NumberOrString, message: String) -> RxJsonRpcMessage<RoleClient> {
    RxJsonRpcMessage::<RoleClient>::error(
        ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None),
        Some(id),
    )
}

impl<R> Transport<RoleClient> for ServerLines<R>
where
    R: AsyncRead + Send + Unpin,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        write_line(Arc::clone(&self.write), item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let line = match self.read.read_line().await {
                LineRead::Line(line) => line,
                LineRead::Oversized { bytes, id } => {
                    let limit = self.read.max();
                    let message = format!(
                        "{}'s answer is {bytes} bytes, over the limit of {limit} bytes for one \
                         message (max_message_bytes)",
                        self.label
                    );
                    tracing::warn!("{message}");
                    if self.lane.fail(id.as_ref(), &message) {
                        continue;
                    }
                    match request_id(id.as_ref()) {
                        Some(id) => return Some(failed(id, message)),
                        None => continue,
                    }
                }
                LineRead::Eof => {
                    self.lane.close();
                    return None;
                }
                LineRead::Io(error) => {
                    tracing::debug!("reading {}'s stdout failed: {error}", self.label);
                    self.lane.close();
                    return None;
                }
            };
            if self.lane.answered(&line, &self.label) {
                continue;
            }
            let error = match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(&line) {
                Ok(message) => return Some(message),
                Err(error) => error,
            };
            let value = serde_json::from_slice::<Value>(&line).ok();
            let object = value.as_ref().and_then(Value::as_object);
            let answer = object.filter(|m| !m.contains_key("method"));
            match answer.and_then(|m| request_id(m.get("id"))) {
                Some(id) => {
                    let message = format!("{}'s answer does not parse: {error}", self.label);
                    tracing::warn!("{message}");
                    return Some(failed(id, message));
                }
                None => tracing::debug!("{} sent a line that does not parse: {error}", self.label),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        close(&self.write).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::{AsyncWriteExt as _, duplex};

    use super::*;

    #[tokio::test]
    async fn an_answer_over_the_limit_or_unparsable_fails_its_request_and_the_rest_goes_on() {
        let (mut server_out, client_in) = duplex(1 << 16);
        let (client_out, _server_in) = duplex(1 << 16);
        let mut lines = ServerLines::new(client_in, client_out, 1024, "server `s`".to_owned());
        let big = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [
            {"type": "text", "text": "x".repeat(5000)}]}});
        let big = format!("{big}\n");
        let input = format!(
            "{big}garbage\n{}\n{}\n",
            json!({"jsonrpc": "1.0", "id": 8, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 9, "result": {}})
        );
        server_out.write_all(input.as_bytes()).await.unwrap();
        drop(server_out);
        let mut received = Vec::new();
        while let Some(message) = lines.receive().await {
            received.push(serde_json::to_value(message).unwrap());
        }
        assert_eq!(received.len(), 3, "{received:#?}");
        assert_eq!(received[0]["id"], 7);
        assert_eq!(
            received[0]["error"]["message"],
            format!(
                "server `s`'s answer is {} bytes, over the limit of 1024 bytes for one message \
                 (max_message_bytes)",
                big.len() - 1
            )
        );
        assert_eq!(received[1]["id"], 8);
        assert!(
            received[1]["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("server `s`'s answer does not parse"),
            "{received:#?}"
        );
        assert_eq!(
            received[2],
            json!({"jsonrpc": "2.0", "id": 9, "result": {}})
        );
    }
}
