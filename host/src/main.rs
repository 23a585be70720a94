//! The `reactor-mcp-server` binary: parse the command line, run, print the error chain.

#![forbid(unsafe_code)]

use std::{io::IsTerminal as _, process::ExitCode};

use clap::Parser;
use reactor_mcp_server::cli::{
    self,
    args::{Cli, LogFormat},
};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_level(), cli.log_format(), cli.authenticates());
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", cli::chain(error.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// Logs to stderr, as text (with colours only when stderr is a terminal) or as one JSON object
/// per line; the audit lines only when callers authenticate.
fn init_tracing(level: &str, format: LogFormat, authenticates: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(default_directives(level, authenticates))
    });
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => logs
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .init(),
    }
}

/// The log filter for `--log-level LEVEL` when `RUST_LOG` is not set. At `info`, rmcp's
/// service lifecycle lines (`Service initialized as server`, `input stream terminated`,
/// `serve finished`: one set per session, and per request when stateless) and its `serve_inner`
/// span are left out: formatting them costs a sixth of the throughput of stateless calls (see
/// BENCHMARKS.md). `debug` and `trace` keep them. The audit line of each tool call (target
/// `audit`) is kept only when callers authenticate (`authenticates`): without identities it
/// would say nothing the server does not, at a cost on every call.
fn default_directives(level: &str, authenticates: bool) -> String {
    let mut directives = if level.trim().eq_ignore_ascii_case("info") {
        format!("{level},rmcp::service=warn")
    } else {
        level.to_owned()
    };
    if !authenticates {
        directives.push_str(",audit=warn");
    }
    directives
}
