//! `benchmarks`: small tools that tests and benchmarks measure the host with.
//!
//! Each tool bounds what a request can make it spend, and its input schema says so (`maximum`),
//! so the host refuses an argument out of bounds before the plugin sees it: `blob` answers at
//! most [`MAX_BLOB_BYTES`], `sleep` waits at most [`MAX_SLEEP_MS`]. The tools check the bounds
//! themselves too, for callers that skip the host's check (a test, an extension with its own
//! schema).

use std::time::Duration;

use plugin_api::{Context, ToolError, plugin};

/// The longest string `blob` returns: 16 MiB, four times the host's bound on a request body.
/// One call then costs the host a few tens of MiB at most (the string, its JSON, the frame),
/// which it survives; a size the allocator cannot serve would abort the whole process.
pub const MAX_BLOB_BYTES: usize = 16 * 1024 * 1024;

/// The longest `sleep`, in milliseconds: one hour, more than any timeout a test or a client
/// waits out, and a sleeping call holds no thread.
pub const MAX_SLEEP_MS: u64 = 60 * 60 * 1000;

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

    // A whole sum is answered as an integer: 2 + 3 is 5, not 5.0.
    /// Add two numbers.
    #[tool(inline, read_only, idempotent, open_world = false)]
    fn add(
        /// The first number.
        a: f64,
        /// The second number.
        b: f64,
    ) -> Result<plugin_api::Number, ToolError> {
        sum(a, b)
    }

    /// Wait this many milliseconds (at most one hour) without holding a thread, then say so.
    /// Stops at once when the client cancels.
    #[tool(read_only, idempotent, open_world = false)]
    async fn sleep(
        /// How long to wait, in milliseconds (at most 3600000, one hour).
        #[schemars(range(max = MAX_SLEEP_MS))]
        ms: u64,
        ctx: Context,
    ) -> Result<String, ToolError> {
        within("ms", ms, MAX_SLEEP_MS)?;
        let started = std::time::Instant::now();
        plugin_api::tokio::select! {
            () = plugin_api::tokio::time::sleep(Duration::from_millis(ms)) => Ok(format!("slept {ms} ms")),
            () = ctx.cancelled() => Err(ToolError::new(format!(
                "cancelled after {} of {ms} ms",
                started.elapsed().as_millis()
            ))),
        }
    }

    /// Return a string of this many bytes (at most 16 MiB).
    #[tool(inline, read_only, idempotent, open_world = false)]
    fn blob(
        /// The length of the string, in bytes (at most 16777216, 16 MiB).
        #[schemars(range(max = MAX_BLOB_BYTES))]
        bytes: usize,
    ) -> Result<String, ToolError> {
        within("bytes", bytes, MAX_BLOB_BYTES)?;
        Ok("x".repeat(bytes))
    }
}

/// `a + b`, as an integer when it is a whole number an `f64` holds exactly (at most 2^53), so
/// that 2 + 3 answers `5` and 0.5 + 1 answers `1.5`.
fn sum(a: f64, b: f64) -> Result<plugin_api::Number, ToolError> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let sum = a + b;
    if sum.fract() == 0.0 && sum.abs() <= EXACT {
        return Ok(plugin_api::Number::from(sum as i64));
    }
    plugin_api::Number::from_f64(sum)
        .ok_or_else(|| ToolError::new(format!("{a} + {b} is too large for a number")))
}

/// An invalid-arguments error naming `argument` when `value` is above `max`.
fn within<T: PartialOrd + std::fmt::Display>(
    argument: &str,
    value: T,
    max: T,
) -> Result<(), ToolError> {
    if value > max {
        return Err(ToolError::invalid_arguments(format!(
            "argument `{argument}`: {value} is greater than the maximum of {max}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use plugin_api::{json, testing::PluginTest};

    use super::*;

    #[test]
    fn the_schemas_say_the_bounds() {
        let benchmarks = PluginTest::new::<Benchmarks>();
        let schema = |tool: &str| benchmarks.tool(tool).unwrap().input_schema.clone().unwrap();
        assert_eq!(
            schema("blob")["properties"]["bytes"]["maximum"],
            json!(MAX_BLOB_BYTES)
        );
        assert_eq!(
            schema("sleep")["properties"]["ms"]["maximum"],
            json!(MAX_SLEEP_MS)
        );
    }

    #[test]
    fn a_whole_sum_is_an_integer() {
        let benchmarks = PluginTest::new::<Benchmarks>();
        assert_eq!(benchmarks.call("add", json!({"a": 2, "b": 3})).text(), "5");
        assert_eq!(
            benchmarks.call("add", json!({"a": 0.5, "b": 1})).text(),
            "1.5"
        );
        assert_eq!(
            benchmarks.call("add", json!({"a": -2.5, "b": 0.5})).text(),
            "-2"
        );
    }

    #[test]
    fn arguments_over_the_bounds_are_refused_naming_them() {
        let benchmarks = PluginTest::new::<Benchmarks>();
        let blob = benchmarks.call("blob", json!({"bytes": MAX_BLOB_BYTES + 1}));
        assert_eq!(
            blob.error().message(),
            "argument `bytes`: 16777217 is greater than the maximum of 16777216"
        );
        let sleep = benchmarks.call("sleep", json!({"ms": MAX_SLEEP_MS + 1}));
        assert!(sleep.error().message().starts_with("argument `ms`"));
        assert_eq!(benchmarks.call("blob", json!({"bytes": 3})).text(), "xxx");
    }
}
