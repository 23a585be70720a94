//! The host's own `list_server_toolsets` tool, and the help texts that tell a client how to
//! ask for more toolsets or other filters (also in the answer to an unknown tool).

use axum::http::{header, request::Parts};
use rmcp::{ErrorData, RoleServer, model::CallToolResult, service::RequestContext};
use serde_json::{Value, json};

use crate::{discovery::servers::pins::ChangeKind, serve::generation::Generation};

use super::{Handler, caller, parts};
use crate::selection::Resolution;

impl Handler {
    /// The answer of `list_server_toolsets` for the request's URL.
    pub(super) fn toolsets_result(
        &self,
        context: &RequestContext<RoleServer>,
        generation: &Generation,
        resolution: &Resolution,
    ) -> CallToolResult {
        let report = self
            .state
            .toolsets_report(generation, resolution, caller(context).as_deref());
        let inactive: Vec<&str> = report
            .toolsets
            .iter()
            .filter(|t| !t.active)
            .map(|t| t.name.as_str())
            .collect();
        let mut value = serde_json::to_value(&report).unwrap_or_else(|_| json!({}));
        if let Value::Object(map) = &mut value {
            map.insert(
                "server_bounds".to_owned(),
                serde_json::to_value(&self.state.bounds).unwrap_or_default(),
            );
            map.insert(
                "how_to_ask_for_more".to_owned(),
                Value::from(match parts(context) {
                    Some(parts) => how_to_ask_for_more(&base_url(parts), &inactive),
                    None => how_to_restart_with_more(&inactive),
                }),
            );
            map.insert(
                "how_to_filter_tools".to_owned(),
                Value::from(if parts(context).is_some() {
                    HOW_TO_FILTER_TOOLS
                } else {
                    HOW_TO_RESTART_WITH_OTHER_FILTERS
                }),
            );
        }
        CallToolResult::structured(value)
    }
}

/// The URL the client used, without its query: `http://host:port/path`.
pub(super) fn base_url(parts: &Parts) -> String {
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(ToString::to_string));
    match host {
        Some(host) => format!("http://{host}{}", parts.uri.path()),
        None => parts.uri.path().to_owned(),
    }
}

/// The sentence `list_server_toolsets` ends with.
pub(super) fn how_to_ask_for_more(url: &str, inactive: &[&str]) -> String {
    let example = inactive.first().copied().unwrap_or("NAME");
    naming_the_inactive(
        format!(
            "Add ?toolsets=NAME to the server URL to turn on more toolsets (for example \
             {url}?toolsets={example}); ?only=NAME serves just those and ?without=NAME drops \
             one. Reconnect with the new URL to use them."
        ),
        inactive,
    )
}

/// `text`, then which toolsets are not active, if any.
pub(super) fn naming_the_inactive(mut text: String, inactive: &[&str]) -> String {
    if !inactive.is_empty() {
        text.push_str(&format!(" Not active here: {}.", inactive.join(", ")));
    }
    text
}

/// The sentence `list_server_toolsets` ends with over stdio, where no URL can change.
pub(super) fn how_to_restart_with_more(inactive: &[&str]) -> String {
    let example = inactive.first().copied().unwrap_or("NAME");
    naming_the_inactive(
        format!(
            "The selection comes from the server's --toolsets option (REACTOR_MCP_TOOLSETS): \
             restart it with, for example, --toolsets toolsets={example} to turn on more \
             toolsets, or --toolsets only=NAME to serve just those."
        ),
        inactive,
    )
}

/// How `list_server_toolsets` says tools are filtered.
const HOW_TO_FILTER_TOOLS: &str = "Narrow the tools with ?tools=NAME,NAME (only those; * \
     stands for any characters), ?exclude_tools=NAME (never those) and ?readonly (only read-only \
     tools), or with the headers X-MCP-Tools, X-MCP-Exclude-Tools and X-MCP-Readonly \
     (X-MCP-Toolsets selects toolsets as ?only= does). They narrow each other and the server's \
     bounds (server_bounds), never widen them. Reconnect to change them.";

/// How `list_server_toolsets` says tools are filtered over stdio, where no URL can change.
const HOW_TO_RESTART_WITH_OTHER_FILTERS: &str = "The tools are filtered by the server's \
     --tools, --exclude-tools and --read-only options (REACTOR_MCP_TOOLS, \
     REACTOR_MCP_EXCLUDE_TOOLS, REACTOR_MCP_READ_ONLY), shown as server_bounds: restart it with \
     others to change them.";

/// The JSON-RPC error for a tool the request is not served: invalid params, `Unknown tool: X`,
/// with the toolset that has it when another URL (over stdio, other flags) would serve it, in
/// the message (which clients show) and in its data. A
/// tool of an active toolset that is not served was hidden by the request's filter, or left
/// out when its table was built (an extension of it failed).
pub(super) fn unknown_tool(
    generation: &Generation,
    name: &str,
    resolution: &Resolution,
    context: &RequestContext<RoleServer>,
) -> ErrorData {
    let registry = generation.registry();
    // A caller learns nothing of toolsets outside its bound.
    let bound = caller(context).map(|c| c.bound.clone());
    let held = crate::reports::toolsets::changed_tools(registry)
        .into_iter()
        .find(|c| {
            c.held_back
                && c.served_name == name
                && bound.as_ref().is_none_or(|b| b.allows_toolset(&c.toolset))
        });
    if let Some(held) = held {
        return held_back(&held);
    }
    let declared = registry.tools().iter().find(|t| {
        t.decl.name == name
            && bound
                .as_ref()
                .is_none_or(|b| b.allows_toolset(&t.decl.toolset))
    });
    let Some(entry) = declared else {
        return ErrorData::invalid_params(format!("Unknown tool: {name}"), None);
    };
    let toolset = &entry.decl.toolset;
    let served = registry.extensions().apply_to(&entry.decl);
    let failure = generation.builder().failure(&entry.plugin);
    let why = if !resolution.active.contains(toolset) {
        if parts(context).is_some() {
            format!(
                "in toolset `{toolset}`, which this URL does not serve; add ?toolsets={toolset} to the server URL"
            )
        } else {
            format!(
                "in toolset `{toolset}`, which this server does not serve; start it with --toolsets toolsets={toolset}"
            )
        }
    } else if !resolution
        .filter
        .allows(name, served.annotations.read_only == Some(true))
    {
        format!(
            "in toolset `{toolset}`, which this URL serves, but this request's tool filters hide it (tools, exclude_tools, readonly, their X-MCP-* headers, or the server's bounds)"
        )
    } else if let Some(failure) = failure {
        format!(
            "in toolset `{toolset}`, which this URL serves, but its provider did not open: {failure}"
        )
    } else {
        format!(
            "in toolset `{toolset}`, which this URL serves, but it could not be built: an extension of it failed (see the server's log)"
        )
    };
    // Clients show an error's message, not its data: the hint is in both.
    let data = json!({"toolset": toolset, "hint": format!("tool `{name}` is {why}")});
    ErrorData::invalid_params(format!("Unknown tool: {name} (it is {why})"), Some(data))
}

/// The error for a tool held back because its definition differs from its pin: which server,
/// what changed, and how the operator accepts it.
fn held_back(held: &crate::discovery::servers::pinning::ChangedTool) -> ErrorData {
    let why = match held.change {
        ChangeKind::Changed => {
            format!("changed its definition since it was pinned ({})", held.what)
        }
        ChangeKind::Added => "was added since the server's tools were pinned".to_owned(),
    };
    let hint = format!(
        "tool `{}` of server `{}` {why}; it is held back (--pin-tools block) until the operator \
         accepts it with `reactor-mcp-server pins accept {}`",
        held.tool, held.server, held.server
    );
    let message = format!("Unknown tool: {} (held back: {hint})", held.served_name);
    let data = json!({"toolset": held.toolset, "hint": hint, "held_back": true});
    ErrorData::invalid_params(crate::util::names::Shown(&message).to_string(), Some(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_names_an_inactive_toolset_in_an_example_url() {
        let text = how_to_ask_for_more("http://127.0.0.1:4040/mcp", &["benchmarks"]);
        assert!(
            text.contains("http://127.0.0.1:4040/mcp?toolsets=benchmarks"),
            "{text}"
        );
        assert!(text.ends_with("Not active here: benchmarks."), "{text}");
    }
}
