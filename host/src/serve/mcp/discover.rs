//! The host's `search_tools` and discovery mode (`?discover`): a URL whose `tools/list` is
//! `search_tools`, `call_tool` and the tools marked always visible, the same for every request
//! on it, from manifests alone.
//!
//! `search_tools` ranks the tools the request may use ([`crate::reports::search`]) and opens
//! nothing. `call_tool` takes a tool's name and arguments and becomes a plain `tools/call` of
//! that tool ([`Handler::through_call_tool`]), served from the table of the tool's own toolset
//! ([`Handler::tool_view`]), so a call opens that tool's plugin only, on first use.

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, CallToolResult, JsonObject, ListToolsResult, Tool},
    service::RequestContext,
};
use serde_json::{Map, Value, json};

use super::outcome::error_result;
use super::policed::Who;
use super::toolsets_tool::unknown_tool;
use super::{Handler, caller};
use crate::policy::ToolFacts;
use crate::registry::Registry;
use crate::reports::search::{CALL_TOOL, IndexedTool, SEARCH_TOOL, SearchRequest, always_visible};
use crate::selection::{ActiveSet, Resolution};
use crate::serve::generation::{
    Generation,
    served::{self, Resolved, ServedView},
};

impl Handler {
    /// The answer of `search_tools` with `arguments`, for `resolution`: the best tools the
    /// caller may use (the policy's rules too), with their schemas when known unopened.
    pub(super) fn search_result(
        &self,
        context: &RequestContext<RoleServer>,
        generation: &Generation,
        resolution: &Resolution,
        arguments: &Map<String, Value>,
    ) -> CallToolResult {
        let request = match SearchRequest::from_arguments(arguments) {
            Ok(request) => request,
            Err(problem) => return error_result(problem),
        };
        let policy = self.state.policy();
        let who = Who::new(caller(context));
        let caller = who.caller();
        let opened = generation.builder().opened();
        let answer = generation.tool_index().search(
            generation.registry(),
            resolution,
            &request,
            |tool| policy.rules.allow_all() || policy.hides(&caller, &facts(tool)).is_none(),
            |tool| {
                let loaded = (opened.iter())
                    .filter_map(|p| p.tool(&tool.decl.name))
                    .find(|t| t.plugin == tool.plugin)?;
                loaded.decl.input_schema.clone()
            },
        );
        CallToolResult::structured(serde_json::to_value(answer).unwrap_or_else(|_| json!({})))
    }

    /// `request` as the call it stands for: in discovery mode, a call of `call_tool` becomes
    /// a call of the tool it names, with the arguments it gives; any other request is itself.
    pub(super) fn through_call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolRequestParams, ErrorData> {
        if request.name != CALL_TOOL {
            return Ok(request);
        }
        let (_, resolved) = self.resolved(context);
        if !resolved.resolution.mode.discover {
            return Ok(request);
        }
        let mut outer = request.arguments.take().unwrap_or_default();
        let name = match outer.remove("name") {
            Some(Value::String(name)) if !name.is_empty() => name,
            _ => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "invalid arguments for tool `{CALL_TOOL}`: `name` must be the name of a tool (search_tools finds them)"
                    ),
                    None,
                ));
            }
        };
        let arguments = match outer.remove("arguments") {
            None | Some(Value::Null) => JsonObject::new(),
            Some(Value::Object(arguments)) => arguments,
            Some(_) => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "invalid arguments for tool `{CALL_TOOL}`: `arguments` must be an object (the tool's arguments)"
                    ),
                    None,
                ));
            }
        };
        if let Some(other) = outer.keys().next() {
            return Err(ErrorData::invalid_params(
                format!(
                    "invalid arguments for tool `{CALL_TOOL}`: unknown field `{other}`, expected `name` and `arguments`"
                ),
                None,
            ));
        }
        request.name = name.into();
        request.arguments = Some(arguments);
        Ok(request)
    }

    /// In discovery mode, the view a call of `name` is served from: the table of the tool's own
    /// toolset (opening its plugin on first use) through the request's filter. A tool the
    /// request may not use is unknown, with the reason [`unknown_tool`] gives.
    pub(super) async fn tool_view(
        &self,
        context: &RequestContext<RoleServer>,
        generation: &Generation,
        resolution: &Resolution,
        name: &str,
    ) -> Result<Arc<ServedView>, ErrorData> {
        let index = generation.tool_index();
        let Some(tool) = index.served(generation.registry(), resolution, name) else {
            return Err(unknown_tool(generation, name, resolution, context));
        };
        let narrow = Resolved::new(Resolution {
            active: ActiveSet::from_names([tool.decl.toolset.clone()]),
            unknown: Vec::new(),
            filter: resolution.filter.clone(),
            mode: resolution.mode,
        });
        generation.sets.view(&narrow).await.map_err(|e| {
            tracing::error!("{e}");
            ErrorData::internal_error(e, None)
        })
    }

    /// Discovery mode's `tools/list`: `search_tools`, `call_tool`, the host's
    /// `list_server_toolsets` (when served and not filtered out) and the tools of the request's
    /// selection marked always visible, as their manifests declare them. Nothing is opened, so
    /// the list is the same for every request on the URL.
    pub(super) fn discovery_tools(
        &self,
        context: &RequestContext<RoleServer>,
        generation: &Generation,
        resolution: &Resolution,
    ) -> Vec<Tool> {
        let mut tools = vec![search_tool_description(), call_tool_description()];
        if self.state.toolsets_tool && resolution.filter.allows(served::TOOLSETS_TOOL, true) {
            tools.push(served::toolsets_tool_description());
        }
        let policy = self.state.policy();
        let who = Who::new(caller(context));
        let caller = who.caller();
        let registry = generation.registry();
        tools.extend(
            generation
                .tool_index()
                .always_visible(registry, resolution)
                .into_iter()
                .filter(|t| policy.hides(&caller, &facts(t)).is_none())
                .filter(|t| ![SEARCH_TOOL, CALL_TOOL].contains(&t.decl.name.as_str()))
                .map(|t| served::mcp_tool(&t.decl)),
        );
        tools
    }
}

/// The `tools/list` answer of a URL selecting every toolset of `registry`, from its manifests:
/// every tool and `list_server_toolsets` in normal mode; `search_tools`, `call_tool`,
/// `list_server_toolsets` and the tools marked always visible in discovery mode. (For the
/// benchmarks.)
pub fn tools_list(registry: &Registry, discover: bool) -> ListToolsResult {
    let mut tools: Vec<Tool> = if discover {
        vec![search_tool_description(), call_tool_description()]
    } else {
        Vec::new()
    };
    tools.extend(
        registry
            .tools()
            .iter()
            .map(|t| registry.extensions().apply_to(&t.decl))
            .filter(|t| !discover || always_visible(t))
            .map(|t| served::mcp_tool(&t)),
    );
    tools.push(served::toolsets_tool_description());
    ListToolsResult::with_all_items(tools)
}

/// What the policy sees of an indexed tool.
fn facts(tool: &IndexedTool) -> ToolFacts<'_> {
    ToolFacts {
        name: &tool.decl.name,
        toolset: &tool.decl.toolset,
        plugin: &tool.plugin,
        annotations: &tool.decl.annotations,
    }
}

/// The description of the host's `search_tools`.
pub(super) fn search_tool_description() -> Tool {
    Tool::new(
        SEARCH_TOOL,
        "Find the tools of this server that fit a task: describe the task in words (query); \
         the best matches come back with their names, toolsets, one-line descriptions and \
         argument schemas. Optionally narrow by toolsets or by annotations (e.g. \
         {\"readOnlyHint\": true}); limit says how many (default 5, at most 50).",
        schema(json!({
            "query": {"type": "string", "description": "What the tool should do, in words"},
            "toolsets": {"type": "array", "items": {"type": "string"},
                         "description": "Only tools of these toolsets"},
            "annotations": {"type": "object", "description": "Only tools with these annotation values",
                            "properties": {
                                "readOnlyHint": {"type": "boolean"},
                                "destructiveHint": {"type": "boolean"},
                                "idempotentHint": {"type": "boolean"},
                                "openWorldHint": {"type": "boolean"}}},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50,
                      "description": "How many tools to answer (default 5)"}
        }), &["query"]),
    )
    .with_title("Search Tools")
    .with_annotations(served::host_read_only())
}

/// The description of the host's `call_tool`.
fn call_tool_description() -> Tool {
    Tool::new(
        CALL_TOOL,
        "Call a tool of this server by name with its arguments, as search_tools describes \
         them; the answer is the tool's own.",
        schema(
            json!({
                "name": {"type": "string", "description": "The tool's name, as search_tools gives it"},
                "arguments": {"type": "object", "description": "The tool's arguments"}
            }),
            &["name"],
        ),
    )
    .with_title("Call Tool")
}

/// An object schema with these properties, of which `required` are required.
fn schema(properties: Value, required: &[&str]) -> JsonObject {
    let mut schema = served::object_schema(properties);
    schema.insert("required".to_owned(), json!(required));
    schema
}
