//! Where the process's `tracing` events and spans go: log lines on stderr (text, or one JSON
//! object per line), filtered by `RUST_LOG` or `--log-level`; and, when the `OTEL_*` variables
//! ask for it, spans exported with OTLP ([`crate::observe::traces`]).

use std::io::IsTerminal as _;

use tracing_subscriber::{
    EnvFilter, Layer, Registry, layer::SubscriberExt as _, util::SubscriberInitExt as _,
};

use super::args::LogFormat;
use crate::observe::traces;

/// Exports the spans not yet sent when dropped, at the end of the process.
#[derive(Debug)]
#[must_use = "dropping it ends the export of spans"]
pub struct Logging(());

impl Drop for Logging {
    fn drop(&mut self) {
        traces::shutdown();
    }
}

/// Logs to stderr, as text (with colours only when stderr is a terminal) or as one JSON object
/// per line (with the request's span, whose `trace_id` and `span_id` are its trace's when
/// traces are on); the audit lines only when callers authenticate. Traces go to the OTLP
/// endpoint the environment names; a variable that cannot be used is said, and traces stay off.
pub fn init(level: &str, format: LogFormat, authenticates: bool) -> Logging {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(default_directives(level, authenticates)));
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Text => lines
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => lines
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_filter(filter)
            .boxed(),
    };
    let (spans, refused) = match traces::layer() {
        Ok(spans) => (spans, None),
        Err(refused) => (None, Some(refused)),
    };
    let subscriber = tracing_subscriber::registry().with(lines).with(spans);
    if let Err(error) = subscriber.try_init() {
        eprintln!("warning: logging is not set up: {error}");
    }
    if let Some(refused) = refused {
        tracing::warn!("traces are not exported: {refused}");
    }
    Logging(())
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
