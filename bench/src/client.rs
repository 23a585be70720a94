//! A minimal MCP client over HTTP/1.1 on hyper: the load generator's side of the wire.
//!
//! One [`Connection`] is one kept-alive TCP connection (`TCP_NODELAY` set); one [`Session`] is
//! one MCP session over its own connection. In [`Mode::Sse`] a session starts with
//! `initialize` and `notifications/initialized`, carries its `Mcp-Session-Id`, and gets its
//! answers as server-sent events; in [`Mode::Json`] there is no session and every request
//! stands alone, answered with plain JSON. The client does the least it can per call (the
//! request body is formatted, the answer is checked by a substring), so on a 2-core machine
//! the server, not the client, is what the figures measure.

use std::{fmt, net::SocketAddr};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{
    Method, Request, StatusCode,
    client::conn::http1::{self, SendRequest},
    header,
};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;

/// The protocol version the client asks for and then states on every request.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// How a server answers, and whether it keeps sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Stateful sessions; every answer is a server-sent event stream.
    Sse,
    /// Stateless; every answer is a JSON body.
    Json,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sse => "SSE, stateful",
            Self::Json => "JSON, stateless",
        })
    }
}

/// Where to send MCP requests: a loopback address and a request target (`/mcp?only=x`).
#[derive(Debug, Clone)]
pub struct Endpoint {
    addr: SocketAddr,
    target: String,
}

impl Endpoint {
    /// The endpoint at `addr` with the request target `target` (path and query).
    pub fn new(addr: SocketAddr, target: impl Into<String>) -> Self {
        Self {
            addr,
            target: target.into(),
        }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The same server with another request target.
    pub fn with_target(&self, target: impl Into<String>) -> Self {
        Self::new(self.addr, target)
    }
}

/// An HTTP answer, read whole.
#[derive(Debug)]
pub struct Reply {
    /// The status.
    pub status: StatusCode,
    /// The `Mcp-Session-Id` header, if any.
    pub session: Option<String>,
    /// The body.
    pub body: Bytes,
}

impl Reply {
    /// The JSON-RPC message of the answer: the body itself, or the last `data:` line of an
    /// event stream that holds JSON.
    pub fn message(&self) -> Result<Value> {
        let text = std::str::from_utf8(&self.body).context("the answer is not UTF-8")?;
        if self.status != StatusCode::OK {
            bail!("HTTP {}: {text}", self.status);
        }
        if let Ok(value) = serde_json::from_str(text) {
            return Ok(value);
        }
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .next_back()
            .with_context(|| format!("no JSON-RPC message in the answer: {text}"))
    }
}

/// One kept-alive HTTP/1.1 connection.
#[derive(Debug)]
pub struct Connection {
    sender: SendRequest<Full<Bytes>>,
    endpoint: Endpoint,
    authority: String,
}

impl Connection {
    /// Connects to `endpoint`'s server.
    pub async fn open(endpoint: &Endpoint) -> Result<Self> {
        let stream = TcpStream::connect(endpoint.addr)
            .await
            .with_context(|| format!("connecting to {}", endpoint.addr))?;
        stream.set_nodelay(true)?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Self {
            sender,
            authority: endpoint.addr.to_string(),
            endpoint: endpoint.clone(),
        })
    }

    /// Sends one request to `target` (the endpoint's own when `None`) and reads the answer.
    pub async fn send(
        &mut self,
        method: Method,
        target: Option<&str>,
        session: Option<&str>,
        body: Option<Bytes>,
    ) -> Result<Reply> {
        let mut request = Request::builder()
            .method(method)
            .uri(target.unwrap_or(&self.endpoint.target))
            .header(header::HOST, &self.authority)
            .header(header::ACCEPT, "application/json, text/event-stream");
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", PROTOCOL_VERSION);
        }
        let request = request.body(Full::new(body.unwrap_or_default()))?;
        self.sender.ready().await.context("the connection closed")?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.into_body().collect().await?.to_bytes();
        Ok(Reply {
            status,
            session,
            body,
        })
    }

    /// `GET target`, read whole.
    pub async fn get(&mut self, target: &str) -> Result<Reply> {
        self.send(Method::GET, Some(target), None, None).await
    }
}

/// Opens an MCP session over `connection` (`initialize`, then `notifications/initialized`)
/// and returns its id. The session outlives the connection: sessions are the server's.
pub async fn initialize(connection: &mut Connection) -> Result<String> {
    let params = json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "reactor-bench", "version": env!("CARGO_PKG_VERSION")}
    });
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params});
    let reply = connection
        .send(Method::POST, None, None, Some(body.to_string().into()))
        .await?;
    reply.message().context("initialize")?;
    let id = reply
        .session
        .context("initialize answered without a session id")?;
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let reply = connection
        .send(
            Method::POST,
            None,
            Some(&id),
            Some(notification.to_string().into()),
        )
        .await?;
    if !reply.status.is_success() {
        bail!("notifications/initialized: HTTP {}", reply.status);
    }
    Ok(id)
}

/// One MCP client: a session (in [`Mode::Sse`]) over its own connection.
#[derive(Debug)]
pub struct Session {
    connection: Connection,
    id: Option<String>,
    next_id: u64,
}

impl Session {
    /// Connects and, in [`Mode::Sse`], initializes a session.
    pub async fn open(endpoint: &Endpoint, mode: Mode) -> Result<Self> {
        let mut session = Self {
            connection: Connection::open(endpoint).await?,
            id: None,
            next_id: 1,
        };
        if mode == Mode::Sse {
            session.initialize().await?;
        }
        Ok(session)
    }

    async fn initialize(&mut self) -> Result<()> {
        self.id = Some(initialize(&mut self.connection).await?);
        Ok(())
    }

    async fn post(&mut self, body: String) -> Result<Reply> {
        self.connection
            .send(Method::POST, None, self.id.as_deref(), Some(body.into()))
            .await
    }

    fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The session id (in [`Mode::Sse`]).
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Sends a request and returns the answer unread, for timing what the server does alone.
    pub async fn request_raw(&mut self, method: &str, params: Value) -> Result<Reply> {
        let id = self.take_id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.post(body.to_string()).await
    }

    /// Sends a request and returns its `result`; a JSON-RPC error is an error.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let mut message = self.request_raw(method, params).await?.message()?;
        if let Some(error) = message.get("error") {
            bail!("{method} failed: {error}");
        }
        Ok(message
            .get_mut("result")
            .map(Value::take)
            .unwrap_or(Value::Null))
    }

    /// Calls `echo` with `text` (plain ASCII without quotes or backslashes) and checks that the
    /// text came back as a successful result.
    pub async fn call_echo(&mut self, text: &str) -> Result<()> {
        debug_assert!(!text.contains(['"', '\\']));
        let id = self.take_id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
        );
        let reply = self.post(body).await?;
        let answer = std::str::from_utf8(&reply.body).unwrap_or_default();
        let echoed = answer.contains(text) && answer.contains(r#""isError":false"#);
        if reply.status != StatusCode::OK || !echoed {
            bail!("echo failed: HTTP {}: {answer}", reply.status);
        }
        Ok(())
    }

    /// Ends the session (`DELETE`), if there is one.
    pub async fn close(mut self) -> Result<()> {
        if let Some(id) = self.id.take() {
            self.connection
                .send(Method::DELETE, None, Some(&id), None)
                .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(body: &str) -> Reply {
        Reply {
            status: StatusCode::OK,
            session: None,
            body: Bytes::from(body.to_owned()),
        }
    }

    #[test]
    fn a_json_answer_is_read_as_is() {
        let message = reply(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)
            .message()
            .unwrap();
        assert_eq!(message["id"], 1);
    }

    #[test]
    fn an_event_stream_gives_its_last_json_data_line() {
        let body = "data: \nid: 0\nretry: 3000\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\nid: 1/0\n\n";
        assert_eq!(reply(body).message().unwrap()["id"], 2);
        assert!(reply("data: \n\n").message().is_err());
    }
}
