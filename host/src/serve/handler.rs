//! The MCP handler: `initialize` and `server/discover` (instructions and capabilities),
//! `tools/list` and `tools/call`, answered from the tool table of the request's own URL;
//! resources, prompts and completions, answered by [`super::contributions`] for the same URL;
//! `logging/setLevel` for the session.
//!
//! rmcp hands every request the HTTP request parts it came with; the handler reads the URL's
//! query from them on each request, so sessions (stateful mode) and lone requests (stateless
//! mode, protocol 2026-07-28) are served alike. Host errors become MCP answers here: bad
//! arguments, a tool's error and a panic are `isError` results the model can read; an unknown
//! tool is the JSON-RPC error the specification gives (`-32602`).

use std::sync::Arc;

use axum::http::{header, request::Parts};
#[allow(deprecated)] // logging is deprecated by SEP-2577, still in 2025-11-25
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResponse, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
        CustomResult, DiscoverResult, ErrorCode, InitializeRequestParams, InitializeResult,
        ListToolsResult, PaginatedRequestParams, ServerConfig,
    },
    service::{Peer, RequestContext},
};
use serde_json::{Value, json};

use super::{
    ServeState,
    context::{self, SessionLevel},
    contributions::{self as contributed},
    jsonrpc,
    served::{ServedSet, TOOLSETS_TOOL},
    subscriptions::Session,
};
use crate::{
    build::{CallError, CallOutput},
    reports::ToolsetsReport,
    selection::Resolution,
};

/// One MCP connection's handler (one per session; one per request when stateless).
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    state: Arc<ServeState>,
    /// The session's logging level (`logging/setLevel`).
    level: SessionLevel,
    /// The session's entry in the server's subscriptions; dropped with the session.
    subscriptions: Arc<Session<Peer<RoleServer>>>,
}

impl Handler {
    /// A handler over the server's shared state.
    pub(crate) fn new(state: Arc<ServeState>) -> Self {
        Self {
            subscriptions: Arc::new(state.subscriptions.session()),
            state,
            level: SessionLevel::default(),
        }
    }

    /// The request's URL selection, from manifests alone.
    fn resolution(&self, context: &RequestContext<RoleServer>) -> Arc<Resolution> {
        let query = parts(context)
            .and_then(|p| p.uri.query())
            .unwrap_or_default();
        self.state.resolve(query)
    }

    /// The request's URL selection and its served set (opening plugins on first use).
    async fn served(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Arc<Resolution>, Arc<ServedSet>), ErrorData> {
        let resolution = self.resolution(context);
        let served = self.state.sets.get(&resolution.active).await.map_err(|e| {
            tracing::error!("{e}");
            ErrorData::internal_error(e, None)
        })?;
        Ok((resolution, served))
    }

    /// Fills in what `initialize` and `server/discover` say per URL: the instructions of the
    /// served set, and the capabilities of what its active set has.
    async fn describe_url(
        &self,
        context: &RequestContext<RoleServer>,
        info: &mut ServerConfig,
    ) -> Result<(), ErrorData> {
        let (resolution, served) = self.served(context).await?;
        info.instructions = served.instructions();
        contributed::declare_capabilities(
            self.state.builder.registry(),
            &resolution.active,
            &mut info.capabilities,
        );
        Ok(())
    }

    /// The answer of `list_server_toolsets` for the request's URL.
    fn toolsets_result(
        &self,
        context: &RequestContext<RoleServer>,
        resolution: &Resolution,
    ) -> CallToolResult {
        let report = ToolsetsReport::new(self.state.builder.registry(), resolution);

        let inactive: Vec<&str> = report
            .toolsets
            .iter()
            .filter(|t| !t.active)
            .map(|t| t.name.as_str())
            .collect();
        let mut value = serde_json::to_value(&report).unwrap_or_else(|_| json!({}));
        if let Value::Object(map) = &mut value {
            map.insert(
                "how_to_ask_for_more".to_owned(),
                Value::from(match parts(context) {
                    Some(parts) => how_to_ask_for_more(&base_url(parts), &inactive),
                    None => how_to_restart_with_more(&inactive),
                }),
            );
        }
        CallToolResult::structured(value)
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        self.state.info.clone()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        self.describe_url(&context, &mut result).await?;
        Ok(result)
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let mut info = self.get_info();
        self.describe_url(&context, &mut info).await?;
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            info,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (_, served) = self.served(&context).await?;
        Ok(ListToolsResult::with_all_items(served.tools().to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let (resolution, served) = self.served(&context).await?;
        if self.state.toolsets_tool && name == TOOLSETS_TOOL {
            return Ok(self.toolsets_result(&context, &resolution).into());
        }
        let (Some(tool), Some(validator)) = (served.table().get(name), served.validator(name))
        else {
            return Err(unknown_tool(&self.state, name, &resolution));
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        if let Err(problem) = validator.check(&arguments) {
            return Ok(
                error_result(format!("invalid arguments for tool `{name}`: {problem}")).into(),
            );
        }
        let arguments = arguments.to_string();
        let outcome = context::run(
            &context,
            &self.level,
            &resolution,
            &self.state.updates,
            self.state.limits.client_request_timeout,
            |host| tool.call_with(arguments, host),
        )
        .await
        .unwrap_or_else(|| {
            tracing::info!(
                tool = name,
                "call cancelled (by the client, or its session ended): stopped waiting for the plugin"
            );
            Err(CallError::Cancelled(format!("tool {name} was cancelled")))
        });
        Ok(call_result(name, outcome).into())
    }

    #[allow(deprecated)] // logging is deprecated by SEP-2577, still in 2025-11-25
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.level.set(request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let active = &self.resolution(&context).active;
        Ok(contributed::list_resources(
            self.state.builder.registry(),
            active,
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let active = &self.resolution(&context).active;
        Ok(contributed::list_resource_templates(
            self.state.builder.registry(),
            active,
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let active = &self.resolution(&context).active;
        contributed::read_resource(&self.state, active, &request.uri, &context.ct)
            .await
            .map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let active = &self.resolution(&context).active;
        contributed::subscribe(
            self.state.builder.registry(),
            active,
            &self.subscriptions,
            &request.uri,
            context.peer,
        )
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let active = &self.resolution(&context).active;
        Ok(contributed::list_prompts(
            self.state.builder.registry(),
            active,
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let active = &self.resolution(&context).active;
        contributed::get_prompt(&self.state, active, request, &context.ct)
            .await
            .map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let active = &self.resolution(&context).active;
        contributed::complete(&self.state, active, request, &context.ct).await
    }

    /// rmcp hands over as custom any request whose `params` do not fit its method: a known
    /// method gets the `-32602` naming the field, any other `-32601`.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(
            jsonrpc::invalid_params(&request.method, request.params.as_ref()).unwrap_or_else(
                || ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method, None),
            ),
        )
    }
}

/// The HTTP request parts rmcp attached to the request.
fn parts(context: &RequestContext<RoleServer>) -> Option<&Parts> {
    context.extensions.get::<Parts>()
}

/// The URL the client used, without its query: `http://host:port/path`.
fn base_url(parts: &Parts) -> String {
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
fn how_to_ask_for_more(url: &str, inactive: &[&str]) -> String {
    let example = inactive.first().copied().unwrap_or("NAME");
    let mut text = format!(
        "Add ?toolsets=NAME to the server URL to turn on more toolsets (for example \
         {url}?toolsets={example}); ?only=NAME serves just those and ?without=NAME drops one. \
         Reconnect with the new URL to use them."
    );
    if !inactive.is_empty() {
        text.push_str(&format!(" Not active here: {}.", inactive.join(", ")));
    }
    text
}

/// The sentence `list_server_toolsets` ends with over stdio, where no URL can change.
fn how_to_restart_with_more(inactive: &[&str]) -> String {
    let example = inactive.first().copied().unwrap_or("NAME");
    let mut text = format!(
        "The selection comes from the server's --toolsets option (REACTOR_MCP_TOOLSETS): \
         restart it with, for example, --toolsets toolsets={example} to turn on more toolsets, \
         or --toolsets only=NAME to serve just those."
    );
    if !inactive.is_empty() {
        text.push_str(&format!(" Not active here: {}.", inactive.join(", ")));
    }
    text
}

/// The JSON-RPC error for a tool the URL does not serve: invalid params, `Unknown tool: X`, with
/// the toolset that has it when another URL would serve it. A tool of an active toolset that is
/// not served was left out when its table was built (an extension of it failed).
fn unknown_tool(state: &ServeState, name: &str, resolution: &Resolution) -> ErrorData {
    let declared = state
        .builder
        .registry()
        .plugins()
        .iter()
        .find_map(|p| Some((p, p.manifest.tools.iter().find(|t| t.name == name)?)));
    let data = declared.map(|(plugin, tool)| {
        let toolset = tool.toolset.clone();
        let failure = state.builder.failure(&plugin.manifest.name);
        let hint = if let Some(failure) = failure.filter(|_| resolution.active.contains(&toolset)) {
            format!("tool `{name}` is in toolset `{toolset}`, which this URL serves, but its provider did not open: {failure}")
        } else if resolution.active.contains(&toolset) {
            format!("tool `{name}` is in toolset `{toolset}`, which this URL serves, but it could not be built: an extension of it failed (see the server's log)")
        } else {
            format!("tool `{name}` is in toolset `{toolset}`, which this URL does not serve; add ?toolsets={toolset} to the server URL")
        };
        json!({"toolset": toolset, "hint": hint})
    });
    ErrorData::invalid_params(format!("Unknown tool: {name}"), data)
}

/// A tool result that reports an error to the model.
fn error_result(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A plugin's answer as a tool result: an object as structured content plus its JSON as text, a
/// string as text, anything else as its JSON text; a result the tool built as it is, once it
/// reads as a `CallToolResult`; errors as `isError` results.
pub(crate) fn call_result(tool: &str, outcome: Result<CallOutput, CallError>) -> CallToolResult {
    match outcome {
        Ok(CallOutput::Value(Value::Object(object))) => {
            CallToolResult::structured(Value::Object(object))
        }
        Ok(CallOutput::Value(Value::String(text))) => {
            CallToolResult::success(vec![ContentBlock::text(text)])
        }
        Ok(CallOutput::Value(other)) => {
            CallToolResult::success(vec![ContentBlock::text(other.to_string())])
        }
        Ok(CallOutput::Result(json)) => serde_json::from_str(&json).unwrap_or_else(|e| {
            error_result(format!(
                "tool {tool} returned a result that is not a valid CallToolResult: {e}"
            ))
        }),
        Err(CallError::Panicked(message)) => {
            let prefix = format!("tool {tool} panicked");
            error_result(if message.starts_with(&prefix) {
                message
            } else {
                format!("{prefix}: {message}")
            })
        }
        Err(error) => error_result(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Map;

    use super::*;

    fn object(json: Value) -> Map<String, Value> {
        match json {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn wire(result: CallToolResult) -> Value {
        let mut value = serde_json::to_value(result).unwrap();
        value.as_object_mut().unwrap().remove("resultType");
        value
    }

    #[test]
    fn an_object_is_structured_content_plus_its_json_as_text() {
        let result = call_result(
            "t",
            Ok(CallOutput::Value(Value::Object(object(
                json!({"id": "sbx-1"}),
            )))),
        );
        assert_eq!(
            wire(result),
            json!({
                "content": [{"type": "text", "text": r#"{"id":"sbx-1"}"#}],
                "structuredContent": {"id": "sbx-1"},
                "isError": false
            })
        );
    }

    #[test]
    fn a_string_is_text() {
        assert_eq!(
            wire(call_result("t", Ok(CallOutput::Value(json!("slept 5 ms"))))),
            json!({"content": [{"type": "text", "text": "slept 5 ms"}], "isError": false})
        );
    }

    #[test]
    fn other_json_is_its_text() {
        assert_eq!(
            wire(call_result("t", Ok(CallOutput::Value(json!([1, 2]))))),
            json!({"content": [{"type": "text", "text": "[1,2]"}], "isError": false})
        );
        assert_eq!(
            wire(call_result("t", Ok(CallOutput::Value(json!(3.5))))),
            json!({"content": [{"type": "text", "text": "3.5"}], "isError": false})
        );
    }

    #[test]
    fn a_tool_error_is_an_error_result_with_its_message() {
        assert_eq!(
            wire(call_result(
                "t",
                Err(CallError::Tool("no sandbox has id x".into()))
            )),
            json!({"content": [{"type": "text", "text": "no sandbox has id x"}], "isError": true})
        );
    }

    #[test]
    fn a_panic_names_the_tool_once() {
        let text = |r: CallToolResult| wire(r)["content"][0]["text"].clone();
        assert_eq!(
            text(call_result(
                "boom",
                Err(CallError::Panicked("tool boom panicked: kaboom".into()))
            )),
            "tool boom panicked: kaboom"
        );
        assert_eq!(
            text(call_result(
                "boom",
                Err(CallError::Panicked("kaboom".into()))
            )),
            "tool boom panicked: kaboom"
        );
    }

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
