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
//! The blocking pool is bounded: at most [`sync_call_limit`] synchronous calls (tools, and
//! resource, prompt and completion methods) run at once, [`THREADS_ENV`] setting it. A call that
//! finds them all running is not queued behind them: it answers at once that the plugin is busy,
//! so calls that hang cannot make every other call of the plugin wait for minutes. Inline and
//! async tools never touch the pool and are never refused.
//!
//! Dropping the `FfiFuture` cancels the call: the tool's [`Context`] reports it at once (so the
//! tool can stop cleanly), an unfinished async tool is handed to the plugin's runtime to finish
//! there, and dropped if still running [`CANCEL_GRACE`] later. Panics in the work (in any poll)
//! are caught and come back as [`ErrorKind::Panicked`] errors.

use std::{
    future::Future,
    panic::{AssertUnwindSafe, catch_unwind},
    pin::Pin,
    sync::{
        Arc, Mutex, OnceLock, PoisonError, RwLock,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    task::{Poll, ready},
    time::Duration,
};

use abi_stable::std_types::RResult;
use async_ffi::{FfiFuture, FutureExt};
use tokio::{
    runtime::{Handle, Runtime},
    task::{JoinError, JoinHandle},
};
use tokio_util::sync::CancellationToken;

use crate::{
    context::Context,
    error::{ErrorKind, FfiError, ToolError, panic_message},
    ffi::FfiOutput,
};

/// The environment variable (of the host's process) that sets how many synchronous calls one
/// plugin runs at once: a positive integer; unset or anything else means [`DEFAULT_THREADS`].
pub const THREADS_ENV: &str = "REACTOR_MCP_PLUGIN_THREADS";

/// How many synchronous calls one plugin runs at once unless [`THREADS_ENV`] says otherwise.
pub const DEFAULT_THREADS: usize = 64;

/// Blocking threads the pool has beyond [`sync_call_limit`], for blocking work the plugin's own
/// code starts (`tokio::task::spawn_blocking`, `tokio::fs`), which is not counted.
const SPARE_BLOCKING_THREADS: usize = 16;

/// How many synchronous calls this plugin runs at once ([`THREADS_ENV`], read once); a call
/// beyond them answers that the plugin is busy.
pub fn sync_call_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var(THREADS_ENV)
            .ok()
            .and_then(|value| value.trim().parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_THREADS)
    })
}

/// The name of the runtime's threads.
pub const THREAD_NAME: &str = "reactor-plugin";

/// The runtime while it runs: built on first use, shut down when the last live instance of the
/// plugin retires ([`leave`]).
static RUNNING: RwLock<Option<Runtime>> = RwLock::new(None);

/// How many instances of the plugin are live: instantiated ([`join`]) and not yet retired.
static LIVE: Mutex<usize> = Mutex::new(0);

/// Whether the last live instance retired the runtime and none joined since: work handed over
/// then is dropped, not run on a runtime built anew.
static RETIRED: AtomicBool = AtomicBool::new(false);

/// A handle to this plugin's runtime: two worker threads (they drive the timers and IO of
/// async tools, run tasks the tools spawn and finish cancelled calls), a bounded pool for sync
/// tools. Its threads are named [`THREAD_NAME`].
///
/// A tool may use it to spawn background work that outlives a call, until the host stops the
/// plugin for good (hot reload replaced or removed its library): the runtime is shut down then,
/// what runs on it is dropped, and its threads and descriptors are released once no handle to
/// it is left, so keep none beyond the plugin's life.
pub fn runtime() -> Handle {
    if let Some(running) = read(&RUNNING).as_ref() {
        return running.handle().clone();
    }
    RUNNING
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(build)
        .handle()
        .clone()
}

/// The runtime's handle (built on first use); `None` once the plugin retired it.
fn running() -> Option<Handle> {
    (!RETIRED.load(Ordering::Acquire)).then(runtime)
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn build() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(sync_call_limit() + SPARE_BLOCKING_THREADS)
        .thread_name(THREAD_NAME)
        .enable_all()
        .build()
        .expect("the plugin's tokio runtime could not be built")
}

/// Counts one more live instance of the plugin.
pub(crate) fn join() {
    *LIVE.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    RETIRED.store(false, Ordering::Release);
}

/// Counts one live instance fewer; the last one shuts the runtime down, without waiting for what
/// runs on it (the host will never call this library again): its threads end, work spawned from
/// then on is dropped unrun, and its IO driver is closed with the last handle. Instances of one
/// library in one process (test plugins) so never retire the runtime under each other.
pub(crate) fn leave() {
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    *live = live.saturating_sub(1);
    if *live > 0 {
        return;
    }
    let runtime = RUNNING
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    RETIRED.store(true, Ordering::Release);
    drop(live);
    if let Some(runtime) = runtime {
        runtime.shutdown_background();
    }
}

/// The future the host awaits for one call.
pub(crate) type CallFuture = FfiFuture<RResult<FfiOutput, FfiError>>;

/// A tool's work as [`in_place`] polls it.
pub(crate) type Work = Pin<Box<dyn Future<Output = Result<FfiOutput, ToolError>> + Send>>;

/// How long a cancelled call's work may run on, after its [`Context`] reported the
/// cancellation, before it is aborted.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// The name the busy error gives this library's plugin; set when it is instantiated.
static PLUGIN: OnceLock<&'static str> = OnceLock::new();

/// Names the plugin in the busy error: the first plugin instantiated in this library (a real
/// library has one; a test process building several shares one runtime, and so one pool).
pub(crate) fn name_plugin(name: &'static str) {
    let _ = PLUGIN.set(name);
}

/// The name of the first plugin instantiated in this library, once one is.
pub(crate) fn plugin_name() -> Option<&'static str> {
    PLUGIN.get().copied()
}

/// Counts the synchronous calls running on the blocking pool against a limit.
pub(crate) struct Slots {
    running: AtomicUsize,
    limit: usize,
}

impl Slots {
    pub(crate) const fn new(limit: usize) -> Self {
        Self {
            running: AtomicUsize::new(0),
            limit,
        }
    }

    /// This library's: [`sync_call_limit`] of them.
    fn plugins() -> &'static Self {
        static SLOTS: OnceLock<Slots> = OnceLock::new();
        SLOTS.get_or_init(|| Self::new(sync_call_limit()))
    }

    /// One slot, held until the [`Slot`] is dropped; the busy error when all are taken.
    fn take(&'static self) -> Result<Slot, FfiError> {
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
                (running < self.limit).then_some(running + 1)
            })
            .map(|_| Slot(self))
            .map_err(|_| self.busy())
    }

    /// The error a call gets when every slot is taken.
    fn busy(&self) -> FfiError {
        let plugin = match PLUGIN.get() {
            Some(name) if !name.is_empty() => format!("plugin `{name}`"),
            _ => "this plugin".to_owned(),
        };
        let calls = if self.limit == 1 { "call" } else { "calls" };
        FfiError::new(
            ErrorKind::Tool,
            format!(
                "{plugin} is busy: {} {calls} running, try again later",
                self.limit
            ),
        )
    }

    /// Runs `work` on the plugin's blocking pool if a slot is free, holding it until `work`
    /// returns; the busy error at once otherwise.
    pub(crate) fn spawn<T: Send + 'static>(
        &'static self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<JoinHandle<T>, FfiError> {
        let slot = self.take()?;
        Ok(runtime().spawn_blocking(move || {
            let _slot = slot;
            work()
        }))
    }
}

/// A running synchronous call's place in its [`Slots`].
struct Slot(&'static Slots);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `work` on the plugin's blocking pool if fewer than [`sync_call_limit`] synchronous
/// calls are running; the busy error at once otherwise.
pub(crate) fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, FfiError> {
    Slots::plugins().spawn(work)
}

/// Runs a synchronous tool on the plugin's blocking pool, with `context` as the thread's
/// [`Context::current`]; answers at once that the plugin is busy when [`sync_call_limit`]
/// calls are running. A blocking task cannot be aborted: it sees cancellation through
/// [`Context::is_cancelled`].
pub(crate) fn spawn_blocking<F>(tool: Arc<str>, context: Context, work: F) -> CallFuture
where
    F: FnOnce() -> Result<FfiOutput, ToolError> + Send + 'static,
{
    spawn_blocking_in(Slots::plugins(), tool, context, work)
}

/// [`spawn_blocking`] counted in `slots`.
fn spawn_blocking_in<F>(
    slots: &'static Slots,
    tool: Arc<str>,
    context: Context,
    work: F,
) -> CallFuture
where
    F: FnOnce() -> Result<FfiOutput, ToolError> + Send + 'static,
{
    let cancel = context.cancellation().clone();
    let spawned = slots.spawn(move || {
        let _entered = context.enter();
        work()
    });
    match spawned {
        Ok(handle) => finish(tool, cancel, handle),
        Err(busy) => {
            cancel.cancel();
            async move { RResult::RErr(busy) }.into_ffi()
        }
    }
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

/// `future`, with `context` as [`Context::current`] on the thread during each of its polls.
pub(crate) fn within<F: Future>(context: Context, future: F) -> impl Future<Output = F::Output> {
    let mut future = Box::pin(future);
    std::future::poll_fn(move |cx| {
        let _entered = context.clone().enter();
        future.as_mut().poll(cx)
    })
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
        let handle = runtime();
        let _runtime = handle.enter();
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
        let Some(runtime) = running() else {
            // Retired: nothing would run it.
            self.drop_work();
            return;
        };
        let rest = Self {
            tool: Arc::clone(&self.tool),
            context: self.context.clone(),
            work: self.work.take(),
            on_drop: OnDrop::Drop,
        };
        runtime.spawn(async move {
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
    fn a_sync_call_beyond_the_limit_is_busy_at_once_and_one_after_works() {
        let slots: &'static Slots = Box::leak(Box::new(Slots::new(2)));
        let (release, hold) = mpsc::channel::<()>();
        let hold = Arc::new(std::sync::Mutex::new(hold));
        let hanging: Vec<CallFuture> = (0..2)
            .map(|_| {
                let hold = Arc::clone(&hold);
                spawn_blocking_in(slots, "t".into(), Context::detached(), move || {
                    hold.lock().unwrap().recv().unwrap();
                    done()
                })
            })
            .collect();

        let asked = Instant::now();
        let busy = wait(spawn_blocking_in(
            slots,
            "t".into(),
            Context::detached(),
            done,
        ))
        .unwrap_err();
        assert!(asked.elapsed() < Duration::from_millis(500));
        assert_eq!(busy.kind, ErrorKind::Tool);
        assert!(
            busy.message
                .ends_with("is busy: 2 calls running, try again later"),
            "{}",
            busy.message
        );
        // Inline and async calls do not use the pool.
        assert!(wait(inline("t".into(), Context::detached(), done)).is_ok());
        let polled = in_place("t".into(), Context::detached(), Box::pin(async { done() }));
        assert!(wait(polled).is_ok());

        for _ in &hanging {
            release.send(()).unwrap();
        }
        for call in hanging {
            assert!(wait(call).is_ok());
        }
        let after = spawn_blocking_in(slots, "t".into(), Context::detached(), done);
        assert_eq!(wait(after).unwrap().json.as_str(), r#""done""#);
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
