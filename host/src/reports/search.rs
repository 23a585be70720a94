//! `search_tools`: the tools a URL may use, ranked for a query by BM25 over their manifests,
//! so a client finds the right tool among thousands without listing (or opening) them all.
//!
//! [`ToolIndex`] is built once per generation, from the registry alone: every declared tool
//! (a bridged server's from its cached listing) as its extensions leave it, indexed by its
//! name (split into words, counted twice), title, description, toolset and argument names.
//! A search ranks every indexed tool and keeps, best first, those the request's resolution
//! serves (its active set, through its filter, the caller's bound already in it), the
//! search's own filters (toolsets, annotations) and the caller's predicate (the policy's
//! rules) allow. Nothing is opened: a library tool whose schema is generated at activation
//! has its argument names indexed, and its schema answered, only once its plugin is open.

use std::collections::{HashMap, HashSet};

use bm25::{Embedder, EmbedderBuilder, Language, Scorer};
use plugin_manifest::{Annotations, ToolDecl};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{registry::Registry, selection::Resolution};

/// The name of the host's tool that searches the tools.
pub(crate) const SEARCH_TOOL: &str = "search_tools";

/// The name of the host's tool that calls a tool by name, in discovery mode.
pub(crate) const CALL_TOOL: &str = "call_tool";

/// The `_meta` key that keeps a tool in `tools/list` in discovery mode (`true`).
pub(crate) const ALWAYS_VISIBLE_META: &str = "reactor-mcp/alwaysVisible";

/// How many tools a search answers when it does not say.
const DEFAULT_LIMIT: usize = 5;

/// The most tools a search answers.
const MAX_LIMIT: usize = 50;

/// The longest one-line description a search answers, in characters.
const DESCRIPTION_CHARS: usize = 200;

/// Whether `decl` asks to stay in `tools/list` in discovery mode.
pub(crate) fn always_visible(decl: &ToolDecl) -> bool {
    decl.meta
        .as_ref()
        .and_then(|m| m.get(ALWAYS_VISIBLE_META))
        .and_then(Value::as_bool)
        == Some(true)
}

/// The arguments of `search_tools`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchRequest {
    /// What the tool should do, in words.
    pub(crate) query: String,
    /// Only tools of these toolsets.
    #[serde(default)]
    pub(crate) toolsets: Option<Vec<String>>,
    /// Only tools whose annotations have these values (`readOnlyHint`, `destructiveHint`,
    /// `idempotentHint`, `openWorldHint`).
    #[serde(default)]
    pub(crate) annotations: Option<Annotations>,
    /// How many tools to answer (default 5, at most 50).
    #[serde(default)]
    pub(crate) limit: Option<usize>,
}

impl SearchRequest {
    /// Reads the arguments of a call, naming the field that is wrong.
    pub(crate) fn from_arguments(arguments: &Map<String, Value>) -> Result<Self, String> {
        let request: Self = serde_json::from_value(Value::Object(arguments.clone()))
            .map_err(|e| format!("invalid arguments for tool `{SEARCH_TOOL}`: {e}"))?;
        if request.query.trim().is_empty() {
            return Err(format!(
                "invalid arguments for tool `{SEARCH_TOOL}`: `query` is empty; say in words what the tool should do"
            ));
        }
        Ok(request)
    }

    /// Whether a tool annotated `annotations` passes the request's annotation filter.
    fn annotations_allow(&self, annotations: &Annotations) -> bool {
        let Some(wanted) = &self.annotations else {
            return true;
        };
        let hint = |wanted: Option<bool>, has: Option<bool>| wanted.is_none_or(|w| has == Some(w));
        hint(wanted.read_only, annotations.read_only)
            && hint(wanted.destructive, annotations.destructive)
            && hint(wanted.idempotent, annotations.idempotent)
            && hint(wanted.open_world, annotations.open_world)
    }
}

/// One tool a search found, as it answers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Hit {
    /// What a client calls it.
    pub(crate) name: String,
    /// Its toolset.
    pub(crate) toolset: String,
    /// The first line of its description, shortened.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) description: String,
    /// Its arguments' schema, when known without opening its plugin.
    #[serde(rename = "inputSchema", skip_serializing_if = "Option::is_none")]
    pub(crate) input_schema: Option<Map<String, Value>>,
    /// Its annotations, when it has some.
    #[serde(skip_serializing_if = "Annotations::is_empty")]
    pub(crate) annotations: Annotations,
}

/// The answer of `search_tools`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SearchAnswer {
    /// The tools found, best first.
    pub(crate) tools: Vec<Hit>,
    /// How many tools the caller may use matched, of which `tools` are the best.
    pub(crate) matched: usize,
}

/// One indexed tool: its declaration as its extensions leave it, and its plugin.
#[derive(Debug)]
pub(crate) struct IndexedTool {
    /// The declaration, extensions applied.
    pub(crate) decl: ToolDecl,
    /// The plugin offering it.
    pub(crate) plugin: String,
}

/// The search index of one generation's declared tools.
pub struct ToolIndex {
    tools: Vec<IndexedTool>,
    /// Turns a text into its BM25 terms, fit to the tools' average length.
    embedder: Embedder,
    /// Each tool's terms, by its position in `tools`.
    scorer: Scorer<usize>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl ToolIndex {
    /// Indexes every tool `registry` declares, extensions applied.
    pub fn new(registry: &Registry) -> Self {
        let tools: Vec<IndexedTool> = registry
            .tools()
            .iter()
            .map(|t| IndexedTool {
                decl: registry.extensions().apply_to(&t.decl),
                plugin: t.plugin.clone(),
            })
            .collect();
        Self::of(tools)
    }

    /// Indexes `tools`.
    pub(crate) fn of(tools: Vec<IndexedTool>) -> Self {
        let documents: Vec<String> = tools.iter().map(|t| document(&t.decl)).collect();
        let corpus: Vec<&str> = documents.iter().map(String::as_str).collect();
        let embedder = EmbedderBuilder::with_fit_to_corpus(Language::English, &corpus).build();
        let mut scorer = Scorer::new();
        for (i, text) in corpus.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(text));
        }
        Self {
            tools,
            embedder,
            scorer,
        }
    }

    /// How many tools it holds.
    pub(crate) fn len(&self) -> usize {
        self.tools.len()
    }

    /// The tools `resolution` is served (declared in its active set, first of each name,
    /// shown by its filter) that `request` and `keep` allow, best first: at most the
    /// request's limit, and how many matched. `schema` gives a tool's schema when its manifest
    /// has none (from its plugin, if open).
    pub(crate) fn search(
        &self,
        registry: &Registry,
        resolution: &Resolution,
        request: &SearchRequest,
        keep: impl Fn(&IndexedTool) -> bool,
        schema: impl Fn(&IndexedTool) -> Option<Map<String, Value>>,
    ) -> SearchAnswer {
        let served: HashSet<(&str, &str)> = registry
            .served_tools(&resolution.active)
            .into_iter()
            .map(|t| (t.plugin.as_str(), t.decl.name.as_str()))
            .collect();
        let limit = request.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let found: Vec<&IndexedTool> = self
            .ranked(&request.query)
            .into_iter()
            .map(|i| &self.tools[i])
            .filter(|t| {
                served.contains(&(t.plugin.as_str(), t.decl.name.as_str()))
                    && resolution
                        .filter
                        .allows(&t.decl.name, t.decl.annotations.read_only == Some(true))
                    && request
                        .toolsets
                        .as_ref()
                        .is_none_or(|s| s.contains(&t.decl.toolset))
                    && request.annotations_allow(&t.decl.annotations)
                    && keep(t)
            })
            .collect();
        SearchAnswer {
            matched: found.len(),
            tools: found
                .into_iter()
                .take(limit)
                .map(|t| Hit {
                    name: t.decl.name.clone(),
                    toolset: t.decl.toolset.clone(),
                    description: one_line(&t.decl.description),
                    input_schema: t.decl.input_schema.clone().or_else(|| schema(t)),
                    annotations: t.decl.annotations,
                })
                .collect(),
        }
    }

    /// The positions of the tools matching `query`, best first (equal scores in index
    /// order, so an answer does not change between two searches).
    fn ranked(&self, query: &str) -> Vec<usize> {
        let mut found: Vec<(f32, usize)> = self
            .scorer
            .matches(&self.embedder.embed(&words_of(query)))
            .into_iter()
            .map(|r| (r.score, r.id))
            .collect();
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        found.into_iter().map(|(_, i)| i).collect()
    }

    /// The indexed tool called `name` that `resolution` is served, if any.
    pub(crate) fn served<'a>(
        &'a self,
        registry: &Registry,
        resolution: &Resolution,
        name: &str,
    ) -> Option<&'a IndexedTool> {
        let entry = registry
            .served_tools(&resolution.active)
            .into_iter()
            .find(|t| t.decl.name == name)?;
        self.tools
            .iter()
            .find(|t| t.plugin == entry.plugin && t.decl.name == name)
            .filter(|t| {
                resolution
                    .filter
                    .allows(name, t.decl.annotations.read_only == Some(true))
            })
    }

    /// The tools `resolution` is served that ask to stay listed in discovery mode, in order.
    pub(crate) fn always_visible<'a>(
        &'a self,
        registry: &Registry,
        resolution: &Resolution,
    ) -> Vec<&'a IndexedTool> {
        let by_name: HashMap<(&str, &str), &IndexedTool> = self
            .tools
            .iter()
            .filter(|t| always_visible(&t.decl))
            .map(|t| ((t.plugin.as_str(), t.decl.name.as_str()), t))
            .collect();
        registry
            .served_tools(&resolution.active)
            .into_iter()
            .filter_map(|t| {
                by_name
                    .get(&(t.plugin.as_str(), t.decl.name.as_str()))
                    .copied()
            })
            .filter(|t| {
                resolution
                    .filter
                    .allows(&t.decl.name, t.decl.annotations.read_only == Some(true))
            })
            .collect()
    }
}

/// One search of `query` for at most `limit` tools over every toolset of `registry`, as
/// `/mcp?discover` runs it without filters or bound: the answer, as `search_tools` gives it.
/// (For the benchmarks.)
pub fn search_everything(
    index: &ToolIndex,
    registry: &Registry,
    query: &str,
    limit: usize,
) -> Value {
    let resolution = crate::selection::resolve(
        &crate::selection::Query::parse("discover"),
        &registry.declared(),
        None,
    );
    let request = SearchRequest {
        query: query.to_owned(),
        limit: Some(limit),
        ..SearchRequest::default()
    };
    let answer = index.search(registry, &resolution, &request, |_| true, |_| None);
    serde_json::to_value(answer).unwrap_or_default()
}

/// The text a tool is found by: its name's words twice (a name says most), its title,
/// description and toolset, and its arguments' names.
fn document(decl: &ToolDecl) -> String {
    let name = words_of(&decl.name);
    let arguments = decl
        .input_schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().map(|k| words_of(k)).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    [
        name.as_str(),
        name.as_str(),
        decl.title.as_deref().unwrap_or_default(),
        &decl.description,
        &words_of(&decl.toolset),
        &arguments,
    ]
    .join(" ")
}

/// `text` with identifiers split into words: `list_pull_requests`, `tiny__echo`,
/// `getWeather` and `pull-request` become words a tokenizer stems like prose.
pub(crate) fn words_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut previous: Option<char> = None;
    for c in text.chars() {
        if matches!(c, '_' | '-' | '.' | '/' | ':') {
            out.push(' ');
        } else {
            if c.is_uppercase() && previous.is_some_and(char::is_lowercase) {
                out.push(' ');
            }
            out.push(c);
        }
        previous = Some(c);
    }
    out
}

/// The first line of `description`, at most [`DESCRIPTION_CHARS`] characters.
fn one_line(description: &str) -> String {
    let line = description.trim().lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(DESCRIPTION_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, toolset: &str, description: &str, schema: Value) -> IndexedTool {
        IndexedTool {
            decl: serde_json::from_value(json!({
                "name": name, "toolset": toolset, "description": description,
                "input_schema": schema,
            }))
            .unwrap(),
            plugin: toolset.to_owned(),
        }
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(words_of("list_pull_requests"), "list pull requests");
        assert_eq!(words_of("getWeather"), "get Weather");
        assert_eq!(words_of("tiny__echo"), "tiny  echo");
    }

    #[test]
    fn a_long_description_is_cut_to_its_first_line() {
        assert_eq!(one_line("First.\nSecond."), "First.");
        assert_eq!(
            one_line(&"a".repeat(300)).chars().count(),
            DESCRIPTION_CHARS + 1
        );
    }

    #[test]
    fn names_descriptions_and_argument_names_rank_tools() {
        let index = ToolIndex::of(vec![
            tool(
                "list_issues",
                "tracker",
                "List the open issues of a repository.",
                json!({"type": "object", "properties": {"repository": {}}}),
            ),
            tool(
                "get_weather",
                "weather",
                "Today's forecast for a city.",
                json!({"type": "object", "properties": {"city_name": {}}}),
            ),
            tool(
                "send_mail",
                "mail",
                "Send an email message.",
                json!({"type": "object", "properties": {"recipient": {}}}),
            ),
        ]);
        let best =
            |query: &str| (index.ranked(query).first()).map(|&i| index.tools[i].decl.name.clone());
        assert_eq!(
            best("which issues are open").as_deref(),
            Some("list_issues")
        );
        assert_eq!(best("forecast in Paris").as_deref(), Some("get_weather"));
        assert_eq!(best("email someone").as_deref(), Some("send_mail"));
        assert_eq!(best("recipient").as_deref(), Some("send_mail"));
    }

    #[test]
    fn the_annotation_filter_needs_each_given_hint() {
        let request = SearchRequest {
            query: "x".into(),
            annotations: Some(Annotations {
                read_only: Some(true),
                ..Annotations::default()
            }),
            ..SearchRequest::default()
        };
        assert!(request.annotations_allow(&Annotations {
            read_only: Some(true),
            ..Annotations::default()
        }));
        assert!(!request.annotations_allow(&Annotations::default()));
    }

    #[test]
    fn an_empty_query_is_refused_naming_the_field() {
        let error = SearchRequest::from_arguments(&Map::new()).unwrap_err();
        assert!(error.contains("query"), "{error}");
        let error =
            SearchRequest::from_arguments(json!({"query": " "}).as_object().unwrap()).unwrap_err();
        assert!(error.contains("`query` is empty"), "{error}");
    }
}
