//! `reactor-mcp-server graph`: what a server is made of, drawn from manifests alone.
//!
//! Plugins point to the toolsets they declare, toolsets to their tools; each extension is a
//! node of its own, pointed to by the plugin that declares it and pointing to the tool it
//! extends. An extension of a tool no plugin declares (pending) points to a dashed "missing"
//! node instead. [`render`] is a pure function of the [`Registry`]: it opens nothing. Two
//! formats: Graphviz `dot` (the default) and Mermaid `flowchart`, which GitHub renders in
//! Markdown.
//!
//! Node ids are `p<N>` (plugins, load order), `s<N>` (toolsets, by name), `t<N>` (tools, load
//! then declaration order), `x<N>` (extensions, applied order per tool) and `m<N>` (missing
//! tools), so the output is stable for one folder and easy to read back.

use std::{collections::BTreeMap, fmt, fmt::Write, str::FromStr};

use crate::{discovery::Provider, registry::Registry};

/// An output format of `graph`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Format {
    /// Graphviz: `dot -Tsvg`.
    #[default]
    Dot,
    /// A Mermaid `flowchart`.
    Mermaid,
}

/// A graph format this host does not draw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown graph format `{0}`: expected dot or mermaid")]
pub(crate) struct UnknownFormat(String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "dot" => Ok(Self::Dot),
            "mermaid" => Ok(Self::Mermaid),
            other => Err(UnknownFormat(other.to_owned())),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Dot => "dot",
            Self::Mermaid => "mermaid",
        })
    }
}

/// The graph of `registry` in `format`.
pub(crate) fn render(registry: &Registry, format: Format) -> String {
    let graph = Graph::new(registry);
    match format {
        Format::Dot => graph.dot(),
        Format::Mermaid => graph.mermaid(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plugin,
    Toolset,
    Tool,
    Extension,
    Missing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Declares: plugin to toolset, toolset to tool, plugin to extension.
    Plain,
    /// An extension to the tool it extends.
    Extends,
    /// An extension to a tool nobody offers.
    Pending,
}

#[derive(Debug)]
struct Node {
    id: String,
    kind: Kind,
    /// Lines of the label.
    label: Vec<String>,
}

impl Node {
    /// The label's lines, each escaped, joined by `separator`.
    fn label(&self, escape: fn(&str) -> String, separator: &str) -> String {
        self.label
            .iter()
            .map(|line| escape(line))
            .collect::<Vec<_>>()
            .join(separator)
    }
}

#[derive(Debug)]
struct Edge {
    from: String,
    to: String,
    line: Line,
}

#[derive(Debug, Default)]
struct Graph {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
}

impl Graph {
    fn new(registry: &Registry) -> Self {
        let mut graph = Self::default();
        let mut plugins = BTreeMap::new();
        for (i, p) in registry.plugins().iter().enumerate() {
            let id = format!("p{i}");
            let m = &p.manifest;
            let label = match p.provider {
                Provider::Library => format!("{} {}", m.name, m.version),
                Provider::Bridged { .. } => {
                    format!("{} (MCP server, {})", m.name, p.path.display())
                }
                Provider::Isolated { .. } => format!("{} {} (isolated)", m.name, m.version),
            };
            graph.node(&id, Kind::Plugin, [label]);
            plugins.insert(m.name.as_str(), id);
        }
        let mut toolsets = BTreeMap::new();
        for (i, t) in registry.toolsets().enumerate() {
            let id = format!("s{i}");
            graph.node(&id, Kind::Toolset, [format!("toolset {}", t.decl.name)]);
            for p in registry.plugins() {
                if p.manifest.toolset(&t.decl.name).is_some() {
                    graph.edge(&plugins[p.manifest.name.as_str()], &id, Line::Plain);
                }
            }
            toolsets.insert(t.decl.name.as_str(), id);
        }
        let mut tools: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (i, t) in registry.tools().iter().enumerate() {
            let id = format!("t{i}");
            graph.node(&id, Kind::Tool, [t.decl.name.clone()]);
            if let Some(toolset) = toolsets.get(t.decl.toolset.as_str()) {
                graph.edge(toolset, &id, Line::Plain);
            }
            tools.entry(t.decl.name.as_str()).or_default().push(id);
        }
        let mut missing: BTreeMap<&str, String> = BTreeMap::new();
        for (i, e) in registry.extensions().all().iter().enumerate() {
            let id = format!("x{i}");
            graph.node(
                &id,
                Kind::Extension,
                [
                    format!("{} (order {})", e.plugin, e.decl.order),
                    e.decl.changes().join(", "),
                ],
            );
            if let Some(plugin) = plugins.get(e.plugin.as_str()) {
                graph.edge(plugin, &id, Line::Plain);
            }
            match tools.get(e.decl.tool.as_str()) {
                Some(targets) => {
                    for target in targets {
                        graph.edge(&id, target, Line::Extends);
                    }
                }
                None => {
                    let next = missing.len();
                    let target = missing.entry(e.decl.tool.as_str()).or_insert_with(|| {
                        let id = format!("m{next}");
                        graph.nodes.push(Node {
                            id: id.clone(),
                            kind: Kind::Missing,
                            label: vec![e.decl.tool.clone(), "(no plugin offers it)".to_owned()],
                        });
                        id
                    });
                    let target = target.clone();
                    graph.edge(&id, &target, Line::Pending);
                }
            }
        }
        graph
    }

    fn node<const N: usize>(&mut self, id: &str, kind: Kind, label: [String; N]) {
        self.nodes.push(Node {
            id: id.to_owned(),
            kind,
            label: label.into(),
        });
    }

    fn edge(&mut self, from: &str, to: &str, line: Line) {
        self.edges.push(Edge {
            from: from.to_owned(),
            to: to.to_owned(),
            line,
        });
    }

    fn dot(&self) -> String {
        let mut out =
            String::from("digraph reactor {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n");
        for n in &self.nodes {
            let label = n.label(|l| l.replace('\\', "\\\\").replace('"', "\\\""), "\\n");
            let shape = match n.kind {
                Kind::Plugin => "shape=box",
                Kind::Toolset => "shape=folder",
                Kind::Tool => "shape=ellipse",
                Kind::Extension => "shape=note",
                Kind::Missing => "shape=ellipse, style=dashed",
            };
            let _ = writeln!(out, "  {} [label=\"{label}\", {shape}];", n.id);
        }
        for e in &self.edges {
            let style = match e.line {
                Line::Plain => "",
                Line::Extends => " [style=bold, label=\"extends\"]",
                Line::Pending => " [style=dashed, label=\"pending\"]",
            };
            let _ = writeln!(out, "  {} -> {}{style};", e.from, e.to);
        }
        out.push_str("}\n");
        out
    }

    fn mermaid(&self) -> String {
        let mut out = String::from("flowchart LR\n");
        for n in &self.nodes {
            let label = n.label(|l| l.replace('"', "#quot;"), "<br/>");
            let (open, close) = match n.kind {
                Kind::Plugin => ("[", "]"),
                Kind::Toolset => ("[/", "/]"),
                Kind::Tool | Kind::Missing => ("([", "])"),
                Kind::Extension => ("{{", "}}"),
            };
            let _ = writeln!(out, "  {}{open}\"{label}\"{close}", n.id);
        }
        for e in &self.edges {
            let arrow = match e.line {
                Line::Plain => "-->",
                Line::Extends => "==>|extends|",
                Line::Pending => "-.->|pending|",
            };
            let _ = writeln!(out, "  {} {arrow} {}", e.from, e.to);
        }
        let missing: Vec<&str> = self
            .nodes
            .iter()
            .filter(|n| n.kind == Kind::Missing)
            .map(|n| n.id.as_str())
            .collect();
        if !missing.is_empty() {
            out.push_str("  classDef missing stroke-dasharray: 5 5\n");
            let _ = writeln!(out, "  class {} missing", missing.join(","));
        }
        out
    }
}

#[cfg(test)]
mod tests {

    use plugin_manifest::Manifest;

    use super::*;
    use crate::discovery::DiscoveredPlugin;

    fn plugin(json: &str) -> DiscoveredPlugin {
        let manifest = Manifest::from_json(json).unwrap();
        DiscoveredPlugin::library(format!("{}.so", manifest.name), manifest)
    }

    #[test]
    fn a_bridged_server_is_drawn_as_one_with_its_file() {
        let server = crate::discovery::servers::cache::tests::server("search", "http://h/mcp");
        let cache = crate::discovery::servers::cache::ToolCache::new(None);
        let listed = crate::discovery::servers::cache::CachedListing {
            server: "search".to_owned(),
            read_at: 0,
            listing: crate::discovery::servers::cache::Listing {
                tools: vec![rmcp::model::Tool::new(
                    "find",
                    "Finds.",
                    std::sync::Arc::new(serde_json::Map::new()),
                )],
                ..Default::default()
            },
        };
        let plugin = DiscoveredPlugin {
            path: "plugins/mcp.json".into(),
            manifest: crate::discovery::servers::manifest::manifest(&server, Some(&listed)),
            provider: Provider::Bridged {
                server: std::sync::Arc::new(server),
                cache,
            },
            stamp: None,
            checked: None,
        };
        let registry = Registry::new(vec![plugin]);
        let dot = render(&registry, Format::Dot);
        assert!(
            dot.contains("search (MCP server, plugins/mcp.json)"),
            "{dot}"
        );
        assert!(!dot.contains("search mcp.json"), "{dot}");
        let tools = crate::reports::ContributionsReport::new(&registry).tools;
        assert_eq!(tools[0].name, "search__find");
        assert_eq!(
            (tools[0].provider, tools[0].file.to_str()),
            ("mcp.json", Some("plugins/mcp.json"))
        );
    }

    /// The first-party pair: a plugin with a tool, and one extending it and a missing tool.
    fn registry() -> Registry {
        Registry::new(vec![
            plugin(
                r#"{"abi":"0.1.0","name":"sandboxes","version":"0.1.0",
                    "toolsets":[{"name":"sandboxes"}],
                    "tools":[{"name":"launch_sandbox","toolset":"sandboxes"},
                             {"name":"list_sandboxes","toolset":"sandboxes"}]}"#,
            ),
            plugin(
                r#"{"abi":"0.1.0","name":"sandboxes-datalayer","version":"0.1.0",
                    "extends":[{"tool":"launch_notebook","description":"d"},
                               {"tool":"launch_sandbox","wrap":true,"description":"d",
                                "input_schema":{"type":"object"}}]}"#,
            ),
        ])
    }

    /// `(from, to, rest)` of each `from -> to rest;` line of a dot graph.
    fn dot_edges(dot: &str) -> Vec<(String, String, String)> {
        dot.lines()
            .filter_map(|l| {
                let (from, rest) = l.trim().trim_end_matches(';').split_once(" -> ")?;
                let (to, attrs) = rest.split_once(' ').unwrap_or((rest, ""));
                Some((from.to_owned(), to.to_owned(), attrs.to_owned()))
            })
            .collect()
    }

    /// The label of node `id` in a dot graph.
    fn dot_label(dot: &str, id: &str) -> String {
        let prefix = format!("  {id} [label=\"");
        let line = dot
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no node {id} in\n{dot}"));
        line[prefix.len()..]
            .split("\", ")
            .next()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn dot_draws_plugins_toolsets_tools_and_extensions() {
        let dot = render(&registry(), Format::Dot);
        assert!(dot.starts_with("digraph reactor {\n"), "{dot}");
        assert!(dot.ends_with("}\n"), "{dot}");
        assert_eq!(dot_label(&dot, "p0"), "sandboxes 0.1.0");
        assert_eq!(dot_label(&dot, "s0"), "toolset sandboxes");
        assert_eq!(dot_label(&dot, "t0"), "launch_sandbox");
        // Extensions are grouped by tool name: launch_notebook's comes first.
        assert_eq!(
            dot_label(&dot, "x1"),
            "sandboxes-datalayer (order 0)\\nwrap, description, input_schema"
        );
        assert_eq!(
            dot_label(&dot, "m0"),
            "launch_notebook\\n(no plugin offers it)"
        );
        let edges = dot_edges(&dot);
        let has = |from: &str, to: &str, attrs: &str| {
            edges
                .iter()
                .any(|(f, t, a)| f == from && t == to && a == attrs)
        };
        assert!(has("p0", "s0", ""), "{dot}");
        assert!(has("s0", "t0", ""), "{dot}");
        assert!(has("s0", "t1", ""), "{dot}");
        assert!(has("p1", "x0", ""), "{dot}");
        assert!(has("p1", "x1", ""), "{dot}");
        assert!(has("x1", "t0", "[style=bold, label=\"extends\"]"), "{dot}");
        assert!(
            has("x0", "m0", "[style=dashed, label=\"pending\"]"),
            "{dot}"
        );
        assert_eq!(edges.len(), 7, "{dot}");
        assert!(dot.contains(
            "  m0 [label=\"launch_notebook\\n(no plugin offers it)\", shape=ellipse, style=dashed];"
        ));
    }

    #[test]
    fn mermaid_draws_the_same_graph() {
        let mermaid = render(&registry(), Format::Mermaid);
        let lines: Vec<&str> = mermaid.lines().collect();
        assert_eq!(lines[0], "flowchart LR");
        for expected in [
            "  p0[\"sandboxes 0.1.0\"]",
            "  s0[/\"toolset sandboxes\"/]",
            "  t0([\"launch_sandbox\"])",
            "  x1{{\"sandboxes-datalayer (order 0)<br/>wrap, description, input_schema\"}}",
            "  m0([\"launch_notebook<br/>(no plugin offers it)\"])",
            "  p0 --> s0",
            "  s0 --> t0",
            "  p1 --> x1",
            "  x1 ==>|extends| t0",
            "  x0 -.->|pending| m0",
            "  class m0 missing",
        ] {
            assert!(lines.contains(&expected), "no `{expected}` in\n{mermaid}");
        }
    }

    #[test]
    fn labels_are_escaped() {
        let registry = Registry::new(vec![plugin(
            r#"{"abi":"0.1.0","name":"q\"uote","version":"1"}"#,
        )]);
        assert!(render(&registry, Format::Dot).contains(r#"p0 [label="q\"uote 1", shape=box];"#));
        assert!(render(&registry, Format::Mermaid).contains(r#"p0["q#quot;uote 1"]"#));
    }

    #[test]
    fn formats_parse_and_print() {
        assert_eq!("mermaid".parse::<Format>(), Ok(Format::Mermaid));
        assert_eq!(Format::default().to_string(), "dot");
        assert!("svg".parse::<Format>().is_err());
    }
}
