//! The plugin's own async runtime, and how a call's work becomes an `FfiFuture`.
//!
//! `plugin-api` is linked statically into every plugin library, so each library gets its own
//! runtime (built on first use). The host never shares its tokio with a plugin: it polls the
//! `FfiFuture` returned here, whose waker crosses the boundary through `async_ffi`.
//!
//! An async tool's future is polled in place, on the thread that polls the `FfiFuture` (a host
//! worker), with the plugin's runtime entered for the duration of each poll: the timers and IO
//! the tool creates register with the plugin's runtime, whose workers drive them and wake the
//! host through its waker; the host's tokio is never involved, and no thread is woken for a
//! call that does not wait. A synchronous tool runs on the plugin's blocking pool (it may block),
//! unless it opted in to run inline: then it runs on the polling thread during the first poll.
//!
//! Dropping the `FfiFuture` cancels the call: the tool's [`Context`] reports it at once (so the
//! tool can stop cleanly), an unfinished async tool is handed to the plugin's runtime to finish
//! there, and dropped if still running [`CANCEL_GRACE`] later. Panics in the work (in any poll)
//! are caught and come back as [`ErrorKind::Panicked`] errors.

use std::{
    future::Future,
    panic::{AssertUnwindSafe, catch_unwind},
    pin::Pin,
    sync::{Arc, OnceLock},
    task::{Poll, ready},
    time::Duration,
};

use abi_stable::std_types::RResult;
use async_ffi::{FfiFuture, FutureExt};
use tokio::{
    runtime::Runtime,
    task::{JoinError, JoinHandle},
};
use tokio_util::sync::CancellationToken;

use crate::{
    context::Context,
    error::{ErrorKind, FfiError, ToolError, panic_message},
    ffi::FfiOutput,
};

/// The most blocking threads one plugin's synchronous tools may occupy at once.
const MAX_BLOCKING_THREADS: usize = 64;

/// This plugin's runtime: two worker threads (they drive the timers and IO of async tools, run
/// tasks the tools spawn and finish cancelled calls), a bounded pool for sync tools.
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

/// A tool's work as [`in_place`] polls it.
pub(crate) type Work = Pin<Box<dyn Future<Output = Result<FfiOutput, ToolError>> + Send>>;

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
        work()
    });
    finish(tool, cancel, handle)
}

/// Runs an asynchronous tool by polling it in place (see the module's documentation), with
/// `context` as [`Context::current`] during each poll; dropped unfinished, it is cancelled and
/// has [`CANCEL_GRACE`] to finish on the plugin's runtime before it is dropped.
pub(crate) fn in_place(tool: Arc<str>, context: Context, work: Work) -> CallFuture {
    InPlace {
        tool,
        context,
        work: Some(work),
        on_drop: OnDrop::HandOff,
    }
    .into_ffi()
}

/// Runs a quick synchronous tool on the thread that polls the call, during its first poll, with
/// `context` as the thread's [`Context::current`]. Dropped before it was polled, it never runs.
pub(crate) fn inline<F>(tool: Arc<str>, context: Context, work: F) -> CallFuture
where
    F: FnOnce() -> Result<FfiOutput, ToolError> + Send + 'static,
{
    InPlace {
        tool,
        context,
        work: Some(Box::pin(async move { work() })),
        on_drop: OnDrop::Drop,
    }
    .into_ffi()
}

/// What dropping an unfinished [`InPlace`] does with its work.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnDrop {
    /// Hand it to the plugin's runtime to finish within [`CANCEL_GRACE`].
    HandOff,
    /// Drop it (an inline tool not yet run, or work already handed off).
    Drop,
}

/// A call's work, polled by whoever polls this: each poll with the plugin's runtime entered,
/// the call's context current and panics caught.
struct InPlace {
    tool: Arc<str>,
    context: Context,
    /// `None` once finished.
    work: Option<Work>,
    on_drop: OnDrop,
}

impl InPlace {
    /// Runs `f` with the plugin's runtime entered and `context` current.
    fn entered<R>(context: &Context, f: impl FnOnce() -> R) -> R {
        let _runtime = runtime().enter();
        let _context = context.clone().enter();
        f()
    }

    /// Drops the work (which may panic) in its call's surroundings.
    fn drop_work(&mut self) {
        if let Some(work) = self.work.take() {
            let _ = catch_unwind(AssertUnwindSafe(|| {
                Self::entered(&self.context, || drop(work))
            }));
        }
    }
}

// Nothing in it relies on being pinned: the work is boxed.
impl Unpin for InPlace {}

impl Future for InPlace {
    type Output = RResult<FfiOutput, FfiError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(work) = this.work.as_mut() else {
            return Poll::Ready(RResult::RErr(FfiError::new(
                ErrorKind::Tool,
                format!("tool {} was polled after it answered", this.tool),
            )));
        };
        let polled = Self::entered(&this.context, || {
            catch_unwind(AssertUnwindSafe(|| work.as_mut().poll(cx)))
        });
        let outcome = match polled {
            Ok(outcome) => ready!(outcome).map_err(FfiError::from),
            Err(payload) => Err(FfiError::new(
                ErrorKind::Panicked,
                format!("tool {} panicked: {}", this.tool, panic_message(&*payload)),
            )),
        };
        this.drop_work();
        // The call has ended: what it left running with a clone of the context sees it.
        this.context.cancellation().cancel();
        Poll::Ready(RResult::from(outcome))
    }
}

impl Drop for InPlace {
    fn drop(&mut self) {
        self.context.cancellation().cancel();
        if self.work.is_none() {
            return;
        }
        if self.on_drop == OnDrop::Drop {
            self.drop_work();
            return;
        }
        let rest = Self {
            tool: Arc::clone(&self.tool),
            context: self.context.clone(),
            work: self.work.take(),
            on_drop: OnDrop::Drop,
        };
        runtime().spawn(async move {
            tokio::select! {
                _ = rest => {}
                () = tokio::time::sleep(CANCEL_GRACE) => {}
            }
        });
    }
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
    handle: JoinHandle<Result<FfiOutput, ToolError>>,
) -> CallFuture {
    let guard = CancelOnDrop(cancel);
    async move {
        let _guard = guard;
        let outcome = handle.await;
        RResult::from(joined(&format_args!("tool {tool}"), outcome))
    }
    .into_ffi()
}

/// What a task of the plugin's runtime answered, `subject` (`tool t`, `resource u`, ...) naming
/// it in the error for a panic or a cancellation.
pub(crate) fn joined<T>(
    subject: &dyn std::fmt::Display,
    joined: Result<Result<T, ToolError>, JoinError>,
) -> Result<T, FfiError> {
    match joined {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(error)) => Err(FfiError::from(error)),
        Err(join) if join.is_panic() => Err(FfiError::new(
            ErrorKind::Panicked,
            format!("{subject} panicked: {}", panic_message(&*join.into_panic())),
        )),
        Err(_) => Err(FfiError::new(
            ErrorKind::Cancelled,
            format!("{subject} was cancelled"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::mpsc,
        time::{Duration, Instant},
    };

    use super::*;
    use crate::{result::IntoToolOutput, testing::wait};

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
        let call = in_place(
            "t".into(),
            context,
            Box::pin(async move {
                let context = Context::current().expect("the task's context");
                context.cancelled().await;
                seen.send(Instant::now()).unwrap();
                done()
            }),
        );
        std::thread::sleep(Duration::from_millis(20));
        let dropped = Instant::now();
        drop(call);
        let noticed = saw.recv_timeout(Duration::from_secs(1)).unwrap();
        assert!(noticed.duration_since(dropped) < Duration::from_millis(500));
    }

    #[test]
    fn an_async_call_that_ignores_cancellation_is_dropped_after_the_grace() {
        let (sender, dropped_at) = mpsc::channel();
        let call = in_place(
            "t".into(),
            Context::detached(),
            Box::pin(async move {
                let _flag = Dropped(sender);
                tokio::time::sleep(Duration::from_secs(60)).await;
                done()
            }),
        );
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
    fn an_async_call_is_polled_on_the_callers_thread_with_the_plugins_timers() {
        let caller = std::thread::current().id();
        let call = in_place(
            "t".into(),
            Context::detached().with_logger("mine"),
            Box::pin(async move {
                assert_eq!(std::thread::current().id(), caller);
                assert!(Context::current().is_some());
                tokio::time::sleep(Duration::from_millis(5)).await;
                assert_eq!(std::thread::current().id(), caller);
                assert!(Context::current().is_some());
                done()
            }),
        );
        let output = wait(call).unwrap();
        assert_eq!(output.json.as_str(), r#""done""#);
        assert!(
            Context::current().is_none(),
            "the context outlived the poll"
        );
    }

    #[test]
    fn a_panic_in_any_poll_is_an_error_naming_the_tool() {
        let call = in_place(
            "t".into(),
            Context::detached(),
            Box::pin(async move {
                tokio::task::yield_now().await;
                panic!("second poll");
            }),
        );
        let error = wait(call).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Panicked);
        assert_eq!(error.message.as_str(), "tool t panicked: second poll");
    }

    #[test]
    fn a_call_dropped_while_waiting_is_cancelled_and_finishes_on_the_plugins_runtime() {
        let (seen, saw) = mpsc::channel();
        let mut call = in_place(
            "t".into(),
            Context::detached(),
            Box::pin(async move {
                let context = Context::current().expect("the call's context");
                context.cancelled().await;
                let context = Context::current().expect("the call's context, handed off");
                seen.send(context.is_cancelled()).unwrap();
                done()
            }),
        );
        let waker = std::task::Waker::noop();
        let polled = Pin::new(&mut call).poll(&mut std::task::Context::from_waker(waker));
        assert!(polled.is_pending());
        drop(call);
        assert!(saw.recv_timeout(Duration::from_secs(1)).unwrap());
    }

    #[test]
    fn an_inline_call_runs_on_the_callers_thread_and_survives_a_panic() {
        let caller = std::thread::current().id();
        let call = inline("t".into(), Context::detached(), move || {
            assert_eq!(std::thread::current().id(), caller);
            assert!(Context::current().is_some());
            done()
        });
        assert_eq!(wait(call).unwrap().json.as_str(), r#""done""#);
        let error = wait(inline("t".into(), Context::detached(), || panic!("boom"))).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Panicked);
        assert_eq!(error.message.as_str(), "tool t panicked: boom");
        assert!(Context::current().is_none());
        let again = inline("t".into(), Context::detached(), done);
        assert_eq!(wait(again).unwrap().json.as_str(), r#""done""#);
    }

    #[test]
    fn an_inline_call_dropped_unpolled_never_runs() {
        let (ran, saw) = mpsc::channel();
        drop(inline("t".into(), Context::detached(), move || {
            ran.send(()).unwrap();
            done()
        }));
        assert!(saw.recv_timeout(Duration::from_millis(100)).is_err());
    }

    #[test]
    fn a_finished_call_answers_its_output() {
        let output = runtime()
            .block_on(in_place(
                "t".into(),
                Context::detached(),
                Box::pin(async { done() }),
            ))
            .unwrap();
        assert_eq!(output.json.as_str(), r#""done""#);
    }
}
