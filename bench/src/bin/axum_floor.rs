//! `axum-floor`: the floor (c) of the HTTP benchmark, a bare axum handler that answers the
//! JSON-RPC `tools/call` of `echo` without any MCP machinery.
//!
//! It parses the request, calls the same `echo` as the other two servers, and writes the same
//! answer: JSON by default, one server-sent event under `--sse`, where `initialize` also hands
//! out a session id so a stateful client runs unchanged (sessions are not kept: there is
//! nothing to keep). `TCP_NODELAY` is set on accepted sockets. Once bound it writes its
//! `--ready-file` and prints `listening on http://ADDR/mcp` to stderr, as the host does, and
//! serves until killed.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use anyhow::Result;
use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};
use bench::echo::{self, EchoArgs};
use clap::Parser;
use serde::Deserialize;
use serde_json::{Value, json};

/// The floor server.
#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    listen: echo::Listen,
    /// Answer with server-sent events (and hand out session ids) instead of JSON.
    #[arg(long)]
    sse: bool,
}

/// What every request shares.
#[derive(Debug)]
struct Floor {
    sse: bool,
    sessions: AtomicU64,
}

/// The part of a JSON-RPC request the floor reads.
#[derive(Debug, Deserialize)]
struct Request {
    id: Option<Value>,
    method: String,
    #[serde(default)]
    params: Value,
}

/// The part of `tools/call`'s params the floor reads.
#[derive(Debug, Deserialize)]
struct CallParams {
    name: String,
    arguments: EchoArgs,
}

async fn mcp(State(floor): State<Arc<Floor>>, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Request>(&body) else {
        return (StatusCode::BAD_REQUEST, "not a JSON-RPC request").into_response();
    };
    let Some(id) = request.id else {
        return StatusCode::ACCEPTED.into_response(); // a notification
    };
    let answer = match request.method.as_str() {
        "initialize" => json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {
                "protocolVersion": request.params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "axum-floor", "version": env!("CARGO_PKG_VERSION")}
            }
        }),
        "tools/call" => match serde_json::from_value::<CallParams>(request.params) {
            Ok(call) if call.name == "echo" => {
                echo::call_response(&id, &echo::echo(call.arguments.text))
            }
            _ => json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": -32602, "message": "only echo is served"}
            }),
        },
        _ => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32601, "message": "method not found"}
        }),
    };
    let mut response = if floor.sse {
        (
            [(header::CONTENT_TYPE, "text/event-stream")],
            format!("data: {answer}\n\n"),
        )
            .into_response()
    } else {
        (
            [(header::CONTENT_TYPE, "application/json")],
            answer.to_string(),
        )
            .into_response()
    };
    if floor.sse && request.method == "initialize" {
        let session = floor.sessions.fetch_add(1, Ordering::Relaxed).to_string();
        if let Ok(value) = session.parse() {
            response.headers_mut().insert("mcp-session-id", value);
        }
    }
    response
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let floor = Arc::new(Floor {
        sse: args.sse,
        sessions: AtomicU64::new(1),
    });
    let router = Router::new()
        .route(
            "/mcp",
            post(mcp).delete(|| async { StatusCode::OK.into_response() }),
        )
        .with_state(floor);
    echo::serve(router, &args.listen).await
}
