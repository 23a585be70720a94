//! The subjects of the ABI benchmark (figure 2): one `echo` call through the host's handler
//! table, the same function called directly, and the host's argument validation.
//!
//! [`Subjects::new`] opens the `benchmarks` plugin the way the host does
//! (`reactor_mcp_server::internals::build::activate` on a discovered library) and keeps its `echo`. Each method is one
//! iteration of a benchmark: `benches/abi.rs` hands them to criterion, and the quick mode times
//! them with a plain loop ([`time_per_call`]).
//!
//! The direct call does the JSON work the plugin layer does around `echo` (parse the argument
//! object, serialise the result, parse it as the host does), so the difference to the handler
//! table is the ABI crossing (and whatever the plugin does to run the tool: `echo` is `inline`,
//! so it runs on the calling thread), not JSON.

use std::{
    hint::black_box,
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use reactor_mcp_server::internals::{
    build::{LoadedPlugin, LoadedTool, activate},
    discovery::{self, DiscoveredPlugin},
    serve::ArgumentValidator,
};
use serde_json::{Value, json};

use crate::echo::{EchoArgs, echo};

/// What the ABI benchmark calls.
#[derive(Debug)]
pub struct Subjects {
    runtime: tokio::runtime::Runtime,
    // Kept so the plugin's instance lives as long as its tool.
    _plugin: LoadedPlugin,
    tool: LoadedTool,
    validator: ArgumentValidator,
    arguments: Value,
    arguments_json: String,
}

impl Subjects {
    /// Opens the `benchmarks` plugin library at `library` and takes its `echo`.
    pub fn new(library: &Path) -> Result<Self> {
        let manifest =
            discovery::read(library).map_err(|e| anyhow::anyhow!("{}: {e}", library.display()))?;
        let discovered = DiscoveredPlugin::library(library, manifest);
        let plugin = activate(&discovered)?;
        let tool = plugin
            .tool("echo")
            .context("the plugin has no `echo`")?
            .clone();
        let validator = ArgumentValidator::new("echo", tool.decl.input_schema.as_ref());
        let arguments = json!({"text": "hello from reactor-bench"});
        Ok(Self {
            _plugin: plugin,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            tool,
            validator,
            arguments_json: arguments.to_string(),
            arguments,
        })
    }

    /// `echo` alone, on an owned string.
    pub fn direct_fn(&self) -> String {
        echo(black_box(String::from("hello from reactor-bench")))
    }

    /// `echo` called directly with the plugin layer's JSON work around it.
    pub fn direct_json(&self) -> Value {
        let args: EchoArgs =
            serde_json::from_str(black_box(&self.arguments_json)).unwrap_or_else(|_| EchoArgs {
                text: String::new(),
            });
        let output = serde_json::to_string(&echo(args.text)).unwrap_or_default();
        serde_json::from_str(&output).unwrap_or(Value::Null)
    }

    /// `echo` through the host's handler table: `LoadedTool::call_json`, awaited.
    pub fn handler_table(&self) -> Value {
        self.runtime
            .block_on(self.tool.call_json(black_box(self.arguments_json.clone())))
            .unwrap_or(Value::Null)
    }

    /// The host's check of `echo`'s arguments against its input schema.
    pub fn validate(&self) -> bool {
        self.validator.check(black_box(&self.arguments)).is_ok()
    }

    /// Checks that each subject does what it is timed for.
    pub fn self_check(&self) -> Result<()> {
        let expected = json!("hello from reactor-bench");
        anyhow::ensure!(self.direct_json() == expected, "direct echo is wrong");
        anyhow::ensure!(
            self.handler_table() == expected,
            "echo through the table is wrong"
        );
        anyhow::ensure!(self.validate(), "echo's arguments do not validate");
        anyhow::ensure!(
            self.validator.check(&json!({"text": 1})).is_err(),
            "validation accepts a number for a string"
        );
        Ok(())
    }
}

/// The mean time of one call of `f` over `iterations`, after a tenth as many warm-up calls.
pub fn time_per_call<T>(iterations: u32, mut f: impl FnMut() -> T) -> Duration {
    for _ in 0..iterations.div_ceil(10) {
        black_box(f());
    }
    let started = Instant::now();
    for _ in 0..iterations {
        black_box(f());
    }
    started.elapsed() / iterations.max(1)
}
