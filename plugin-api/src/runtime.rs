//! The plugin's own async runtime, and how a call's work becomes an `FfiFuture`.
//!
//! `plugin-api` is linked statically into every plugin library, so each library gets its own
//! runtime (built on first use). The host never shares its tokio with a plugin: it polls the
//! `FfiFuture` returned here, whose waker crosses the boundary through `async_ffi`. Dropping that
//! future aborts the task, so a cancelled request stops the plugin's work too. Panics in the work
//! are caught by the runtime and come back as [`ErrorKind::Panicked`] errors.

use std::{
    future::Future,
    sync::{Arc, OnceLock},
};

use abi_stable::std_types::{RResult, RString};
use async_ffi::{FfiFuture, FutureExt};
use tokio::{runtime::Runtime, task::JoinHandle};

use crate::error::{ErrorKind, FfiError, ToolError, panic_message};

/// The most blocking threads one plugin's synchronous tools may occupy at once.
const MAX_BLOCKING_THREADS: usize = 64;

/// This plugin's runtime: two worker threads for async tools, a bounded pool for sync ones.
///
/// A tool may use it to spawn background work that outlives a call.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(MAX_BLOCKING_THREADS)
            .thread_name("reactor-plugin")
            .enable_all()
            .build()
            .expect("the plugin's tokio runtime could not be built")
    })
}

/// The future the host awaits for one call.
pub(crate) type CallFuture = FfiFuture<RResult<RString, FfiError>>;

/// Runs a synchronous tool on the plugin's blocking pool.
pub(crate) fn spawn_blocking<F>(tool: Arc<str>, work: F) -> CallFuture
where
    F: FnOnce() -> Result<String, ToolError> + Send + 'static,
{
    finish(tool, runtime().spawn_blocking(work))
}

/// Runs an asynchronous tool on the plugin's workers.
pub(crate) fn spawn<F>(tool: Arc<str>, work: F) -> CallFuture
where
    F: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    finish(tool, runtime().spawn(work))
}

/// Aborts the task when the host stops waiting for it.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn finish(tool: Arc<str>, handle: JoinHandle<Result<String, ToolError>>) -> CallFuture {
    let mut guard = AbortOnDrop(handle);
    async move {
        let outcome = match (&mut guard.0).await {
            Ok(Ok(json)) => Ok(RString::from(json)),
            Ok(Err(error)) => Err(FfiError::from(error)),
            Err(join) if join.is_panic() => Err(FfiError::new(
                ErrorKind::Panicked,
                format!(
                    "tool {tool} panicked: {}",
                    panic_message(&*join.into_panic())
                ),
            )),
            Err(_) => Err(FfiError::new(
                ErrorKind::Cancelled,
                format!("tool {tool} was cancelled"),
            )),
        };
        RResult::from(outcome)
    }
    .into_ffi()
}
