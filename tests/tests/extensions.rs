//! Tool extensions end to end: the real host binary, real plugin libraries (the first-party
//! `sandboxes` and `sandboxes-datalayer`, and the `fixture-base` / `fixture-ext-*` fixtures),
//! and rmcp's own client over streamable HTTP.
//!
//! One test each: the narrowed `launch_sandbox`; composition in the
//! documented order whatever the file names; a description-only extension never opening its
//! library while a wrapping one opens only once a URL serves its target; meta merge and
//! fields left out; replacing without calling; the pending extension in `list --json` and
//! `/contributions`; a failing wrap dropping only its tool; `graph` parsed.

use std::time::Duration;

use e2e::{
    HostProcess, PluginDir, library_file_name,
    mcp::{Client, call_tool, connect, get_ok_json, tool_names},
    run_host,
};
use rmcp::{
    ServiceError,
    model::{CallToolRequestParams, ErrorCode},
};
use serde_json::{Value, json};

/// An initialised MCP client of `base` + `path_and_query`.
async fn client(host: &HostProcess, path_and_query: &str) -> Client {
    connect(&format!("{}{path_and_query}", host.base_url())).await
}

/// `tools/list`, each tool as its JSON, by name.
async fn listed(client: &Client) -> Vec<Value> {
    client
        .list_all_tools()
        .await
        .expect("tools/list answers")
        .into_iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect()
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool `{name}` in {tools:#?}"))
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

/// Calls `name`, expects success, and returns its result as JSON (structured content, or the
/// text parsed as JSON).
async fn answer(client: &Client, name: &str, arguments: Value) -> Value {
    let result = call_tool(client, name, arguments).await;
    assert_eq!(result.is_error, Some(false), "{name}: {result:?}");
    if let Some(structured) = result.structured_content {
        return structured;
    }
    let wire = serde_json::to_value(&result).unwrap();
    let text = wire["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// `GET base/path` as JSON, which must answer 200.
async fn get_json(host: &HostProcess, path: &str) -> Value {
    get_ok_json(&format!("{}{path}", host.base_url())).await
}

/// What `fixture-base`'s `trace` answers through `fixture-ext-a` and `fixture-ext-b`, in the
/// documented order: ext-b/0 (order 0), ext-a/0 (order 5, `ext-a` < `ext-b`), ext-b/1 and
/// ext-b/2 (order 5, declaration order). The last applied, ext-b/2, is the outermost.
const COMPOSED: &[&str] = &[
    "in:ext-b/2",
    "in:ext-b/1",
    "in:ext-a/0",
    "in:ext-b/0",
    "base",
    "out:ext-b/0",
    "out:ext-a/0",
    "out:ext-b/1",
    "out:ext-b/2",
];

#[tokio::test(flavor = "multi_thread")]
async fn sandboxes_on_datalayer_narrow_launch_sandbox() {
    sandboxes_on_datalayer_narrow_launch_sandbox_in(&[]).await;
}

/// The same with `sandboxes` isolated: the in-process wrapper calls the original in its child.
#[tokio::test(flavor = "multi_thread")]
async fn sandboxes_on_datalayer_narrow_launch_sandbox_when_sandboxes_is_isolated() {
    sandboxes_on_datalayer_narrow_launch_sandbox_in(&["--isolate", "sandboxes"]).await;
}

async fn sandboxes_on_datalayer_narrow_launch_sandbox_in(host_args: &[&str]) {
    let dir = PluginDir::with(&["sandboxes", "sandboxes-datalayer"]);
    let host = HostProcess::serve(&dir, host_args);
    let client = client(&host, "/mcp").await;

    let tools = listed(&client).await;
    let launch = tool(&tools, "launch_sandbox");
    assert!(
        launch["description"]
            .as_str()
            .unwrap()
            .starts_with("Launch a sandbox on Datalayer"),
        "{launch}"
    );
    assert_eq!(launch["title"], "Launch Sandbox", "the title is kept");
    assert_eq!(launch.get("annotations"), None, "no annotations, as before");
    let schema = &launch["inputSchema"];
    assert_eq!(schema["required"], json!(["sandbox_name"]));
    assert_eq!(schema["properties"]["environment"]["default"], "ai-env");
    assert_eq!(schema["properties"].get("variant"), None, "{schema}");
    assert!(
        !names(&tools).contains(&"launch_notebook"),
        "a pending extension adds no tool"
    );

    let sandbox = answer(&client, "launch_sandbox", json!({"sandbox_name": "a"})).await;
    assert_eq!(
        sandbox,
        json!({"id": "sbx-1", "name": "a", "variant": "datalayer", "status": "running",
               "environment": "ai-env"})
    );
    let sandbox = answer(
        &client,
        "launch_sandbox",
        json!({"sandbox_name": "b", "environment": "gpu-env"}),
    )
    .await;
    assert_eq!(sandbox["variant"], "datalayer");
    assert_eq!(sandbox["environment"], "gpu-env");

    // The narrowed schema is the one checked: the original's `variant` is gone.
    let refused = call_tool(
        &client,
        "launch_sandbox",
        json!({"sandbox_name": "c", "variant": "eval"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true));
    // The original tool's state is the one the wrapper launched into.
    let all = answer(&client, "list_sandboxes", json!({})).await;
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
}

/// Serves `dir` (with `host_args`), calls `trace` and reads the order `/contributions` gives.
async fn composition(dir: &PluginDir, host_args: &[&str]) -> (Value, Vec<(String, u64)>) {
    let host = HostProcess::serve(dir, host_args);
    let client = client(&host, "/mcp").await;
    let traced = answer(&client, "trace", json!({"path": []})).await;
    let contributions = get_json(&host, "/contributions").await;
    let trace = contributions["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "trace")
        .unwrap();
    let order = trace["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["plugin"].as_str().unwrap().to_owned(),
                e["index"].as_u64().unwrap(),
            )
        })
        .collect();
    (traced, order)
}

#[tokio::test(flavor = "multi_thread")]
async fn extensions_compose_in_the_documented_order_whatever_the_file_names() {
    let expected_order = vec![
        ("ext-b".to_owned(), 0),
        ("ext-a".to_owned(), 0),
        ("ext-b".to_owned(), 1),
        ("ext-b".to_owned(), 2),
    ];

    let named = PluginDir::with(&["fixture-base", "fixture-ext-a", "fixture-ext-b"]);
    let (traced, order) = composition(&named, &[]).await;
    assert_eq!(traced, json!(COMPOSED));
    assert_eq!(order, expected_order);
    // With the extended plugin in a child process, the wraps compose around its tool alike.
    let (traced, order) = composition(&named, &["--isolate", "base"]).await;
    assert_eq!(traced, json!(COMPOSED));
    assert_eq!(order, expected_order);

    // The same libraries under each other's file names (and copied in the other order), so
    // discovery's file-name order is reversed.
    let swapped = PluginDir::new();
    swapped.add_as("fixture-ext-b", &library_file_name("fixture_ext_a"));
    swapped.add_as("fixture-ext-a", &library_file_name("fixture_ext_b"));
    swapped.add("fixture-base");
    let listing: Value = run_host(&["list", "--json"], &swapped)
        .assert_success()
        .json();
    let load_order: Vec<&str> = listing["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(load_order, ["base", "ext-b", "ext-a"], "the swap took");
    let (traced, order) = composition(&swapped, &[]).await;
    assert_eq!(traced, json!(COMPOSED));
    assert_eq!(order, expected_order);
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn a_description_only_extension_never_opens_its_library_a_wrap_only_when_served() {
    let dir = PluginDir::with(&["fixture-base", "fixture-ext-describe", "fixture-ext-a"]);
    let host = HostProcess::serve(&dir, &[]);
    assert!(
        host.mapped_plugin_file_names(&dir).is_empty(),
        "at start-up"
    );

    // `quiet` holds base's one tool nobody extends: ext-a is not needed yet.
    let quiet = client(&host, "/mcp?only=quiet").await;
    assert_eq!(
        names(&listed(&quiet).await),
        ["plain", "list_server_toolsets"]
    );
    assert_eq!(
        host.mapped_plugin_file_names(&dir),
        [library_file_name("fixture_base")],
        "serving `plain`"
    );

    // `/mcp` serves `trace` (wrapped by ext-a) and `described` (re-described by ext-describe).
    let all = client(&host, "/mcp").await;
    let tools = listed(&all).await;
    assert_eq!(
        tool(&tools, "described")["description"],
        "Described again, by ext-describe."
    );
    assert_eq!(
        answer(&all, "trace", json!({"path": []})).await,
        json!(["in:ext-a/0", "base", "out:ext-a/0"])
    );
    assert_eq!(
        host.mapped_plugin_file_names(&dir),
        [
            library_file_name("fixture_base"),
            library_file_name("fixture_ext_a")
        ],
        "serving `trace` opened ext-a; ext-describe stays closed"
    );
    let health = get_json(&host, "/healthz").await;
    assert_eq!(health["opened"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn meta_merges_and_fields_left_out_keep_the_tools() {
    let dir = PluginDir::with(&["fixture-base", "fixture-ext-describe"]);
    let host = HostProcess::serve(&dir, &[]);
    let tools = listed(&client(&host, "/mcp").await).await;
    assert_eq!(
        *tool(&tools, "described"),
        json!({
            "name": "described",
            "title": "Described",
            "description": "Described again, by ext-describe.",
            "inputSchema": {"type": "object", "additionalProperties": false},
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
            "_meta": {"keep": "base", "over": "ext-describe", "added": true}
        })
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replacing_extension_answers_without_calling_the_original() {
    let dir = PluginDir::with(&["fixture-base", "fixture-ext-replace"]);
    let host = HostProcess::serve(&dir, &[]);
    let client = client(&host, "/mcp").await;
    let tools = listed(&client).await;
    assert_eq!(
        tool(&tools, "list_things")["description"],
        "List the things ext-replace knows of."
    );
    assert_eq!(
        answer(&client, "list_things", json!({})).await,
        json!(["from ext-replace"])
    );
    assert_eq!(answer(&client, "things_listed", json!({})).await, json!(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pending_extension_is_listed_and_never_applied() {
    let dir = PluginDir::with(&["sandboxes", "sandboxes-datalayer"]);
    let listing: Value = run_host(&["list", "--json"], &dir).assert_success().json();
    assert_eq!(
        listing["pending"],
        json!([{"tool": "launch_notebook", "plugin": "sandboxes-datalayer", "index": 0,
                "order": 0, "wrap": false, "changes": ["description"]}])
    );
    let plugins = listing["plugins"].as_array().unwrap();
    let datalayer = plugins
        .iter()
        .find(|p| p["name"] == "sandboxes-datalayer")
        .unwrap();
    assert_eq!(datalayer["toolsets"], json!([]));
    let extends: Vec<(&str, bool)> = datalayer["extends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["tool"].as_str().unwrap(), e["pending"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        extends,
        [("launch_notebook", true), ("launch_sandbox", false)]
    );
    let sandboxes = plugins.iter().find(|p| p["name"] == "sandboxes").unwrap();
    assert_eq!(
        sandboxes["tools"][0]["extensions"],
        json!([{"plugin": "sandboxes-datalayer", "index": 1, "order": 0, "wrap": true,
                "changes": ["wrap", "description", "input_schema"]}])
    );
    let text = run_host(&["list"], &dir).assert_success().stdout.clone();
    assert!(
        text.contains("launch_notebook <- sandboxes-datalayer (order 0): description"),
        "{text}"
    );

    let host = HostProcess::serve(&dir, &[]);
    let contributions = get_json(&host, "/contributions").await;
    assert_eq!(contributions["pending"], listing["pending"]);
    let extensions_of = |name: &str| {
        contributions["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {contributions}"))["extensions"]
            .clone()
    };
    assert_eq!(
        extensions_of("launch_sandbox"),
        sandboxes["tools"][0]["extensions"]
    );
    assert_eq!(extensions_of("list_sandboxes"), json!([]));
    assert_eq!(
        get_json(&host, "/healthz").await["opened"],
        0,
        "/contributions opens nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_wrap_drops_only_that_tool() {
    // ext-broken's wrap of `fragile` returns an error, its wrap of `fragile_panic` panics, and
    // ext-unopenable (which wraps `trace`) cannot be started at all.
    let dir = PluginDir::with(&[
        "fixture-base",
        "fixture-ext-broken",
        "fixture-ext-unopenable",
    ]);
    let mut host = HostProcess::serve(&dir, &[]);
    let client = client(&host, "/mcp").await;
    let tools = listed(&client).await;
    assert_eq!(
        names(&tools),
        [
            "described",
            "list_things",
            "things_listed",
            "list_server_toolsets"
        ]
    );
    for (tool, reason) in [
        (
            "fragile",
            "plugin `ext-broken` failed: ext-broken will not wrap fragile",
        ),
        (
            "fragile_panic",
            "plugin `ext-broken` failed: wrapping tool fragile_panic panicked: \
             ext-broken cannot wrap fragile_panic",
        ),
        (
            "trace",
            "plugin `ext-unopenable` failed: plugin `ext-unopenable` failed to start: \
             instantiate panicked: ext-unopenable refuses to start",
        ),
    ] {
        let warning = host.wait_for_stderr(
            &format!("tool `{tool}` (plugin `base`) is not served here"),
            Duration::from_secs(5),
        );
        assert!(warning.contains(reason), "{warning}");
    }
    match client
        .call_tool(CallToolRequestParams::new("fragile"))
        .await
    {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            let hint = error.data.unwrap()["hint"].as_str().unwrap().to_owned();
            assert!(hint.contains("an extension of it failed"), "{hint}");
        }
        other => panic!("fragile should be unknown here, got {other:?}"),
    }
    assert_eq!(
        answer(&client, "described", json!({})).await,
        json!("described")
    );
    // Other URLs are untouched.
    let quiet = client_names(&host, "/mcp?only=quiet").await;
    assert_eq!(quiet, ["plain", "list_server_toolsets"]);
}

async fn client_names(host: &HostProcess, path_and_query: &str) -> Vec<String> {
    let client = client(host, path_and_query).await;
    tool_names(&client).await
}

/// Pairs of strings: `(from, to)` edges, or `(id, label)` nodes.
type Pairs = Vec<(String, String)>;

/// `(from, to)` of each edge line of a dot graph, and each node id with its label.
fn parse_dot(dot: &str) -> (Pairs, Pairs) {
    let mut edges = Vec::new();
    let mut nodes = Vec::new();
    for line in dot.lines().map(str::trim) {
        if let Some((from, rest)) = line.split_once(" -> ") {
            let to = rest.trim_end_matches(';').split(' ').next().unwrap();
            edges.push((from.to_owned(), to.to_owned()));
        } else if let Some((id, rest)) = line.split_once(" [label=\"") {
            let label = rest.split("\", ").next().unwrap().replace("\\n", " ");
            nodes.push((id.to_owned(), label));
        }
    }
    (edges, nodes)
}

#[test]
fn graph_draws_the_first_party_plugins_with_the_pending_extension_dangling() {
    let dir = PluginDir::with(&["sandboxes", "sandboxes-datalayer", "benchmarks"]);
    let dot = run_host(&["graph"], &dir).assert_success().stdout.clone();
    assert!(dot.starts_with("digraph reactor {"), "{dot}");
    let (edges, nodes) = parse_dot(&dot);
    let id = |label: &str| -> String {
        nodes
            .iter()
            .find(|(_, l)| l == label)
            .unwrap_or_else(|| panic!("no node `{label}` in\n{dot}"))
            .0
            .clone()
    };
    let edge = |from: &str, to: &str| edges.contains(&(from.to_owned(), to.to_owned()));

    let sandboxes = id("sandboxes 0.1.0");
    let datalayer = id("sandboxes-datalayer 0.1.0");
    let toolset = id("toolset sandboxes");
    let launch = id("launch_sandbox");
    assert!(edge(&sandboxes, &toolset), "{dot}");
    assert!(edge(&toolset, &launch), "{dot}");
    assert!(edge(&id("toolset benchmarks"), &id("echo")), "{dot}");

    let narrowing = id("sandboxes-datalayer (order 0) wrap, description, input_schema");
    assert!(edge(&datalayer, &narrowing), "{dot}");
    assert!(edge(&narrowing, &launch), "{dot}");

    let re_description = id("sandboxes-datalayer (order 0) description");
    let missing = id("launch_notebook (no plugin offers it)");
    assert!(edge(&datalayer, &re_description), "{dot}");
    assert!(edge(&re_description, &missing), "{dot}");
    assert!(
        !edges.iter().any(|(from, _)| *from == missing),
        "the missing tool dangles: nothing leads on from it\n{dot}"
    );
    assert!(
        dot.contains(&format!(
            "{missing} [label=\"launch_notebook\\n(no plugin offers it)\", shape=ellipse, style=dashed];"
        )),
        "{dot}"
    );
    assert!(
        !edges.iter().any(|(_, to)| *to == datalayer),
        "sandboxes-datalayer declares no toolset"
    );

    let mermaid = run_host(&["graph", "--format", "mermaid"], &dir)
        .assert_success()
        .stdout
        .clone();
    let lines: Vec<&str> = mermaid.lines().map(str::trim).collect();
    assert_eq!(lines[0], "flowchart LR");
    for expected in [
        format!("{narrowing} ==>|extends| {launch}"),
        format!("{re_description} -.->|pending| {missing}"),
        format!("{sandboxes} --> {toolset}"),
        format!("class {missing} missing"),
    ] {
        assert!(
            lines.contains(&expected.as_str()),
            "no `{expected}` in\n{mermaid}"
        );
    }
}
