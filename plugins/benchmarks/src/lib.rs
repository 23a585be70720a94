//! `benchmarks`: small tools that tests and benchmarks measure the host with.

use std::time::Duration;

use plugin_api::{Context, ToolError, plugin};

/// Tools for tests and benchmarks. Off by default; opened when a URL names `benchmarks`.
#[derive(Debug, Default)]
pub struct Benchmarks;

/// Tools that measure the host: each does as little as its name says.
#[plugin(
    on_toolset = "benchmarks",
    toolset(
        name = "benchmarks",
        title = "Benchmarks",
        description = "Tools for measuring the server: echo, add, sleep, blob",
        default = false,
    )
)]
impl Benchmarks {
    // `echo`, `add` and `blob` are `inline`: they return in microseconds and never block, and
    // they are what the throughput benchmark (BENCHMARKS.md, figure 1) measures, so they run on
    // the thread that polls the call, as a plugin's quick tools should, not on the blocking pool.

    /// Return the text unchanged.
    #[tool(inline, read_only, idempotent, open_world = false)]
    fn echo(
        /// The text to return.
        text: String,
    ) -> String {
        text
    }

    /// Add two numbers.
    #[tool(inline, read_only, idempotent, open_world = false)]
    fn add(
        /// The first number.
        a: f64,
        /// The second number.
        b: f64,
    ) -> f64 {
        a + b
    }

    /// Wait this many milliseconds without holding a thread, then say so. Stops at once when
    /// the client cancels.
    #[tool(read_only, idempotent, open_world = false)]
    async fn sleep(
        /// How long to wait, in milliseconds.
        ms: u64,
        ctx: Context,
    ) -> Result<String, ToolError> {
        let started = std::time::Instant::now();
        plugin_api::tokio::select! {
            () = plugin_api::tokio::time::sleep(Duration::from_millis(ms)) => Ok(format!("slept {ms} ms")),
            () = ctx.cancelled() => Err(ToolError::new(format!(
                "cancelled after {} of {ms} ms",
                started.elapsed().as_millis()
            ))),
        }
    }

    /// Return a string of this many bytes.
    #[tool(inline, read_only, idempotent, open_world = false)]
    fn blob(
        /// The length of the string, in bytes.
        bytes: usize,
    ) -> String {
        "x".repeat(bytes)
    }
}
