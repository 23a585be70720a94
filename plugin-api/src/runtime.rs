//! The plugin's own async runtime, and how a call's work becomes an `FfiFuture`.
//!
//! `plugin-api` is linked statically into every plugin library, so each library gets its own
//! runtime (built on first use). The host never shares its tokio with a plugin: it polls the
//! `FfiFuture` returned here, whose waker crosses the boundary through `async_ffi`. Dropping that
//! future cancels the call: the tool's [`Context`] reports it at once (so the tool can stop
//! cleanly), and an async tool still running [`CANCEL_GRACE`] later is dropped. Panics in the
//! work are caught by the runtime and come back as [`ErrorKind::Panicked`] errors.

use std::{
    future::Future,
    sync::{Arc, OnceLock},
    time::Duration,
};

use abi_stable::std_types::RResult;
use async_ffi::{FfiFuture, FutureExt};
use tokio::{runtime::Runtime, task::JoinHandle};
use tokio_util::sync::CancellationToken;

use crate::{
    context::Context,
    error::{ErrorKind, FfiError, ToolError, panic_message},
    ffi::FfiOutput,
};

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
pub(crate) type CallFuture = FfiFuture<RResult<FfiOutput, FfiError>>;

/// How long a cancelled call's work may run on, after its [`Context`] reported the
/// cancellation, before it is aborted.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Runs a synchronous tool on the plugin's blocking pool, with `context` as the thread's
/// [`Context::current`]. A blocking task cannot be aborted: it sees cancellation through
/// [`Context::is_cancelled`].
pub(crate) fn spawn_blocking<F>(tool: Arc<str>, context: Context, work: F) -> CallFuture
where
    F: FnOnce() -> Result<FfiOutput, ToolError> + Send + 'static,
{
    let cancel = context.cancellation().clone();
    let handle = runtime().spawn_blocking(move || {
        let _entered = context.enter();
        Some(work())
    });
    finish(tool, cancel, handle)
}

/// Runs an asynchronous tool on the plugin's workers, with `context` as the task's
/// [`Context::current`]; once cancelled, it has [`CANCEL_GRACE`] to finish before it is
/// dropped.
pub(crate) fn spawn<F>(tool: Arc<str>, context: Context, work: F) -> CallFuture
where
    F: Future<Output = Result<FfiOutput, ToolError>> + Send + 'static,
{
    let cancel = context.cancellation().clone();
    let grace = {
        let cancel = cancel.clone();
        async move {
            cancel.cancelled().await;
            tokio::time::sleep(CANCEL_GRACE).await;
        }
    };
    let handle = runtime().spawn(async move {
        tokio::select! {
            outcome = context.scope(work) => Some(outcome),
            () = grace => None,
        }
    });
    finish(tool, cancel, handle)
}

/// Cancels the call's token when the host stops waiting for it (or the call ends).
struct CancelOnDrop(CancellationToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

fn finish(
    tool: Arc<str>,
    cancel: CancellationToken,
    handle: JoinHandle<Option<Result<FfiOutput, ToolError>>>,
) -> CallFuture {
    let guard = CancelOnDrop(cancel);
    async move {
        let _guard = guard;
        let outcome = match handle.await {
            Ok(Some(Ok(output))) => Ok(output),
            Ok(Some(Err(error))) => Err(FfiError::from(error)),
            Err(join) if join.is_panic() => Err(FfiError::new(
                ErrorKind::Panicked,
                format!(
                    "tool {tool} panicked: {}",
                    panic_message(&*join.into_panic())
                ),
            )),
            Ok(None) | Err(_) => Err(FfiError::new(
                ErrorKind::Cancelled,
                format!("tool {tool} was cancelled"),
            )),
        };
        RResult::from(outcome)
    }
    .into_ffi()
}

#[cfg(test)]
mod tests {
    use std::{
        sync::mpsc,
        time::{Duration, Instant},
    };

    use super::*;
    use crate::result::IntoToolOutput;

    fn done() -> Result<FfiOutput, ToolError> {
        "done".into_output()
    }

    /// Sends when dropped.
    struct Dropped(mpsc::Sender<Instant>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            let _ = self.0.send(Instant::now());
        }
    }

    #[test]
    fn dropping_an_async_call_cancels_its_context_at_once() {
        let context = Context::detached();
        let (seen, saw) = mpsc::channel();
        let call = spawn("t".into(), context, async move {
            let context = Context::current().expect("the task's context");
            context.cancelled().await;
            seen.send(Instant::now()).unwrap();
            done()
        });
        std::thread::sleep(Duration::from_millis(20));
        let dropped = Instant::now();
        drop(call);
        let noticed = saw.recv_timeout(Duration::from_secs(1)).unwrap();
        assert!(noticed.duration_since(dropped) < Duration::from_millis(500));
    }

    #[test]
    fn an_async_call_that_ignores_cancellation_is_dropped_after_the_grace() {
        let (sender, dropped_at) = mpsc::channel();
        let call = spawn("t".into(), Context::detached(), async move {
            let _flag = Dropped(sender);
            tokio::time::sleep(Duration::from_secs(60)).await;
            done()
        });
        std::thread::sleep(Duration::from_millis(20));
        let cancelled = Instant::now();
        drop(call);
        let dropped = dropped_at.recv_timeout(CANCEL_GRACE * 3).unwrap();
        let after = dropped.duration_since(cancelled);
        assert!(
            after >= CANCEL_GRACE - Duration::from_millis(50),
            "{after:?}"
        );
        assert!(after < CANCEL_GRACE * 2, "{after:?}");
    }

    #[test]
    fn a_sync_call_sees_its_context_on_its_thread_and_the_cancellation() {
        let (seen, saw) = mpsc::channel();
        let call = spawn_blocking("t".into(), Context::detached(), move || {
            let context = Context::current().expect("the thread's context");
            while !context.is_cancelled() {
                std::thread::sleep(Duration::from_millis(1));
            }
            seen.send(()).unwrap();
            done()
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(call);
        saw.recv_timeout(Duration::from_secs(1)).unwrap();
    }

    #[test]
    fn a_sync_tool_can_block_on_async_work() {
        let output = runtime()
            .block_on(spawn_blocking("t".into(), Context::detached(), || {
                runtime().block_on(async { tokio::task::yield_now().await });
                done()
            }))
            .unwrap();
        assert_eq!(output.json.as_str(), r#""done""#);
    }

    #[test]
    fn a_finished_call_answers_its_output() {
        let output = runtime()
            .block_on(spawn("t".into(), Context::detached(), async { done() }))
            .unwrap();
        assert_eq!(output.json.as_str(), r#""done""#);
    }
}
