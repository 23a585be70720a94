//! A tool table as MCP sees it: the `tools/list` answer, built once per active set, and the
//! argument validators of its tools, each compiled on the tool's first call.
//!
//! [`Sets`] is the one cache per active set: a set seen before is found without blocking; a new
//! one is built once ([`Builder::table`]) on a blocking thread, since building may open plugins,
//! however many requests ask for it at once. Building one set never touches another set's entry,
//! so sessions on other sets are not disturbed.
//!
//! A request sees its set through its filter ([`ServedView`]): which tools the filter shows,
//! computed once per cached resolution ([`Resolved`]), so a repeated URL lists its tools at the
//! cost of an unfiltered one; the list as JSON is serialised once per view too
//! ([`ServedView::tools_json`]), for the answers the host writes itself.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock, RwLock},
};

use axum::body::Bytes;
use tokio::sync::OnceCell;

use plugin_manifest::ToolDecl;
use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

pub(crate) use crate::reports::TOOLSETS_TOOL;
use crate::serve::mcp::validate::{self, ArgumentValidator};
use crate::util::lock::{read, write};
use crate::{
    build::{Builder, ToolTable},
    selection::{ActiveSet, Resolution, ToolFilter},
};

/// A request's resolution, and its view of its served set once a request has needed it.
#[derive(Debug)]
pub(crate) struct Resolved {
    /// The active set and the filter.
    pub(crate) resolution: Arc<Resolution>,
    /// Replaced when its served set is stale ([`ToolTable::is_stale`]).
    ///
    /// [`ToolTable::is_stale`]: crate::build::ToolTable::is_stale
    view: RwLock<Option<Arc<ServedView>>>,
}

impl Resolved {
    /// `resolution`, its view not built yet.
    pub(crate) fn new(resolution: Resolution) -> Self {
        Self {
            resolution: Arc::new(resolution),
            view: RwLock::default(),
        }
    }
}

/// A served set through a request's filter: which of its tools it lists. It holds positions,
/// not tools, so the cached views of many filtered URLs cost little memory.
#[derive(Debug)]
pub(crate) struct ServedView {
    set: Arc<ServedSet>,
    /// The positions in `set.tools()` the filter shows; `None` when it shows every tool.
    shown: Option<Vec<usize>>,
    /// [`ServedView::tools`] as a JSON array, once asked for: as served to clients of
    /// 2026-07-28 and later, and to earlier ones.
    json: [OnceLock<Bytes>; 2],
}

impl ServedView {
    /// `set` through `filter`, which reads each tool's annotations as served (after its
    /// extensions).
    fn new(set: Arc<ServedSet>, filter: &ToolFilter) -> Self {
        let shown = (!filter.shows_all()).then(|| {
            (set.tools().iter().enumerate())
                .filter(|(_, t)| filter.allows(&t.name, read_only(t)))
                .map(|(i, _)| i)
                .collect()
        });
        Self {
            set,
            shown,
            json: Default::default(),
        }
    }

    /// The served set, every tool of it.
    pub(crate) fn set(&self) -> &ServedSet {
        &self.set
    }

    /// The `tools/list` answer: the tools the filter shows, in order.
    pub(crate) fn tools(&self) -> Vec<Tool> {
        let all = self.set.tools();
        match &self.shown {
            None => all.to_vec(),
            Some(shown) => shown.iter().map(|&i| all[i].clone()).collect(),
        }
    }

    /// [`ServedView::tools`] as a JSON array, serialised on first use; for a client of a
    /// version before 2026-07-28 (`legacy`) without the output schemas that are not of an
    /// object, which it cannot read (as rmcp strips them, SEP-2106).
    pub(crate) fn tools_json(&self, legacy: bool) -> Bytes {
        self.json[usize::from(legacy)]
            .get_or_init(|| {
                let mut tools = self.tools();
                if legacy {
                    strip_non_object_output(&mut tools);
                }
                Bytes::from(serde_json::to_vec(&tools).unwrap_or_else(|_| b"[]".to_vec()))
            })
            .clone()
    }
}

/// Takes off `tools` the output schemas that are not of an object, which a client before
/// 2026-07-28 cannot read (SEP-2106), as rmcp does before it answers one.
fn strip_non_object_output(tools: &mut [Tool]) {
    for tool in tools {
        tool.output_schema
            .take_if(|schema| schema.get("type").and_then(Value::as_str) != Some("object"));
    }
}

/// Whether a served tool is annotated `readOnlyHint: true`.
pub(crate) fn read_only(tool: &Tool) -> bool {
    tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true)
}

/// One active set, ready to serve.
#[derive(Debug)]
pub(crate) struct ServedSet {
    table: ToolTable,
    tools: Vec<Tool>,
    validators: HashMap<String, OnceLock<ArgumentValidator>>,
}

impl ServedSet {
    /// Wraps `table`; `toolsets_tool` appends the host's `list_server_toolsets`.
    pub(crate) fn new(table: ToolTable, toolsets_tool: bool) -> Self {
        let mut tools: Vec<Tool> = table
            .tools()
            .iter()
            .filter(|t| !(toolsets_tool && t.decl.name == TOOLSETS_TOOL))
            .map(|t| mcp_tool(&t.decl))
            .collect();
        if toolsets_tool {
            if table.get(TOOLSETS_TOOL).is_some() {
                tracing::warn!(
                    "a plugin offers a tool named `{TOOLSETS_TOOL}`; the host's own is served instead"
                );
            }
            tools.push(toolsets_tool_description());
        }
        let validators = table
            .tools()
            .iter()
            .map(|t| (t.decl.name.clone(), OnceLock::new()))
            .collect();
        Self {
            table,
            tools,
            validators,
        }
    }

    /// The plugins' tool table.
    pub(crate) fn table(&self) -> &ToolTable {
        &self.table
    }

    /// The `tools/list` answer, in order.
    pub(crate) fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The server instructions, if any toolset gives some.
    pub(crate) fn instructions(&self) -> Option<String> {
        Some(self.table.instructions())
            .filter(|i| !i.is_empty())
            .map(str::to_owned)
    }

    /// The argument validator of the plugin tool `name`, compiled on first use.
    pub(crate) fn validator(&self, name: &str) -> Option<&ArgumentValidator> {
        let slot = self.validators.get(name)?;
        let tool = self.table.get(name)?;
        Some(slot.get_or_init(|| ArgumentValidator::new(name, tool.decl.input_schema.as_ref())))
    }
}

/// The served sets built so far, each built once.
#[derive(Debug)]
pub(crate) struct Sets {
    builder: Arc<Builder>,
    toolsets_tool: bool,
    sets: RwLock<HashMap<ActiveSet, Arc<OnceCell<Arc<ServedSet>>>>>,
}

impl Sets {
    /// An empty cache over `builder`.
    pub(crate) fn new(builder: Arc<Builder>, toolsets_tool: bool) -> Self {
        Self {
            builder,
            toolsets_tool,
            sets: RwLock::default(),
        }
    }

    /// The served set of `active`, opening the plugins it needs on first use; concurrent first
    /// requests wait for the one build. A set lacking a bridged server that failed to open is
    /// built again once the server may be tried again. Fails only if building the table
    /// panicked, which the host reports as an internal error (the next request tries again).
    pub(crate) async fn get(&self, active: &ActiveSet) -> Result<Arc<ServedSet>, String> {
        let mut cell = self.cell(active);
        if let Some(set) = cell.get() {
            if !set.table().is_stale() {
                return Ok(Arc::clone(set));
            }
            self.forget(active, &cell);
            cell = self.cell(active);
        }
        let set = cell
            .get_or_try_init(|| async {
                validate::prepare();
                let builder = Arc::clone(&self.builder);
                let key = active.clone();
                let span = tracing::Span::current();
                let table =
                    tokio::task::spawn_blocking(move || span.in_scope(|| builder.table(&key)))
                        .await
                        .map_err(|e| format!("building the tool table failed: {e}"))?;
                Ok::<_, String>(Arc::new(ServedSet::new(table, self.toolsets_tool)))
            })
            .await?;
        Ok(Arc::clone(set))
    }

    /// The names of the tools `resolution` is served, sorted, when its active set's table is
    /// built and current (its plugins and servers opened): what `tools/list` answers, the
    /// tools bridged servers and plugins listed at run time included. `None` before.
    pub(crate) fn served_names(&self, resolution: &Resolution) -> Option<Vec<String>> {
        let set = read(&self.sets)
            .get(&resolution.active)
            .and_then(|cell| cell.get().cloned())
            .filter(|set| !set.table().is_stale())?;
        let view = ServedView::new(set, &resolution.filter);
        let mut names: Vec<String> = view.tools().into_iter().map(|t| t.name.into()).collect();
        names.sort();
        Some(names)
    }

    /// The view of `resolved`: its active set's served set ([`Sets::get`]) through its filter,
    /// built on the first request that needs it, and again when its set is stale.
    pub(crate) async fn view(&self, resolved: &Resolved) -> Result<Arc<ServedView>, String> {
        let kept = read(&resolved.view).clone();
        if let Some(view) = kept.filter(|v| !v.set().table().is_stale()) {
            return Ok(view);
        }
        let set = self.get(&resolved.resolution.active).await?;
        let view = Arc::new(ServedView::new(set, &resolved.resolution.filter));
        *write(&resolved.view) = Some(Arc::clone(&view));
        Ok(view)
    }

    /// Drops `cell` as the slot of `active`, unless another request replaced it already.
    fn forget(&self, active: &ActiveSet, cell: &Arc<OnceCell<Arc<ServedSet>>>) {
        let mut sets = write(&self.sets);
        if sets.get(active).is_some_and(|c| Arc::ptr_eq(c, cell)) {
            sets.remove(active);
        }
    }

    /// The slot of `active`, made empty on first sight.
    fn cell(&self, active: &ActiveSet) -> Arc<OnceCell<Arc<ServedSet>>> {
        if let Some(cell) = read(&self.sets).get(active) {
            return Arc::clone(cell);
        }
        Arc::clone(write(&self.sets).entry(active.clone()).or_default())
    }
}

/// A plugin tool's MCP description.
pub(crate) fn mcp_tool(decl: &ToolDecl) -> Tool {
    let schema = decl
        .input_schema
        .clone()
        .unwrap_or_else(|| object_schema(json!({})));
    let mut tool = Tool::new(decl.name.clone(), decl.description.clone(), schema);
    if decl.description.is_empty() {
        tool.description = None;
    }
    tool.title = decl.title.clone();
    if !decl.annotations.is_empty() {
        let mut annotations = ToolAnnotations::new();
        annotations.read_only_hint = decl.annotations.read_only;
        annotations.destructive_hint = decl.annotations.destructive;
        annotations.idempotent_hint = decl.annotations.idempotent;
        annotations.open_world_hint = decl.annotations.open_world;
        tool.annotations = Some(annotations);
    }
    tool.meta = decl.meta.clone().map(MetaObject);
    tool.output_schema = decl.output_schema.clone().map(Arc::new);
    tool
}

/// The description of the host's `list_server_toolsets`.
pub(crate) fn toolsets_tool_description() -> Tool {
    Tool::new(
        TOOLSETS_TOOL,
        "List the toolsets this server offers, which of them are active for this connection, \
         the tool filters in force, and how to turn on more or filter tools (by changing the \
         server URL).",
        object_schema(json!({})),
    )
    .with_title("List Server Toolsets")
    .with_annotations(host_read_only())
}

/// The annotations of the host's own read-only tools: read-only, idempotent, closed world.
pub(crate) fn host_read_only() -> ToolAnnotations {
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = Some(true);
    annotations.idempotent_hint = Some(true);
    annotations.open_world_hint = Some(false);
    annotations
}

/// An object schema with these properties.
pub(crate) fn object_schema(properties: Value) -> JsonObject {
    let mut schema = JsonObject::new();
    schema.insert("type".to_owned(), Value::from("object"));
    schema.insert("properties".to_owned(), properties);
    schema
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Annotations;

    use super::*;

    fn decl(json: Value) -> ToolDecl {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_tool_is_listed_with_its_title_schema_annotations_and_meta() {
        let mut d = decl(json!({
            "name": "echo",
            "title": "Echo",
            "description": "Return the text.",
            "toolset": "benchmarks",
            "meta": {"x": 1},
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}
        }));
        d.annotations = Annotations {
            read_only: Some(true),
            ..Default::default()
        };
        let listed = serde_json::to_value(mcp_tool(&d)).unwrap();
        assert_eq!(
            listed,
            json!({
                "name": "echo",
                "title": "Echo",
                "description": "Return the text.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                "annotations": {"readOnlyHint": true},
                "_meta": {"x": 1}
            })
        );
    }

    #[test]
    fn a_tool_without_a_schema_takes_any_object() {
        let listed = serde_json::to_value(mcp_tool(&decl(
            json!({"name": "t", "toolset": "s", "description": ""}),
        )))
        .unwrap();
        assert_eq!(
            listed,
            json!({"name": "t", "inputSchema": {"type": "object", "properties": {}}})
        );
    }

    #[test]
    fn the_host_tool_is_listed_last_and_read_only() {
        let set = ServedSet::new(ToolTable::default(), true);
        assert_eq!(set.tools().len(), 1);
        let tool = &set.tools()[0];
        assert_eq!(tool.name, TOOLSETS_TOOL);
        assert_eq!(
            tool.annotations.as_ref().and_then(|a| a.read_only_hint),
            Some(true)
        );
        assert!(
            ServedSet::new(ToolTable::default(), false)
                .tools()
                .is_empty()
        );
    }

    #[test]
    fn a_view_lists_what_its_filter_shows_and_readonly_reads_the_annotations() {
        let set = Arc::new(ServedSet::new(ToolTable::default(), true));
        let names = |filter: ToolFilter| {
            ServedView::new(Arc::clone(&set), &filter)
                .tools()
                .into_iter()
                .map(|t| t.name.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(ToolFilter::default()), [TOOLSETS_TOOL]);
        assert_eq!(names(ToolFilter::new(None, &[], true)), [TOOLSETS_TOOL]);
        assert!(names(ToolFilter::new(Some(&["echo".into()]), &[], false)).is_empty());
        assert!(names(ToolFilter::new(None, &["list_*".into()], false)).is_empty());
    }

    #[test]
    fn a_view_serialises_its_list_once_per_era_as_rmcp_would() {
        let set = Arc::new(ServedSet::new(ToolTable::default(), true));
        let view = ServedView::new(set, &ToolFilter::default());
        let expected = serde_json::to_vec(&view.tools()).unwrap();
        assert_eq!(view.tools_json(false), expected);
        assert_eq!(view.tools_json(true), expected);
        assert_eq!(
            view.tools_json(false).as_ptr(),
            view.tools_json(false).as_ptr(),
            "serialised once"
        );
        let schema = |kind: &str| {
            Some(Arc::new(
                json!({"type": kind}).as_object().cloned().unwrap(),
            ))
        };
        let mut tools = vec![Tool::default(), Tool::default()];
        tools[0].output_schema = schema("object");
        tools[1].output_schema = schema("array");
        strip_non_object_output(&mut tools);
        assert_eq!(tools[0].output_schema, schema("object"));
        assert_eq!(tools[1].output_schema, None);
    }
}
