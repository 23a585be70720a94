//! `plain-rmcp-echo`: the baseline (b) of the HTTP benchmark, an rmcp server with `echo`
//! compiled in and no plugin layer.
//!
//! Served like the host serves: rmcp's streamable-HTTP service in axum at `/mcp`, with
//! `TCP_NODELAY` on accepted sockets; stateful with SSE answers by default, stateless with JSON
//! answers under `--stateless` (the host's two modes). Once bound it writes its `--ready-file`
//! and prints `listening on http://ADDR/mcp` to stderr, as the host does, and serves until
//! killed.

use std::sync::Arc;

use anyhow::Result;
use axum::Router;
use bench::echo::{self, EchoArgs};
use clap::Parser;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde_json::Value;

/// A plain rmcp server with one `echo` tool.
#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    listen: echo::Listen,
    /// Serve without sessions, with JSON answers.
    #[arg(long)]
    stateless: bool,
}

/// The server: one tool, described once.
#[derive(Debug, Clone)]
struct Plain {
    tool: Arc<Tool>,
}

impl ServerHandler for Plain {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![(*self.tool).clone()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", request.name),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let args: EchoArgs = serde_json::from_value(arguments)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let text = echo::echo(args.text);
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let plain = Plain {
        tool: Arc::new(Tool::new(
            "echo",
            "Return the text unchanged.",
            echo::input_schema(),
        )),
    };
    let mut config = StreamableHttpServerConfig::default();
    if args.stateless {
        config = config
            .with_legacy_session_mode(false)
            .with_json_response(true);
    }
    let service = StreamableHttpService::new(
        move || Ok(plain.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = Router::new().route_service("/mcp", service);
    echo::serve(router, &args.listen).await
}
