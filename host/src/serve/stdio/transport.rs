//! The stdio transport: one JSON-RPC message per line, every line answered.
//!
//! rmcp's own line transport drops a line that is not JSON and one longer than its limit
//! without a word, so a client that sent one waits forever. This one answers every request:
//! a line that is not JSON with `-32700`, a line of JSON that is not a message with `-32600`
//! naming what is wrong (the id it carries when it has one), and a line over
//! [`MAX_REQUEST_BODY_BYTES`](crate::serve::MAX_REQUEST_BODY_BYTES) with an error naming its
//! size and the limit, for its id when the id can be read, with `-32700` otherwise; the
//! line is read through, never held whole. A notification that does not parse is only logged:
//! JSON-RPC answers no notification.
//!
//! Once the session is initialized ([`LineTransport::direct`]), the hot methods
//! (`tools/call`, `tools/list`, `ping`) are read with typed serde and served by rmcp's own
//! dispatch in a task of their own that writes the answer itself, as over HTTP
//! (`crate::serve::edge::hot`): rmcp's service loop would parse them as any request, spawn the
//! handler, and send its answer back through its loop and a task of its own to write it. A
//! request naming its protocol version in `_meta` is still rmcp's, which serves it under that
//! version.

use std::{
    io,
    pin::Pin,
    sync::{Arc, OnceLock},
};

use rmcp::{
    ErrorData, RoleServer,
    model::ErrorCode,
    service::{RequestContext, RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::serve::edge::body::classify;
use crate::serve::mcp::direct::{Direct, read};
use crate::util::json_lines::{LineRead, LineReader, SharedWriter, close, write_line};

/// A write of one line, kept while it is under way.
type Writing = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

/// MCP over a reader and a writer, a message per line.
pub(crate) struct LineTransport<R, W> {
    read: LineReader<R>,
    write: SharedWriter<W>,
    /// An error answer being written, finished before the next line is read.
    answering: Option<Writing>,
    /// The session's handler and peer, once it is initialized: the hot methods are answered
    /// with them.
    direct: Arc<OnceLock<Direct>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport reading lines of at most `max_line` bytes from `read`, writing to `write`.
    pub(crate) fn new(read: R, write: W, max_line: usize) -> Self {
        Self {
            read: LineReader::new(read, max_line),
            write: Arc::new(tokio::sync::Mutex::new(Some(write))),
            answering: None,
            direct: Arc::default(),
        }
    }

    /// Where the session, once initialized, is left for the hot methods to be answered
    /// directly.
    pub(crate) fn direct(&self) -> Arc<OnceLock<Direct>> {
        Arc::clone(&self.direct)
    }

    /// Serves `line` in a task of its own that writes its answer, when it is a hot method's
    /// request of the initialized session; says whether it did.
    fn served_directly(&self, line: &[u8]) -> bool {
        let Some(direct) = self.direct.get() else {
            return false;
        };
        let Some((id, request, meta)) = read(line) else {
            return false;
        };
        if meta.protocol_version().is_some() {
            return false;
        }
        let Direct { handler, peer } = direct.clone();
        let write = Arc::clone(&self.write);
        tokio::spawn(async move {
            let mut context = RequestContext::new(id, peer);
            context.meta = meta;
            let answer = handler.answer_directly(request, context, true).await;
            if let Err(error) = write_line(write, answer).await {
                tracing::debug!("an answer was not written: {error}");
            }
        });
        true
    }

    /// Starts writing the error answering `id` (`null` when it has none).
    fn answer(&mut self, id: Option<Value>, error: ErrorData) {
        let id = crate::providers::bridged::lines::request_id(id.as_ref());
        let message = TxJsonRpcMessage::<RoleServer>::error(error, id);
        self.answering = Some(Box::pin(write_line(Arc::clone(&self.write), message)));
    }

    /// Answers `line`, which did not parse as a message: nothing for a notification, `-32700`
    /// or `-32600` otherwise.
    fn refuse(&mut self, line: &[u8]) {
        let value = serde_json::from_slice::<Value>(line).ok();
        let object = value.as_ref().and_then(Value::as_object);
        let notification = object.is_some_and(|m| {
            m.get("method").is_some_and(Value::is_string) && !m.contains_key("id")
        });
        if notification {
            tracing::debug!("ignored a notification that does not parse");
            return;
        }
        let error = classify(line);
        tracing::debug!("refused a malformed line: {}", error.message);
        let id = object.and_then(|m| m.get("id")).cloned();
        self.answer(id, error);
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        write_line(Arc::clone(&self.write), item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(answering) = &mut self.answering {
                let written = answering.await;
                self.answering = None;
                if let Err(error) = written {
                    tracing::debug!("an error answer was not written: {error}");
                    return None;
                }
            }
            let line = match self.read.read_line().await {
                LineRead::Line(line) => line,
                LineRead::Oversized { bytes, id } => {
                    let limit = self.read.max();
                    tracing::warn!(bytes, limit, "refused a message over the size limit");
                    let code = if id.is_some() {
                        ErrorCode::INVALID_REQUEST
                    } else {
                        ErrorCode::PARSE_ERROR
                    };
                    let message = format!(
                        "the message is {bytes} bytes, over the limit of {limit} bytes for one message"
                    );
                    self.answer(id, ErrorData::new(code, message, None));
                    continue;
                }
                LineRead::Eof => return None,
                LineRead::Io(error) => {
                    tracing::error!("reading stdin failed: {error}");
                    return None;
                }
            };
            if self.served_directly(&line) {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&line) {
                Ok(message) => return Some(message),
                Err(_) => self.refuse(&line),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(answering) = self.answering.take() {
            let _ = answering.await;
        }
        close(&self.write).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, duplex};

    use super::*;

    /// A transport over in-memory pipes with a `max_line` limit, a task driving its
    /// `receive`, and the client's ends: what the client writes, and the lines it reads.
    async fn exchange(max_line: usize, lines: &[Vec<u8>]) -> (Vec<Value>, Vec<Value>) {
        let (client_out, server_in) = duplex(1 << 16);
        let (server_out, client_in) = duplex(1 << 16);
        let mut transport = LineTransport::new(server_in, server_out, max_line);
        let received = tokio::spawn(async move {
            let mut received = Vec::new();
            while let Some(message) = transport.receive().await {
                received.push(serde_json::to_value(&message).unwrap());
            }
            transport.close().await.unwrap();
            received
        });
        let mut client_out = client_out;
        for line in lines {
            client_out.write_all(line).await.unwrap();
        }
        drop(client_out);
        let received = received.await.unwrap();
        let mut answers = Vec::new();
        let mut reader = BufReader::new(client_in).lines();
        while let Some(line) = reader.next_line().await.unwrap() {
            answers.push(serde_json::from_str(&line).unwrap());
        }
        (received, answers)
    }

    fn line(value: Value) -> Vec<u8> {
        format!("{value}\n").into_bytes()
    }

    #[tokio::test]
    async fn every_bad_line_of_a_request_is_answered_and_good_ones_go_through() {
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        let (received, answers) = exchange(
            1024,
            &[
                b"this is not json\n".to_vec(),
                line(json!({"jsonrpc": "2.0", "id": 2, "method": 5})),
                line(json!([1, 2])),
                line(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 3})),
                b"\n".to_vec(),
                line(ping.clone()),
                b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"".to_vec(),
            ],
        )
        .await;
        assert_eq!(received, [ping]);
        let codes: Vec<(&Value, &Value)> = answers
            .iter()
            .map(|a| (&a["id"], &a["error"]["code"]))
            .collect();
        assert_eq!(
            codes,
            [
                (&json!(null), &json!(-32700)),
                (&json!(2), &json!(-32600)),
                (&json!(null), &json!(-32600)),
            ],
            "{answers:#?}"
        );
        assert!(
            answers[1]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("`method` must be a string"),
            "{answers:#?}"
        );
    }

    #[tokio::test]
    async fn an_over_long_line_is_answered_for_its_id_naming_its_size() {
        let padding = "x".repeat(5000);
        let with_id = line(json!({"jsonrpc": "2.0", "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": padding}}, "id": 41}));
        let without = line(json!({"jsonrpc": "2.0", "method": "ping", "params": {"p": padding}}));
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        let size = with_id.len() - 1;
        let (received, answers) = exchange(1024, &[with_id, without, line(ping.clone())]).await;
        assert_eq!(received, [ping], "the line after is read whole");
        assert_eq!(answers[0]["id"], 41);
        assert_eq!(answers[0]["error"]["code"], -32600);
        assert_eq!(
            answers[0]["error"]["message"],
            format!("the message is {size} bytes, over the limit of 1024 bytes for one message")
        );
        assert_eq!(answers[1]["id"], json!(null));
        assert_eq!(answers[1]["error"]["code"], -32700);
        assert_eq!(answers.len(), 2);
    }
}
