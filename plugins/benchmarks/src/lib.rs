//! `benchmarks`: small tools that tests and benchmarks measure the host with.

use std::time::Duration;

use plugin_api::plugin;

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
    /// Return the text unchanged.
    #[tool(read_only, idempotent, open_world = false)]
    fn echo(
        /// The text to return.
        text: String,
    ) -> String {
        text
    }

    /// Add two numbers.
    #[tool(read_only, idempotent, open_world = false)]
    fn add(
        /// The first number.
        a: f64,
        /// The second number.
        b: f64,
    ) -> f64 {
        a + b
    }

    /// Wait this many milliseconds without holding a thread, then say so.
    #[tool(read_only, idempotent, open_world = false)]
    async fn sleep(
        /// How long to wait, in milliseconds.
        ms: u64,
    ) -> String {
        plugin_api::tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("slept {ms} ms")
    }

    /// Return a string of this many bytes.
    #[tool(read_only, idempotent, open_world = false)]
    fn blob(
        /// The length of the string, in bytes.
        bytes: usize,
    ) -> String {
        "x".repeat(bytes)
    }
}
