//! MCP over stdin and stdout, for clients that start the server as a command (Claude Desktop,
//! Cursor, VS Code, Zed).
//!
//! [`protect_stdout`] runs first, before any plugin is opened: it keeps a private duplicate of
//! fd 1 for the protocol and points fd 1 at stderr, so whatever a plugin prints (`println!`,
//! C's `printf`) lands in the log, never in the stream. [`run`] then serves one session on stdin
//! and that duplicate, with the same plugins, lazy opening and extensions as over HTTP; the
//! selection is `--toolsets` (there is no URL). It ends when the client closes stdin or on
//! SIGTERM / Ctrl-C, and then every opened plugin is told to stop.
//!
//! When stdin and stdout are pipes, as a client (or the host, for an isolated plugin's child)
//! makes them, they are read and written through the reactor ([`streams`]); a terminal or a
//! file goes through tokio's blocking pool, a thread hop per read and per write. Every line is
//! answered, a malformed or over-long one with an error ([`transport`]).

use std::{fs::File, sync::Arc};

use rmcp::{ServiceExt as _, service::ServerInitializeError};
use tokio::io::{AsyncRead, AsyncWrite};

mod transport;

use crate::serve::{
    MAX_REQUEST_BODY_BYTES, Options, ServeError,
    lifecycle::shutdown_signal,
    mcp::{Handler, direct::Direct},
};
use crate::{registry::Registry, reload::Source};

/// Keeps a private duplicate of fd 1 for the protocol and points fd 1 at stderr; returns the
/// duplicate. Call it before any plugin is opened.
///
/// # Errors
///
/// If the descriptors cannot be duplicated.
#[cfg(unix)]
pub(crate) fn protect_stdout() -> std::io::Result<File> {
    use std::os::fd::AsFd as _;
    let protocol = std::io::stdout().as_fd().try_clone_to_owned()?;
    rustix::stdio::dup2_stdout(std::io::stderr().as_fd())?;
    Ok(File::from(protocol))
}

/// Elsewhere than Unix, the protocol goes to stdout as it is, and what plugins print goes there
/// too.
///
/// # Errors
///
/// If the handle cannot be duplicated.
#[cfg(windows)]
pub(crate) fn protect_stdout() -> std::io::Result<File> {
    use std::os::windows::io::AsHandle as _;
    Ok(File::from(
        std::io::stdout().as_handle().try_clone_to_owned()?,
    ))
}

/// The protocol's input and output: stdin and `protocol_out`.
type Streams = (
    Box<dyn AsyncRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
);

/// Stdin and `protocol_out` as non-blocking pipes driven by the reactor, each that is a pipe;
/// otherwise through tokio's blocking pool.
#[cfg(unix)]
fn streams(protocol_out: File) -> Streams {
    use std::os::fd::AsFd as _;
    use tokio::net::unix::pipe;
    let reader: Box<dyn AsyncRead + Send + Unpin> = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|stdin| pipe::Receiver::from_file(File::from(stdin)))
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let writer: Box<dyn AsyncWrite + Send + Unpin> =
        match protocol_out.try_clone().and_then(pipe::Sender::from_file) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::fs::File::from_std(protocol_out)),
        };
    (reader, writer)
}

/// Stdin and `protocol_out` through tokio's blocking pool.
#[cfg(windows)]
fn streams(protocol_out: File) -> Streams {
    (
        Box::new(tokio::io::stdin()),
        Box::new(tokio::fs::File::from_std(protocol_out)),
    )
}

/// Serves `registry`'s plugins over stdin and `protocol_out` (from [`protect_stdout`]) until
/// stdin ends or a shutdown signal comes; with a `source`, a new generation each time its
/// plugins change.
///
/// # Errors
///
/// If the client's `initialize` fails, or the plugins cannot be started.
pub(crate) async fn run(
    registry: Arc<Registry>,
    options: Options,
    protocol_out: File,
    source: Option<Source>,
) -> Result<(), ServeError> {
    let (state, _reloading) = crate::serve::lifecycle::start(registry, &options, source).await?;
    let (input, output) = streams(protocol_out);
    let transport = transport::LineTransport::new(input, output, MAX_REQUEST_BODY_BYTES);
    let direct = transport.direct();
    tracing::info!("serving MCP on stdin and stdout");
    let served = async {
        let handler = Handler::new(Arc::clone(&state));
        let service = match handler.clone().serve(transport).await {
            Ok(service) => service,
            Err(ServerInitializeError::ConnectionClosed(_)) => {
                tracing::info!("stdin ended before the client initialized");
                return Ok(());
            }
            Err(error) => {
                return Err(ServeError::Initialize(Box::new(error)));
            }
        };
        if state.for_parent {
            plugin_logs_to_parent(service.peer().clone());
        }
        if options.hot_path {
            let peer = service.peer().clone();
            let _ = direct.set(Direct { handler, peer });
        }
        let ended = service.waiting().await;
        tracing::info!("the client closed the session ({ended:?})");
        Ok::<(), ServeError>(())
    };
    let outcome = tokio::select! {
        outcome = served => outcome,
        () = shutdown_signal() => {
            tracing::info!("shutting down");
            Ok(())
        }
    };
    crate::serve::lifecycle::stop(state.generation().builder()).await;
    outcome
}

/// In an isolated plugin's child: its plugin's log events from outside any call go to the parent
/// (`peer`) as [`PLUGIN_LOG_METHOD`](crate::call::wire::PLUGIN_LOG_METHOD) notifications.
fn plugin_logs_to_parent(peer: rmcp::service::Peer<rmcp::RoleServer>) {
    use rmcp::model::{CustomNotification, ServerNotification};
    let runtime = tokio::runtime::Handle::current();
    crate::observe::plugin_logs::to_parent(Box::new(move |event| {
        let params = crate::call::wire::plugin_log_params(&event, None);
        let notification =
            CustomNotification::new(crate::call::wire::PLUGIN_LOG_METHOD, Some(params));
        let peer = peer.clone();
        runtime.spawn(async move {
            let _ = peer
                .send_notification(ServerNotification::CustomNotification(notification))
                .await;
        });
    }));
}
