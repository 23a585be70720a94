//! Tool filters end to end: `tools=`, `exclude_tools=` and `readonly` in the URL, the same as
//! `X-MCP-*` headers, and the operator's `--tools`, `--exclude-tools` and `--read-only` bounds,
//! through the real host binary and rmcp's own client. `GET /toolsets` answers what `tools/list`
//! answers for every row of the selection table and every filter; a hidden tool is unknown
//! exactly as a tool of an unselected toolset is; resources and prompts follow the toolsets.
//! Over stdio, `--toolsets`' filter keys and the bounds filter alike.

use std::collections::HashMap;

use e2e::{
    HostProcess, PluginDir, host_command,
    mcp::{Client, call, connect, get_ok_json, strings, tool_names},
};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::{
    ServiceError, ServiceExt,
    model::{ClientConfig, ErrorCode},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

const HOST_TOOL: &str = "list_server_toolsets";

/// Request headers, as (name, value) pairs.
type Headers<'a> = &'a [(&'a str, &'a str)];

fn header_map(headers: Headers<'_>) -> HashMap<HeaderName, HeaderValue> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            )
        })
        .collect()
}

/// A client of `url` sending `headers` with every request.
async fn connect_with(url: &str, headers: Headers<'_>) -> Client {
    let config =
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(header_map(headers));
    ClientConfig::default()
        .serve({
            e2e::install_tls();
            StreamableHttpClientTransport::from_config(config)
        })
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"))
}

/// `GET url` with `headers`, which must answer 200 with JSON.
async fn get_with(url: &str, headers: Headers<'_>) -> Value {
    let mut request = e2e::http().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200, "GET {url}");
    response.json().await.unwrap()
}

/// The names `tools/list` gives `url` with `headers`, sorted, and each one's read-only hint.
async fn listed(url: &str, headers: Headers<'_>) -> Vec<(String, bool)> {
    let client = connect_with(url, headers).await;
    let mut tools: Vec<(String, bool)> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| {
            let read_only = t.annotations.and_then(|a| a.read_only_hint) == Some(true);
            (t.name.into_owned(), read_only)
        })
        .collect();
    client.cancel().await.unwrap();
    tools.sort();
    tools
}

fn names(tools: &[(String, bool)]) -> Vec<String> {
    tools.iter().map(|(name, _)| name.clone()).collect()
}

/// A filter as URL keys, the same as headers, and what it shows of a tool (name, read-only).
struct Filter {
    query: &'static str,
    headers: Headers<'static>,
    shows: fn(&str, bool) -> bool,
}

const FILTERS: &[Filter] = &[
    Filter {
        query: "",
        headers: &[],
        shows: |_, _| true,
    },
    Filter {
        query: "tools=echo,list_*",
        headers: &[("X-MCP-Tools", "echo, list_*")],
        shows: |name, _| name == "echo" || name.starts_with("list_"),
    },
    Filter {
        query: "exclude_tools=*_sandbox",
        headers: &[("X-MCP-Exclude-Tools", "*_sandbox")],
        shows: |name, _| !name.ends_with("_sandbox"),
    },
    Filter {
        query: "readonly",
        headers: &[("X-MCP-Readonly", "true")],
        shows: |_, read_only| read_only,
    },
    Filter {
        query: "tools=s*&tools=l*&exclude_tools=sleep&readonly=yes",
        headers: &[
            ("X-MCP-Tools", "s*"),
            ("x-mcp-tools", "l*"),
            ("X-MCP-Exclude-Tools", "sleep"),
            ("X-MCP-Readonly", "1"),
        ],
        shows: |name, read_only| {
            (name.starts_with('s') || name.starts_with('l')) && name != "sleep" && read_only
        },
    },
    Filter {
        query: "tools=list_server_toolsets",
        headers: &[("X-MCP-Tools", "list_server_toolsets")],
        shows: |name, _| name == HOST_TOOL,
    },
];

/// The queries of the README's selection table.
const ROWS: &[&str] = &[
    "",
    "benchmarks",
    "benchmarks=0",
    "sandboxes=false",
    "toolsets=benchmarks",
    "toolsets=benchmarks,sandboxes",
    "only=benchmarks",
    "only=benchmarks&sandboxes",
    "without=sandboxes",
    "benchmarks&without=sandboxes",
    "nope",
];

fn joined(a: &str, b: &str) -> String {
    [a, b]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("&")
}

#[tokio::test(flavor = "multi_thread")]
async fn toolsets_answers_what_tools_list_answers_for_every_row_and_filter() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks"]);
    let host = HostProcess::serve(&dir, &[]);
    let base = host.base_url();
    for row in ROWS {
        let unfiltered = listed(&format!("{base}/mcp?{row}"), &[]).await;
        assert!(names(&unfiltered).contains(&HOST_TOOL.to_owned()), "{row}");
        for filter in FILTERS {
            let expected: Vec<String> = unfiltered
                .iter()
                .filter(|(name, read_only)| (filter.shows)(name, *read_only))
                .map(|(name, _)| name.clone())
                .collect();
            let query = joined(row, filter.query);
            let by_url = names(&listed(&format!("{base}/mcp?{query}"), &[]).await);
            assert_eq!(by_url, expected, "tools/list of /mcp?{query}");
            let report = get_ok_json(&format!("{base}/toolsets?{query}")).await;
            assert_eq!(strings(&report["tools"]), by_url, "/toolsets?{query}");

            let by_headers = names(&listed(&format!("{base}/mcp?{row}"), filter.headers).await);
            assert_eq!(by_headers, expected, "/mcp?{row} with {:?}", filter.headers);
            let report = get_with(&format!("{base}/toolsets?{row}"), filter.headers).await;
            assert_eq!(
                strings(&report["tools"]),
                by_headers,
                "/toolsets?{row} with {:?}",
                filter.headers
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_key_and_header_narrows_and_url_and_headers_narrow_each_other() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks"]);
    let host = HostProcess::serve(&dir, &[]);
    let base = host.base_url();
    let list = async |query: &str, headers: Headers<'_>| {
        names(&listed(&format!("{base}/mcp?{query}"), headers).await)
    };
    assert_eq!(list("benchmarks&tools=echo", &[]).await, ["echo"]);
    assert_eq!(
        list("tools=list_*", &[]).await,
        ["list_sandboxes", HOST_TOOL]
    );
    assert_eq!(list("tools=", &[]).await, Vec::<String>::new());
    assert_eq!(
        list("exclude_tools=list_*,launch_*", &[]).await,
        ["stop_sandbox"]
    );
    assert_eq!(
        list("tools=*_sandbox*&exclude_tools=list_*", &[]).await,
        ["launch_sandbox", "stop_sandbox"],
        "exclusion wins"
    );
    for on in [
        "readonly",
        "readonly=true",
        "readonly=1",
        "readonly=yes",
        "readonly=on",
    ] {
        assert_eq!(list(on, &[]).await, ["list_sandboxes", HOST_TOOL], "{on}");
    }
    for off in [
        "readonly=false",
        "readonly=0",
        "readonly=off",
        "readonly=no",
    ] {
        assert_eq!(list(off, &[]).await.len(), 4, "{off}");
    }

    // X-MCP-Toolsets selects as `only=` does, and narrows a URL's selection.
    let benchmarks = ["add", "blob", "echo", HOST_TOOL, "sleep"];
    assert_eq!(
        list("", &[("X-MCP-Toolsets", "benchmarks")]).await,
        benchmarks
    );
    assert_eq!(
        list(
            "toolsets=benchmarks",
            &[("X-MCP-Toolsets", "benchmarks,nope")]
        )
        .await,
        benchmarks
    );
    assert_eq!(
        list("only=sandboxes", &[("X-MCP-Toolsets", "benchmarks")]).await,
        [HOST_TOOL],
        "both select: nothing in common"
    );
    let report = get_with(
        &format!("{base}/toolsets?toolsets=benchmarks"),
        &[("X-MCP-Toolsets", "benchmarks,nope")],
    )
    .await;
    assert_eq!(report["active"], json!(["benchmarks"]));
    assert_eq!(report["unknown"], json!(["nope"]));

    // URL and headers narrow each other's filters.
    assert_eq!(
        list("benchmarks&tools=echo,add", &[("X-MCP-Tools", "add,sleep")]).await,
        ["add"]
    );
    assert_eq!(
        list("benchmarks&tools=*", &[("X-MCP-Readonly", "on")]).await,
        ["add", "blob", "echo", "list_sandboxes", HOST_TOOL, "sleep"]
    );
    assert_eq!(
        list("readonly", &[("X-MCP-Readonly", "false")]).await,
        ["list_sandboxes", HOST_TOOL],
        "a header cannot widen the URL"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_flags_bound_what_a_url_or_header_may_ask() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks"]);
    let host = HostProcess::serve(
        &dir,
        &[
            "--tools",
            "echo,add,*_sandbox*",
            "--tools",
            HOST_TOOL,
            "--exclude-tools",
            "add",
        ],
    );
    let base = host.base_url();
    let list = async |query: &str, headers: Headers<'_>| {
        names(&listed(&format!("{base}/mcp?{query}"), headers).await)
    };
    let bounded = [
        "echo",
        "launch_sandbox",
        "list_sandboxes",
        HOST_TOOL,
        "stop_sandbox",
    ];
    assert_eq!(list("benchmarks", &[]).await, bounded);
    assert_eq!(list("benchmarks&tools=*,add,sleep", &[]).await, bounded);
    assert_eq!(
        list(
            "benchmarks",
            &[("X-MCP-Tools", "*"), ("X-MCP-Readonly", "no")]
        )
        .await,
        bounded
    );
    assert_eq!(
        list("benchmarks&tools=sleep", &[]).await,
        Vec::<String>::new()
    );
    assert_eq!(
        list("benchmarks&readonly", &[]).await,
        ["echo", "list_sandboxes", HOST_TOOL]
    );

    // `list_server_toolsets` tells the filters in force and how to change them.
    let client = connect(&format!("{base}/mcp?benchmarks&exclude_tools=echo")).await;
    let result = client.call_tool(call(HOST_TOOL, json!({}))).await.unwrap();
    let report = result.structured_content.expect("structured content");
    assert_eq!(
        report["server_bounds"],
        json!({"allow": [["*_sandbox*", "add", "echo", HOST_TOOL]], "exclude": ["add"], "readonly": false})
    );
    assert_eq!(
        report["filter"],
        json!({"allow": [["*_sandbox*", "add", "echo", HOST_TOOL]], "exclude": ["add", "echo"], "readonly": false})
    );
    let how = report["how_to_filter_tools"].as_str().unwrap();
    for key in [
        "?tools=",
        "?exclude_tools=",
        "?readonly",
        "X-MCP-Tools",
        "X-MCP-Toolsets",
    ] {
        assert!(how.contains(key), "{key}: {how}");
    }

    let host = HostProcess::serve_with_env(
        &dir,
        &[],
        &[
            ("REACTOR_MCP_READ_ONLY", "true"),
            ("REACTOR_MCP_EXCLUDE_TOOLS", "list_server_*,blob"),
        ],
    );
    let base = host.base_url();
    assert_eq!(
        names(&listed(&format!("{base}/mcp?benchmarks&readonly=false"), &[]).await),
        ["add", "echo", "list_sandboxes", "sleep"]
    );
    let report = get_ok_json(&format!("{base}/toolsets?benchmarks")).await;
    assert_eq!(
        strings(&report["tools"]),
        ["add", "echo", "list_sandboxes", "sleep"]
    );
}

/// The names `prompts/list` gives `client`.
async fn prompts(client: &Client) -> Vec<String> {
    client
        .list_all_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The JSON-RPC error of calling `tool` through `client`.
async fn call_error(client: &Client, tool: &str) -> (ErrorCode, String, Value) {
    match client.call_tool(call(tool, json!({}))).await {
        Err(ServiceError::McpError(error)) => (
            error.code,
            error.message.into_owned(),
            error.data.unwrap_or_default(),
        ),
        other => panic!("expected a JSON-RPC error for {tool}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hidden_tool_is_unknown_like_a_tool_of_an_unselected_toolset_each_with_its_hint() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks"]);
    let host = HostProcess::serve(&dir, &[]);
    let base = host.base_url();
    let unselected = connect(&format!("{base}/mcp?only=benchmarks")).await;
    let (code, message, data) = call_error(&unselected, "stop_sandbox").await;
    assert_eq!(
        (code, message.as_str()),
        (
            ErrorCode::INVALID_PARAMS,
            "Unknown tool: stop_sandbox (it is in toolset `sandboxes`, which this URL does not \
             serve; add ?toolsets=sandboxes to the server URL)"
        ),
        "the hint is in the message, which clients show"
    );
    assert_eq!(data["toolset"], "sandboxes");

    for (query, headers) in [
        ("readonly", &[][..]),
        ("exclude_tools=stop_*", &[][..]),
        ("tools=list_*", &[][..]),
        ("", &[("X-MCP-Readonly", "yes")][..]),
        ("", &[("X-MCP-Exclude-Tools", "stop_sandbox")][..]),
    ] {
        let client = connect_with(&format!("{base}/mcp?{query}"), headers).await;
        let (hidden_code, hidden_message, hidden_data) = call_error(&client, "stop_sandbox").await;
        assert_eq!(hidden_code, code, "{query} {headers:?}");
        assert!(
            hidden_message.starts_with("Unknown tool: stop_sandbox (")
                && hidden_message.contains("filters hide it"),
            "{query} {headers:?}: {hidden_message}"
        );
        assert_eq!(hidden_data["toolset"], "sandboxes");
        let hint = hidden_data["hint"].as_str().unwrap();
        assert!(hint.contains("filters hide it"), "{hint}");
        // A tool the filter shows is called as ever.
        let listed = client
            .call_tool(call("list_sandboxes", json!({})))
            .await
            .unwrap();
        assert_eq!(listed.is_error, Some(false), "{query} {headers:?}");
    }

    // The host's own tool obeys filters too: hidden, it is unknown as any unknown name is.
    let client = connect(&format!("{base}/mcp?tools=list_sandboxes")).await;
    let (code, message, data) = call_error(&client, HOST_TOOL).await;
    let (nope_code, _, nope_data) = call_error(&client, "nope").await;
    assert_eq!(code, nope_code);
    assert_eq!(message, format!("Unknown tool: {HOST_TOOL}"));
    assert_eq!(data, nope_data);
    let shown = connect(&format!("{base}/mcp?readonly")).await;
    assert!(
        shown
            .call_tool(call(HOST_TOOL, json!({})))
            .await
            .unwrap()
            .structured_content
            .is_some()
    );
    assert_eq!(tool_names(&shown).await, ["list_sandboxes", HOST_TOOL]);
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_and_prompts_follow_the_toolsets_not_the_filters() {
    let dir = PluginDir::with(&["fixture-library"]);
    let host = HostProcess::serve(&dir, &["--read-only", "--tools", "nothing"]);
    let base = host.base_url();
    let plain = connect(&format!("{base}/mcp?library,librarian")).await;
    let filtered = connect_with(
        &format!("{base}/mcp?library,librarian&readonly&exclude_tools=*"),
        &[("X-MCP-Readonly", "1"), ("X-MCP-Tools", "none")],
    )
    .await;
    assert_eq!(tool_names(&filtered).await, Vec::<String>::new());
    let uris = |resources: Vec<rmcp::model::Resource>| {
        resources
            .into_iter()
            .map(|r| r.uri.clone())
            .collect::<Vec<_>>()
    };
    let expected = uris(plain.list_all_resources().await.unwrap());
    assert_eq!(expected.len(), 4);
    assert_eq!(uris(filtered.list_all_resources().await.unwrap()), expected);
    assert_eq!(prompts(&filtered).await, ["good_morning", "review"]);
    assert_eq!(prompts(&filtered).await, prompts(&plain).await);
    assert_eq!(
        filtered.list_all_resource_templates().await.unwrap().len(),
        1
    );
    let report = get_ok_json(&format!("{base}/toolsets?library,librarian&readonly")).await;
    assert_eq!(report["tools"], json!([]));
    assert_eq!(report["prompts"], json!(["good_morning", "review"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn over_stdio_the_toolsets_filter_keys_and_the_bounds_filter() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks"]);
    let mut command = tokio::process::Command::from(host_command(
        &[
            "stdio",
            "--toolsets",
            "only=benchmarks&tools=e*,a*,list_*",
            "--exclude-tools",
            "add",
        ],
        &dir,
    ));
    command.stderr(std::process::Stdio::null());
    let client =
        ().serve(rmcp::transport::TokioChildProcess::new(command).expect("spawn"))
            .await
            .expect("initialize over stdio");
    assert_eq!(tool_names(&client).await, ["echo", HOST_TOOL]);
    let result = client.call_tool(call(HOST_TOOL, json!({}))).await.unwrap();
    let report = result.structured_content.expect("structured content");
    assert_eq!(report["tools"], json!(["echo", HOST_TOOL]));
    assert_eq!(report["server_bounds"]["exclude"], json!(["add"]));
    let how = report["how_to_filter_tools"].as_str().unwrap();
    assert!(how.contains("--exclude-tools"), "{how}");
    match client.call_tool(call("add", json!({"a": 1, "b": 2}))).await {
        Err(ServiceError::McpError(error)) => assert!(
            error.message.starts_with(
                "Unknown tool: add (it is in toolset `benchmarks`, which this URL serves, but this \
                 request's tool filters hide it"
            ),
            "{}",
            error.message
        ),
        other => panic!("expected Unknown tool, got {other:?}"),
    }
    client.cancel().await.unwrap();
}
