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

use std::{io, pin::Pin, sync::Arc};

use rmcp::{
    ErrorData, RoleServer,
    model::{ErrorCode, NumberOrString},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader},
    sync::Mutex,
};

use super::id_scan::IdScan;
use crate::serve::edge::body::classify;

/// A write of one line, kept while it is under way.
type Writing = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

/// MCP over a reader and a writer, a message per line.
pub(crate) struct LineTransport<R, W> {
    read: BufReader<R>,
    write: Arc<Mutex<Option<W>>>,
    max_line: usize,
    /// The line being read, until its newline.
    line: Vec<u8>,
    /// The line being read through, when it has grown over `max_line`.
    oversized: Option<Oversized>,
    /// An error answer being written, finished before the next line is read.
    answering: Option<Writing>,
}

/// What is known of a line too long to keep.
struct Oversized {
    bytes: usize,
    id: IdScan,
}

/// How reading a line ended.
enum LineRead {
    Line,
    Oversized(Oversized),
    Eof,
    Io(io::Error),
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport reading lines of at most `max_line` bytes from `read`, writing to `write`.
    pub(crate) fn new(read: R, write: W, max_line: usize) -> Self {
        Self {
            read: BufReader::new(read),
            write: Arc::new(Mutex::new(Some(write))),
            max_line,
            line: Vec::new(),
            oversized: None,
            answering: None,
        }
    }

    /// Reads the next line into `self.line`, or through it when it is too long. Cancel-safe:
    /// nothing is consumed across an `.await`, so a dropped read resumes where it was.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(error) => return LineRead::Io(error),
            };
            if available.is_empty() {
                return LineRead::Eof;
            }
            let end = available.iter().position(|&b| b == b'\n');
            let chunk = &available[..end.map_or(available.len(), |at| at + 1)];
            let taken = chunk.len();
            if self.oversized.is_none() && self.line.len() + taken > self.max_line.saturating_add(1)
            {
                let mut id = IdScan::default();
                id.feed(&self.line);
                self.oversized = Some(Oversized {
                    bytes: self.line.len(),
                    id,
                });
                self.line.clear();
            }
            match &mut self.oversized {
                Some(over) => {
                    over.bytes += taken - usize::from(end.is_some());
                    over.id.feed(chunk);
                }
                None => self.line.extend_from_slice(chunk),
            }
            self.read.consume(taken);
            if end.is_some() {
                return match self.oversized.take() {
                    Some(over) => LineRead::Oversized(over),
                    None => LineRead::Line,
                };
            }
        }
    }

    /// Starts writing the error answering `id` (`null` when it has none).
    fn answer(&mut self, id: Option<Value>, error: ErrorData) {
        let id = match id {
            Some(Value::String(id)) => Some(NumberOrString::String(id.into())),
            Some(Value::Number(n)) => n.as_i64().map(NumberOrString::Number),
            _ => None,
        };
        let message = TxJsonRpcMessage::<RoleServer>::error(error, id);
        self.answering = Some(Box::pin(write_message(Arc::clone(&self.write), message)));
    }

    /// Answers the line in `self.line`, which did not parse as a message: nothing for a
    /// notification, `-32700` or `-32600` otherwise.
    fn refuse(&mut self, line: &[u8]) {
        let value = serde_json::from_slice::<Value>(line).ok();
        let object = value.as_ref().and_then(Value::as_object);
        if object
            .is_some_and(|m| m.get("method").is_some_and(Value::is_string) && !m.contains_key("id"))
        {
            tracing::debug!("ignored a notification that does not parse");
            return;
        }
        let error = classify(line);
        tracing::debug!("refused a malformed line: {}", error.message);
        let id = object.and_then(|m| m.get("id")).cloned();
        self.answer(id, error);
    }
}

/// Writes `message` as one line under the writer's lock.
async fn write_message<W: AsyncWrite + Unpin>(
    write: Arc<Mutex<Option<W>>>,
    message: TxJsonRpcMessage<RoleServer>,
) -> io::Result<()> {
    let mut line = serde_json::to_vec(&message).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut write = write.lock().await;
    let Some(write) = write.as_mut() else {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "the transport is closed",
        ));
    };
    write.write_all(&line).await?;
    write.flush().await
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
        write_message(Arc::clone(&self.write), item)
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
            match self.read_line().await {
                LineRead::Line => {}
                LineRead::Oversized(over) => {
                    let limit = self.max_line;
                    tracing::warn!(
                        bytes = over.bytes,
                        limit,
                        "refused a message over the size limit"
                    );
                    let id = over.id.id();
                    let code = if id.is_some() {
                        ErrorCode::INVALID_REQUEST
                    } else {
                        ErrorCode::PARSE_ERROR
                    };
                    let message = format!(
                        "the message is {} bytes, over the limit of {limit} bytes for one message",
                        over.bytes
                    );
                    self.answer(id, ErrorData::new(code, message, None));
                    continue;
                }
                LineRead::Eof => return None,
                LineRead::Io(error) => {
                    tracing::error!("reading stdin failed: {error}");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                self.line = line;
                self.line.clear();
                continue;
            }
            let parsed = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text);
            match parsed {
                Ok(message) => {
                    self.line = line;
                    self.line.clear();
                    return Some(message);
                }
                Err(_) => {
                    let text = text.to_vec();
                    self.line = line;
                    self.line.clear();
                    self.refuse(&text);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(answering) = self.answering.take() {
            let _ = answering.await;
        }
        let mut write = self.write.lock().await;
        if let Some(mut write) = write.take() {
            write.shutdown().await?;
        }
        Ok(())
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
