//! An axum application of its own, with the MCP server nested in it: `GET /` is the
//! application's, and the plugins' tools are served at `/tools/mcp` (with `/tools/toolsets`,
//! `/tools/contributions` and `/tools/healthz` beside it).
//!
//! ```sh
//! cargo xtask build-plugins
//! cargo run -p reactor-mcp-server --example embed -- plugins 127.0.0.1:8080
//! ```
//!
//! Arguments: the plugin folder (`plugins`) and the address to bind (`127.0.0.1:8080`; port 0
//! picks a free one). It prints `listening on http://ADDRESS` once bound, and stops on Ctrl-C
//! or SIGTERM, draining the calls in flight first.

use axum::{Router, routing::get};
use reactor_mcp_server::Server;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let mut args = std::env::args().skip(1);
    let plugin_dir = args.next().unwrap_or_else(|| "plugins".to_owned());
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8080".to_owned());

    let server = Server::builder().plugin_dir(plugin_dir).build().await?;
    let shutdown = server.shutdown_handle();
    let app = Router::new()
        .route(
            "/",
            get(|| async { "my application; its tools are at /tools/mcp\n" }),
        )
        .nest_service("/tools", server.service());

    let listener = tokio::net::TcpListener::bind(&address).await?;
    eprintln!("listening on http://{}", listener.local_addr()?);
    // Nagle's algorithm meeting a client's delayed ACK would stall every streamed answer.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            stop_signal().await;
            shutdown.shutdown().await;
        })
        .await?;
    Ok(())
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("SIGTERM can be listened for");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
