//! The `echo` tool as the baselines compile it in: the same body as the `benchmarks` plugin's
//! `echo`, its arguments, its input schema, and the JSON-RPC answer the floor server writes.
//!
//! The plain rmcp server and the axum floor both use this module, and [`serve`] them as the host
//! serves, so the three servers of the HTTP benchmark differ only in what sits between the
//! socket and this function.

use std::path::PathBuf;

use anyhow::{Context, Result};
use axum::{Router, serve::ListenerExt};
use reactor_mcp_server::internals::serve::Ready;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The arguments of `echo`.
#[derive(Debug, Clone, Deserialize)]
pub struct EchoArgs {
    /// The text to return.
    pub text: String,
}

/// Returns the text unchanged: the body of `plugins/benchmarks`' `echo`.
pub fn echo(text: String) -> String {
    text
}

/// The input schema of `echo`, as the plugin declares it.
pub fn input_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to return."}},
        "required": ["text"]
    });
    match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The JSON-RPC answer to a `tools/call` of `echo` with request `id`: a text result.
pub fn call_response(id: &Value, text: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {"content": [{"type": "text", "text": text}], "isError": false}
    })
}

/// Where a baseline listens and where it says so: the options both baselines take.
#[derive(Debug, Clone, clap::Args)]
pub struct Listen {
    /// The loopback port to bind; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Once listening, write `{"url", "address", "pid"}` to this file, as the host's
    /// `--ready-file` does.
    #[arg(long, value_name = "PATH")]
    pub ready_file: Option<PathBuf>,
}

/// Serves `router` at `/mcp` on the loopback port `listen` names until killed, as the host
/// serves: `TCP_NODELAY` on accepted sockets, and once bound the ready file (when asked for)
/// and `listening on http://ADDR/mcp` on stderr.
pub async fn serve(router: Router, listen: &Listen) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", listen.port)).await?;
    let address = listener.local_addr()?;
    if let Some(file) = &listen.ready_file {
        Ready::new(address, "/mcp")
            .write(file)
            .with_context(|| format!("writing the ready file {}", file.display()))?;
    }
    eprintln!("listening on http://{address}/mcp");
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_carries_the_text_as_a_text_block() {
        let answer = call_response(&json!(7), "hi");
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["result"]["content"][0]["text"], "hi");
        assert_eq!(echo("x".to_owned()), "x");
        assert_eq!(input_schema()["required"], json!(["text"]));
    }
}
