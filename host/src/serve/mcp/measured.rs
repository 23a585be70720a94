//! Each request's duration into `mcp.server.operation.duration` ([`measure`]), when metrics
//! are on, and its SERVER span ([`span`]), when traces are on; one atomic load each when they
//! are off.

use std::{future::Future, time::Duration, time::Instant};

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolResponse, ErrorCode},
    service::RequestContext,
};
use tracing::{Instrument as _, Span};

use crate::observe::{
    metrics::{self, Operation},
    traces,
};
use crate::serve::host_context::{self, trace};

use super::{caller, parts};

/// Runs `answer`, the answer to a `method` request (naming the tool or prompt `name`, or the
/// resource URI), in the request's span, and records how long it took.
pub(super) async fn measure<T>(
    method: &'static str,
    name: Option<&str>,
    context: &RequestContext<RoleServer>,
    answer: impl Future<Output = Result<T, ErrorData>>,
) -> Result<T, ErrorData> {
    // Boxed: rmcp spawns a task per request holding this future, and moves it as it goes.
    let answer = Box::pin(answer);
    let span = span(method, name, context);
    if metrics::get().is_none() && span.is_none() {
        return answer.await;
    }
    let started = Instant::now();
    let answer = answer.instrument(span.clone()).await;
    let error = error_type(&answer);
    close(&span, error.as_deref(), &answer);
    record(method, name, context, error, started.elapsed());
    answer
}

/// The SERVER span of a `method` request naming `target`, child of the trace context the
/// request came with; [`Span::none`] when traces are off.
pub(super) fn span(
    method: &'static str,
    target: Option<&str>,
    context: &RequestContext<RoleServer>,
) -> Span {
    if !traces::on() {
        return Span::none();
    }
    let id = context.id.to_string();
    let session = host_context::session_of(context).filter(|_| parts(context).is_some());
    let caller = caller(context);
    let parent = trace::of_request(context);
    let text = |key: &str| parent.as_ref()?.get(key)?.as_str();
    traces::request_span(&traces::Request {
        method,
        target,
        request_id: Some(&id),
        session: session.as_deref(),
        protocol: protocol_label(context),
        transport: transport(context),
        caller: caller.as_deref().map(|c| c.name.as_str()),
        parent: text("traceparent").map(|p| (p, text("tracestate"))),
    })
}

/// Records on a request's `span` how `answer` went.
fn close<T>(span: &Span, error: Option<&str>, answer: &Result<T, ErrorData>) {
    if let Some(error) = error {
        traces::record_error(span, error, answer.as_ref().err().map(|e| e.code.0));
    }
}

/// Records a `tools/call` of `name` that answered `answer` after `took` in `span` and the
/// metrics: a result with `isError` is a `tool_error`.
pub(super) fn record_call(
    name: &str,
    context: &RequestContext<RoleServer>,
    span: &Span,
    answer: &Result<CallToolResponse, ErrorData>,
    took: Duration,
) {
    if metrics::get().is_none() && span.is_none() {
        return;
    }
    let error = match answer {
        Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => {
            Some("tool_error".to_owned())
        }
        answer => error_type(answer),
    };
    close(span, error.as_deref(), answer);
    record("tools/call", Some(name), context, error, took);
}

/// The JSON-RPC code of an error answer.
fn error_type<T>(answer: &Result<T, ErrorData>) -> Option<String> {
    answer.as_ref().err().map(|error| error.code.0.to_string())
}

/// Records one request; the tool or prompt name only when the request did not fail for its
/// parameters (an unknown name is not a label: a client could make up any number of them).
fn record(
    method: &'static str,
    name: Option<&str>,
    context: &RequestContext<RoleServer>,
    error_type: Option<String>,
    took: Duration,
) {
    let Some(metrics) = metrics::get() else {
        return;
    };
    let invalid = ErrorCode::INVALID_PARAMS.0.to_string();
    let name = name
        .filter(|_| error_type.as_deref() != Some(invalid.as_str()))
        .map(str::to_owned);
    let (tool, prompt) = match method {
        "tools/call" => (name, None),
        "prompts/get" => (None, name),
        _ => (None, None),
    };
    let operation = Operation {
        mcp_method_name: method,
        gen_ai_tool_name: tool,
        gen_ai_prompt_name: prompt,
        error_type,
        mcp_protocol_version: protocol_label(context),
        network_transport: transport(context),
    };
    metrics.operation(&operation, took);
}

/// `network.transport`: `tcp` over HTTP, `pipe` over stdio.
fn transport(context: &RequestContext<RoleServer>) -> &'static str {
    if parts(context).is_some() {
        "tcp"
    } else {
        "pipe"
    }
}

/// The request's protocol version as a label: one of the versions the server speaks, else
/// `None`.
fn protocol_label(context: &RequestContext<RoleServer>) -> Option<&'static str> {
    const VERSIONS: [&str; 5] = [
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    ];
    let version = context.protocol_version()?;
    VERSIONS
        .into_iter()
        .find(|known| *known == version.as_str())
}
