//! The audit trail: one line per tool call on the `tracing` target `audit`, naming the caller,
//! the tool, the plugin that served it, the outcome and the duration; never the arguments, the
//! result or a credential.

use std::time::Duration;

use rmcp::{ErrorData, model::CallToolResponse};

use crate::{auth::Identity, policy::Denial};

/// Logs one `tools/call`: `plugin` is `None` when no plugin was reached (an unknown or hidden
/// tool, bad arguments, the host's own tool).
pub(crate) fn tool_call(
    caller: Option<&Identity>,
    tool: &str,
    plugin: Option<&str>,
    answer: &Result<CallToolResponse, ErrorData>,
    took: Duration,
) {
    let outcome = match answer {
        Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => "error",
        Ok(CallToolResponse::Complete(_)) => "ok",
        Ok(CallToolResponse::InputRequired(_)) => "input_required",
        Ok(_) => "task",
        Err(_) => "refused",
    };
    tracing::info!(
        target: "audit",
        identity = caller.map_or("-", |c| c.name.as_str()),
        tool,
        plugin = plugin.unwrap_or("-"),
        outcome,
        duration_ms = took.as_secs_f64() * 1000.0,
        "tool call"
    );
}

/// Logs a call the policy refused, naming the entry that refused it and why.
pub(crate) fn denied(caller: Option<&Identity>, tool: &str, denial: &Denial) {
    tracing::info!(
        target: "audit",
        identity = caller.map_or("-", |c| c.name.as_str()),
        tool,
        outcome = "denied",
        reason = denial.kind.as_str(),
        rule = denial.rule,
        "tool call denied by the policy: {}",
        denial.message
    );
}
