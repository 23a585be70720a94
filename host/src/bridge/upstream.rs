//! The one connection to a bridged server, shared by every session and request.
//!
//! Started (or connected) on first need and again on the next need after the server went away
//! (a child that exited, a closed HTTP session); each start is bounded by the entry's
//! `connect_timeout`. Requests are multiplexed on it by rmcp's client. A stdio child is started
//! in a process group of its own and killed when its connection is dropped; the group is sent
//! SIGTERM when the connection is replaced or stopped and when the upstream is dropped, so the
//! processes a command starts in turn (`npx` starting `node`) go too. The child's stderr is
//! logged, and its last lines kept for the error when it does not start. What the server sends
//! during a call (progress, log messages, requests to the client) reaches the request that made
//! it ([`Relay`]).

use std::{
    collections::VecDeque,
    process::Stdio,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use plugin_abi::HostContextBox;
use rmcp::{
    RoleClient, ServiceExt as _,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
        ClientRequest, JsonObject, PaginatedRequestParams, RequestId, ServerResult, Tool,
    },
    service::{Peer, PeerRequestOptions, RunningService, ServiceError},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tokio::io::AsyncBufReadExt as _;

use super::{
    config::{ServerEntry, Transport},
    relay::{Relay, Tagged},
};

/// How many of a child's last stderr lines an error quotes.
const STDERR_LINES: usize = 10;

/// Why a call has no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The server neither answered nor reported progress for this long (`call_timeout`).
    Silent(Duration),
    /// The server did not start, or failed the call; the message says which and why.
    Failed(String),
}

/// A bridged server's connection, made on first need.
#[derive(Debug)]
pub struct Upstream {
    server: Arc<ServerEntry>,
    connection: tokio::sync::Mutex<Option<RunningService<RoleClient, Relay>>>,
    relay: Relay,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// The process group of the current stdio child.
    group: Mutex<Option<u32>>,
}

impl Upstream {
    /// The connection to `server`; nothing is started yet.
    pub fn new(server: Arc<ServerEntry>) -> Self {
        Self {
            relay: Relay::new(&server.name),
            server,
            connection: tokio::sync::Mutex::default(),
            stderr: Arc::default(),
            group: Mutex::default(),
        }
    }

    /// The server's entry.
    pub fn server(&self) -> &ServerEntry {
        &self.server
    }

    /// Signalled each time the server says its tool list changed.
    pub fn tools_changed(&self) -> Arc<tokio::sync::Notify> {
        self.relay.tools_changed()
    }

    /// A live connection: the current one, or a new one if there is none or it closed.
    pub async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut connection = self.connection.lock().await;
        if let Some(live) = connection
            .as_ref()
            .filter(|c| !c.is_closed() && !c.peer().is_transport_closed())
        {
            return Ok(live.peer().clone());
        }
        if connection.take().is_some() {
            self.end_group();
            tracing::info!(server = %self.server.name, "restarting MCP server: its connection closed");
        }
        let timeout = self.server.connect_timeout;
        let started = match tokio::time::timeout(timeout, self.connect()).await {
            Ok(Ok(started)) => started,
            Ok(Err(reason)) => {
                self.end_group();
                // Let the stderr reader catch up with a child that just exited.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(self.did_not_start(&reason));
            }
            Err(_) => {
                self.end_group();
                return Err(self.did_not_start(&format!(
                    "no answer to initialize within {} s (connect_timeout)",
                    timeout.as_secs_f64()
                )));
            }
        };
        let peer = started.peer().clone();
        *connection = Some(started);
        Ok(peer)
    }

    /// Every tool the server lists, following pagination; starting it and listing are each
    /// bounded by `connect_timeout`.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, String> {
        let peer = self.peer().await?;
        let timeout = self.server.connect_timeout;
        let name = &self.server.name;
        match tokio::time::timeout(timeout, list_all(&peer)).await {
            Ok(listed) => {
                listed.map_err(|e| format!("server `{name}` could not list its tools: {e}"))
            }
            Err(_) => Err(format!(
                "server `{name}` did not list its tools within {} s (connect_timeout)",
                timeout.as_secs_f64()
            )),
        }
    }

    /// Calls the upstream tool `tool` (its own name) with `arguments`, for the request that
    /// `context` stands for: what the server sends during the call goes to it, and dropping the
    /// future tells the server the call is cancelled. Once the call is sent, it fails with
    /// [`CallError::Silent`] when `call_timeout` passes with neither the answer nor a progress
    /// report (each report restarts it); the server is then told it is cancelled.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        context: HostContextBox,
    ) -> Result<CallToolResult, CallError> {
        let peer = self.peer().await.map_err(CallError::Failed)?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        let failed = |e: ServiceError| {
            CallError::Failed(format!(
                "server `{}` failed the call of `{tool}`: {e}",
                self.server.name
            ))
        };
        let listening = self.relay.listen(context);
        // rmcp gives each request its progress token; reports sent before the handle comes
        // back (before the request is even written) cannot be.
        let handle = peer
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(failed)?;
        listening.sent_as(handle.progress_token.clone());
        let mut abandoned = Abandoned(Some((peer, handle.id.clone())));
        let timeout = self.server.call_timeout;
        let answer = handle.await_response();
        let mut answer = std::pin::pin!(answer);
        let answer = loop {
            tokio::select! {
                answer = &mut answer => break answer,
                () = listening.progressed() => {}
                () = tokio::time::sleep(timeout) => return Err(CallError::Silent(timeout)),
            }
        };
        abandoned.0 = None;
        match answer.map_err(failed)? {
            ServerResult::CallToolResult(result) => Ok(result),
            other => Err(failed(ServiceError::UnexpectedResponse)).inspect_err(|_| {
                tracing::debug!(server = %self.server.name, "unexpected answer to tools/call: {other:?}");
            }),
        }
    }

    /// Closes the connection (a stdio child and its process group are ended).
    pub fn stop(&self) {
        if let Ok(mut connection) = self.connection.try_lock() {
            connection.take();
        }
        self.end_group();
    }

    /// Sends SIGTERM to the current child's process group, if there is one.
    fn end_group(&self) {
        let group = self
            .group
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        #[cfg(unix)]
        if let Some(pid) = group.and_then(|g| rustix::process::Pid::from_raw(g.try_into().ok()?)) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
        }
        #[cfg(not(unix))]
        drop(group);
    }

    async fn connect(&self) -> Result<RunningService<RoleClient, Relay>, String> {
        match &self.server.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env).kill_on_drop(true);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                #[cfg(unix)]
                cmd.process_group(0);
                self.stderr
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clear();
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot run `{command}`: {e}"))?;
                *self.group.lock().unwrap_or_else(PoisonError::into_inner) = transport.id();
                if let Some(stderr) = stderr {
                    tokio::spawn(keep_stderr(
                        self.server.name.clone(),
                        stderr,
                        Arc::clone(&self.stderr),
                    ));
                }
                self.relay
                    .clone()
                    .serve(Tagged::new(transport, self.relay.clone()))
                    .await
                    .map_err(|e| e.to_string())
            }
            Transport::Http { url, headers } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                for (name, value) in headers {
                    let name = axum::http::HeaderName::try_from(name.as_str())
                        .map_err(|e| format!("header `{name}`: {e}"))?;
                    let value = axum::http::HeaderValue::try_from(value.as_str())
                        .map_err(|e| format!("header `{name}`: {e}"))?;
                    config.custom_headers.insert(name, value);
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                self.relay
                    .clone()
                    .serve(Tagged::new(transport, self.relay.clone()))
                    .await
                    .map_err(|e| e.to_string())
            }
        }
    }

    /// "server `x` did not start: REASON", with the child's last stderr lines.
    fn did_not_start(&self, reason: &str) -> String {
        let lines = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        let mut message = format!("server `{}` did not start: {reason}", self.server.name);
        if !lines.is_empty() {
            message.push_str("; its last stderr lines:\n");
            message.push_str(&lines.iter().cloned().collect::<Vec<_>>().join("\n"));
        }
        message
    }
}

/// A call in flight: when dropped before its answer, the server is told it is cancelled.
struct Abandoned(Option<(Peer<RoleClient>, RequestId)>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some((peer, id)) = self.0.take() {
            tokio::spawn(async move {
                let cancelled = CancelledNotificationParam::new(
                    Some(id),
                    Some("the client cancelled the call".to_owned()),
                );
                let _ = peer.notify_cancelled(cancelled).await;
            });
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.end_group();
    }
}

/// Every tool `peer` lists, page after page; a cursor seen before is an error.
async fn list_all(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = peer
            .list_tools(Some(
                PaginatedRequestParams::default().with_cursor(cursor.clone()),
            ))
            .await
            .map_err(|e| e.to_string())?;
        tools.extend(page.tools);
        match page.next_cursor {
            None => return Ok(tools),
            Some(next) if seen.contains(&next) => {
                return Err(format!("the cursor `{next}` came back: pagination loops"));
            }
            Some(next) => {
                seen.push(next.clone());
                cursor = Some(next);
            }
        }
    }
}

/// Logs each stderr line of `server`'s child and keeps the last ones in `kept`.
async fn keep_stderr(
    server: String,
    stderr: tokio::process::ChildStderr,
    kept: Arc<Mutex<VecDeque<String>>>,
) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(server = %server, "stderr: {line}");
        let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() == STDERR_LINES {
            kept.pop_front();
        }
        kept.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;
    use crate::bridge::cache::tests::server;

    #[tokio::test]
    async fn an_https_url_is_spoken_to_in_tls() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}/mcp", listener.local_addr().unwrap());
        let first_byte = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut first = [0_u8; 1];
            stream.read_exact(&mut first).await.unwrap();
            first[0]
        });
        let upstream = Upstream::new(Arc::new(server("secure", &url)));
        let error = upstream.peer().await.unwrap_err();
        assert!(
            error.starts_with("server `secure` did not start: "),
            "{error}"
        );
        assert_eq!(
            first_byte.await.unwrap(),
            0x16,
            "the connection opens with a TLS handshake record"
        );
    }
}
