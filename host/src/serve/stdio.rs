//! MCP over stdin and stdout, for clients that start the server as a command (Claude Desktop,
//! Cursor, VS Code, Zed).
//!
//! [`protect_stdout`] runs first, before any plugin is opened: it keeps a private duplicate of
//! fd 1 for the protocol and points fd 1 at stderr, so whatever a plugin prints (`println!`,
//! C's `printf`) lands in the log, never in the stream. [`run`] then serves one session on stdin
//! and that duplicate, with the same plugins, lazy opening and extensions as over HTTP; the
//! selection is `--toolsets` (there is no URL). It ends when the client closes stdin or on
//! SIGTERM / Ctrl-C, and then every opened plugin is told to stop.

use std::{fs::File, sync::Arc};

use rmcp::{ServiceExt as _, service::ServerInitializeError};

use super::{Options, ServeError, handler::Handler, shutdown_signal};
use crate::{registry::Registry, reload::Source};

/// Keeps a private duplicate of fd 1 for the protocol and points fd 1 at stderr; returns the
/// duplicate. Call it before any plugin is opened.
///
/// # Errors
///
/// If the descriptors cannot be duplicated.
#[cfg(unix)]
pub fn protect_stdout() -> std::io::Result<File> {
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
pub fn protect_stdout() -> std::io::Result<File> {
    use std::os::windows::io::AsHandle as _;
    Ok(File::from(
        std::io::stdout().as_handle().try_clone_to_owned()?,
    ))
}

/// Serves `registry`'s plugins over stdin and `protocol_out` (from [`protect_stdout`]) until
/// stdin ends or a shutdown signal comes; with a `source`, a new generation each time its
/// plugins change.
///
/// # Errors
///
/// If the client's `initialize` fails, or the plugins cannot be started.
pub async fn run(
    registry: Arc<Registry>,
    options: Options,
    protocol_out: File,
    source: Option<Source>,
) -> Result<(), ServeError> {
    let (state, _reloading) = super::start(registry, &options, source).await?;
    let transport = (tokio::io::stdin(), tokio::fs::File::from_std(protocol_out));
    tracing::info!("serving MCP on stdin and stdout");
    let served = async {
        let service = match Handler::new(Arc::clone(&state)).serve(transport).await {
            Ok(service) => service,
            Err(ServerInitializeError::ConnectionClosed(_)) => {
                tracing::info!("stdin ended before the client initialized");
                return Ok(());
            }
            Err(error) => {
                return Err(ServeError::Io(std::io::Error::other(format!(
                    "the client's initialize failed: {error}"
                ))));
            }
        };
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
    super::stop(state.generation().builder()).await;
    outcome
}
