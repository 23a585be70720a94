//! `serve` end to end: the real host binary and real plugins, driven by rmcp's own client over
//! streamable HTTP (and by plain HTTP where a test needs to see headers or hold a session id).

use std::time::{Duration, Instant};

use e2e::{
    HostProcess, PluginDir, library_file_name,
    mcp::{
        RawSession, call, connect, connect_2026, connect_as, get_json, messages, post, post_2026,
        strings, text, tool_names,
    },
};
use rmcp::{
    ServiceError,
    model::{ClientConfig, ErrorCode, ProtocolVersion},
};
use serde_json::{Value, json};

const SANDBOXES: &[&str] = &["launch_sandbox", "list_sandboxes", "stop_sandbox"];
const BENCHMARKS: &[&str] = &["echo", "add", "sleep", "blob"];
const HOST_TOOL: &str = "list_server_toolsets";

fn sorted(names: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    names.sort();
    names
}

fn both_plugins() -> PluginDir {
    PluginDir::with(&["sandboxes", "benchmarks"])
}

/// A query, and the active toolsets, served tools and unknown names it gives.
type Row<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);

#[tokio::test(flavor = "multi_thread")]
async fn every_row_of_the_selection_table_through_tools_list_and_toolsets() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &[]);
    let base = host.base_url();
    let with_benchmarks: Vec<&str> = BENCHMARKS.iter().chain(SANDBOXES).copied().collect();
    // Load order is file-name order: libbenchmarks before libsandboxes.
    let rows: &[Row<'_>] = &[
        ("", &["sandboxes"], SANDBOXES, &[]),
        (
            "benchmarks",
            &["benchmarks", "sandboxes"],
            &with_benchmarks,
            &[],
        ),
        ("benchmarks=0", &["sandboxes"], SANDBOXES, &[]),
        ("sandboxes=false", &[], &[], &[]),
        (
            "toolsets=benchmarks",
            &["benchmarks", "sandboxes"],
            &with_benchmarks,
            &[],
        ),
        (
            "toolsets=benchmarks,sandboxes",
            &["benchmarks", "sandboxes"],
            &with_benchmarks,
            &[],
        ),
        (
            "toolsets=benchmarks&toolsets=spaces",
            &["benchmarks", "sandboxes"],
            &with_benchmarks,
            &["spaces"],
        ),
        ("only=benchmarks", &["benchmarks"], BENCHMARKS, &[]),
        (
            "only=benchmarks&sandboxes",
            &["benchmarks"],
            BENCHMARKS,
            &[],
        ),
        ("without=sandboxes", &[], &[], &[]),
        (
            "benchmarks&without=sandboxes",
            &["benchmarks"],
            BENCHMARKS,
            &[],
        ),
        ("nope", &["sandboxes"], SANDBOXES, &["nope"]),
        ("Benchmarks", &["sandboxes"], SANDBOXES, &["Benchmarks"]),
    ];
    for (query, active, tools, unknown) in rows {
        let (status, report) = get_json(&format!("{base}/toolsets?{query}")).await;
        assert_eq!(status, 200, "/toolsets?{query}");
        assert_eq!(
            strings(&report["active"]),
            sorted(active),
            "/toolsets?{query}"
        );
        let with_host_tool: Vec<&str> = tools.iter().copied().chain([HOST_TOOL]).collect();
        assert_eq!(
            strings(&report["tools"]),
            sorted(&with_host_tool),
            "/toolsets?{query}"
        );
        assert_eq!(
            strings(&report["unknown"]),
            sorted(unknown),
            "/toolsets?{query}"
        );

        let client = connect(&format!("{base}/mcp?{query}")).await;
        let mut expected: Vec<String> = tools.iter().map(|s| (*s).to_owned()).collect();
        expected.push(HOST_TOOL.to_owned());
        assert_eq!(
            tool_names(&client).await,
            expected,
            "tools/list of /mcp?{query}"
        );
        client.cancel().await.unwrap();
    }
    let (_, report) = get_json(&format!("{base}/toolsets")).await;
    let rows = report["toolsets"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["name"], "benchmarks");
    assert_eq!(rows[0]["default"], false);
    assert_eq!(rows[0]["active"], false);
    assert_eq!(rows[0]["plugin"], "benchmarks");
    assert_eq!(report["conflicts"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_selection_applies_only_when_the_url_selects_nothing() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &["--toolsets", "only=benchmarks"]);
    let base = host.base_url();
    let (_, report) = get_json(&format!("{base}/toolsets")).await;
    assert_eq!(strings(&report["active"]), ["benchmarks"]);
    let (_, report) = get_json(&format!("{base}/toolsets?toolsets=sandboxes")).await;
    assert_eq!(strings(&report["active"]), ["sandboxes"]);
    let client = connect(&format!("{base}/mcp")).await;
    let mut expected: Vec<&str> = BENCHMARKS.to_vec();
    expected.push(HOST_TOOL);
    assert_eq!(tool_names(&client).await, expected);
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn a_library_is_mapped_only_once_a_url_needs_it() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &[]);
    let base = host.base_url();
    let mapped = || host.mapped_plugin_file_names(&dir);
    assert!(mapped().is_empty(), "after start-up: {:?}", mapped());

    let (status, _) = get_json(&format!("{base}/toolsets?benchmarks")).await;
    assert_eq!(status, 200);
    let (_, health) = get_json(&format!("{base}/healthz")).await;
    assert_eq!(health["opened"], 0);
    assert!(
        mapped().is_empty(),
        "after GET /toolsets?benchmarks: {:?}",
        mapped()
    );

    let plain = connect(&format!("{base}/mcp")).await;
    tool_names(&plain).await;
    assert_eq!(
        mapped(),
        [library_file_name("sandboxes")],
        "after a /mcp session"
    );

    let more = connect(&format!("{base}/mcp?benchmarks")).await;
    tool_names(&more).await;
    assert_eq!(
        mapped(),
        [
            library_file_name("benchmarks"),
            library_file_name("sandboxes")
        ],
        "after /mcp?benchmarks"
    );
    let (_, health) = get_json(&format!("{base}/healthz")).await;
    assert_eq!(health["status"], "ok");
    assert_eq!(health["plugins"], 2);
    assert_eq!(health["opened"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_keeps_working_after_another_url_opens_a_plugin() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &[]);
    let base = host.base_url();
    let session = RawSession::open(&format!("{base}/mcp")).await;
    let (status, answer) = session
        .request(
            2,
            "tools/call",
            json!({"name": "launch_sandbox", "arguments": {"sandbox_name": "a"}}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        answer["result"]["structuredContent"]["id"], "sbx-1",
        "{answer}"
    );

    // Another client's URL opens `benchmarks`.
    let other = connect(&format!("{base}/mcp?benchmarks")).await;
    let echoed = other
        .call_tool(call("echo", json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "hi");

    // The first session, with the same id, still answers, from its own set.
    let (status, answer) = session
        .request(
            3,
            "tools/call",
            json!({"name": "list_sandboxes", "arguments": {}}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("sbx-1")
    );
    let (status, answer) = session.request(4, "tools/list", json!({})).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = answer["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [SANDBOXES, &[HOST_TOOL]].concat());
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_calls_get_their_errors_and_the_next_call_works() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks", "fixture-panicky"]);
    let host = HostProcess::serve(&dir, &[]);
    let client = connect(&format!("{}/mcp?only=panicky,benchmarks", host.base_url())).await;
    let fine = async || {
        let result = client.call_tool(call("fine", json!({}))).await.unwrap();
        assert_eq!(text(&result), "ok");
        assert_eq!(result.is_error, Some(false));
    };

    // Arguments that do not match the schema: the plugin is never called.
    let result = client
        .call_tool(call("sleep", json!({"ms": "soon"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        r#"invalid arguments for tool `sleep`: argument `ms`: "soon" is not of type "integer""#
    );
    let result = client.call_tool(call("sleep", json!({}))).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("missing argument `ms`"),
        "{}",
        text(&result)
    );
    let result = client
        .call_tool(call("sleep", json!({"ms": 1})))
        .await
        .unwrap();
    assert_eq!(text(&result), "slept 1 ms");

    // An unknown tool: invalid params, as the MCP specification gives it.
    match client.call_tool(call("nope", json!({}))).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert_eq!(error.message, "Unknown tool: nope");
        }
        other => panic!("expected an invalid-params error, got {other:?}"),
    }
    fine().await;

    // A tool of a toolset this URL does not serve is unknown too, with a hint.
    match client
        .call_tool(call("launch_sandbox", json!({"sandbox_name": "x"})))
        .await
    {
        Err(ServiceError::McpError(error)) => {
            assert!(
                error.message.starts_with(
                    "Unknown tool: launch_sandbox (it is in toolset `sandboxes`, which this URL \
                     does not serve"
                ),
                "{}",
                error.message
            );
            assert_eq!(error.data.unwrap()["toolset"], "sandboxes");
        }
        other => panic!("expected an invalid-params error, got {other:?}"),
    }

    // Panics, on the plugin's blocking pool and on its async workers.
    let result = client
        .call_tool(call("boom", json!({"message": "kaboom"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text(&result), "tool boom panicked: kaboom");
    fine().await;
    let result = client
        .call_tool(call("boom_later", json!({})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text(&result), "tool boom_later panicked: later");
    fine().await;

    // A tool's own error.
    let other = connect(&format!("{}/mcp", host.base_url())).await;
    let result = other
        .call_tool(call("stop_sandbox", json!({"id": "sbx-9"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text(&result), "you have no sandbox with id sbx-9");
    fine().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_origin_or_host_is_refused_and_the_next_request_is_served() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &[]);
    let base = host.base_url();
    let http = e2e::http();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let send = |origin: Option<&'static str>, host_header: Option<&'static str>| {
        let mut request = http
            .post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string());
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        if let Some(host_header) = host_header {
            request = request.header("host", host_header);
        }
        request.send()
    };
    let refused = send(Some("http://evil.example"), None).await.unwrap();
    assert_eq!(refused.status(), 403);
    let refused = send(None, Some("evil.example")).await.unwrap();
    assert_eq!(refused.status(), 403);
    let toolsets = http
        .get(format!("{base}/toolsets"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(toolsets.status(), 403);

    let served = send(None, None).await.unwrap();
    assert_eq!(served.status(), 200);
    let served = send(Some("http://localhost:6274"), None).await.unwrap();
    assert_eq!(
        served.status(),
        200,
        "a loopback origin (MCP Inspector) is served"
    );
    let client = connect(&format!("{base}/mcp")).await;
    assert_eq!(tool_names(&client).await.len(), SANDBOXES.len() + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn allowed_hosts_and_origins_extend_the_defaults() {
    let dir = both_plugins();
    let host = HostProcess::serve(
        &dir,
        &[
            "--allowed-host",
            "mcp.example",
            "--allowed-origin",
            "https://app.example",
        ],
    );
    let http = e2e::http();
    let get = |host_header: &'static str, origin: &'static str| {
        http.get(format!("{}/healthz", host.base_url()))
            .header("host", host_header)
            .header("origin", origin)
            .send()
    };
    assert_eq!(
        get("mcp.example", "https://app.example")
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        get("mcp.example", "https://other.example")
            .await
            .unwrap()
            .status(),
        403
    );
    assert_eq!(
        get("other.example", "https://app.example")
            .await
            .unwrap()
            .status(),
        403
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_request_body_is_refused() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &[]);
    let session = RawSession::open(&format!("{}/mcp?benchmarks", host.base_url())).await;
    let big = "x".repeat(5 * 1024 * 1024);
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": big}}});
    // On its own connection: the server may answer 413 and close it while the body is still
    // being sent, which the client can see as a reset instead.
    let refused = e2e::http()
        .post(&session.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string())
        .send()
        .await;
    match refused {
        Ok(response) => assert_eq!(response.status(), 413),
        Err(error) => assert!(!error.is_timeout(), "{error}"),
    }
    let (status, answer) = session
        .request(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "small"}}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(answer["result"]["content"][0]["text"], "small");
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_concurrent_sleeps_overlap() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &[]);
    let client = connect(&format!("{}/mcp?benchmarks", host.base_url())).await;
    // Open the plugin first, so the measurement is of calls only.
    client
        .call_tool(call("sleep", json!({"ms": 1})))
        .await
        .unwrap();
    let started = Instant::now();
    let calls = (0..50).map(|_| client.call_tool(call("sleep", json!({"ms": 200}))));
    let results = futures::future::join_all(calls).await;
    let elapsed = started.elapsed();
    for result in results {
        assert_eq!(text(&result.unwrap()), "slept 200 ms");
    }
    eprintln!("50 concurrent sleep(200 ms) calls took {elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(3),
        "50 concurrent sleep(200 ms) calls took {elapsed:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_mode_serves_tools_list_and_calls() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &["--stateless"]);
    let url = format!("{}/mcp?benchmarks", host.base_url());
    let client = connect(&url).await;
    assert_eq!(
        tool_names(&client).await,
        [BENCHMARKS, SANDBOXES, &[HOST_TOOL]].concat()
    );
    let result = client
        .call_tool(call("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(text(&result), "3");
    let result = client
        .call_tool(call("add", json!({"a": "one"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));

    // No session id, and a plain JSON answer.
    let http = e2e::http();
    let response = post(
        &http,
        &url,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    assert!(response.headers().get("mcp-session-id").is_none());
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_protocol_version_is_served() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &[]);
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    let expected = [BENCHMARKS, &[HOST_TOOL]].concat();
    for version in [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25] {
        let mut config = ClientConfig::default();
        config.protocol_version = version.clone();
        let client = connect_as(&url, config).await;
        assert_eq!(
            client.peer_info().unwrap().protocol_version,
            version,
            "negotiated"
        );
        assert_eq!(tool_names(&client).await, expected, "{version}");
        let result = client
            .call_tool(call("echo", json!({"text": "v"})))
            .await
            .unwrap();
        assert_eq!(text(&result), "v", "{version}");
    }
    // 2026-07-28: no initialize, no session; every request carries its own metadata.
    let client = connect_2026(&url, ClientConfig::default()).await;
    assert_eq!(tool_names(&client).await, expected, "2026-07-28");
    let result = client
        .call_tool(call("echo", json!({"text": "new"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "new");
}

#[tokio::test(flavor = "multi_thread")]
async fn methods_2026_removed_are_not_found_in_2026() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &[]);
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    for method in ["initialize", "logging/setLevel", "resources/subscribe"] {
        let response = post_2026(&url, 7, method, None, json!({})).await;
        let status = response.status();
        let answer = &messages(&response.text().await.unwrap())[0];
        assert_eq!(status, 404, "{method}: {answer}");
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
        assert_eq!(answer["id"], 7);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn server_info_instructions_and_the_toolsets_tool() {
    let dir = both_plugins();
    let host = HostProcess::serve(&dir, &["--name", "my-reactor"]);
    let client = connect(&format!("{}/mcp", host.base_url())).await;
    let info = client.peer_info().unwrap();
    let server = info.server_info.clone().expect("serverInfo");
    assert_eq!(server.name, "my-reactor");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.starts_with("## Sandboxes\n\n"),
        "{instructions}"
    );

    let result = client.call_tool(call(HOST_TOOL, json!({}))).await.unwrap();
    let report = result
        .structured_content
        .clone()
        .expect("structured content");
    assert_eq!(report["active"], json!(["sandboxes"]));
    let with_host_tool: Vec<&str> = SANDBOXES.iter().copied().chain([HOST_TOOL]).collect();
    assert_eq!(report["tools"], json!(sorted(&with_host_tool)));
    let hint = report["how_to_ask_for_more"].as_str().unwrap();
    assert!(hint.contains("?toolsets=benchmarks"), "{hint}");
    assert!(hint.contains(&format!("{}/mcp", host.addr())), "{hint}");
    assert_eq!(
        serde_json::from_str::<Value>(&text(&result)).unwrap(),
        report
    );

    let host = HostProcess::serve(&dir, &["--no-toolsets-tool"]);
    let client = connect(&format!("{}/mcp", host.base_url())).await;
    assert_eq!(tool_names(&client).await, SANDBOXES);
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_server_cleanly() {
    let dir = both_plugins();
    let mut host = HostProcess::serve(&dir, &[]);
    let client = connect(&format!("{}/mcp?benchmarks", host.base_url())).await;
    tool_names(&client).await;
    e2e::procs::signal(host.pid(), "TERM");
    let exit = host.wait_for_exit(Duration::from_secs(15));
    assert!(
        exit.is_some_and(|s| s.success()),
        "{exit:?}\n{}",
        host.stderr_so_far()
    );
    assert!(host.stderr_so_far().contains("stopped"));
}

/// A 2026-07-28 `tools/call` of the conformance plugin's `test_header_parameter`, its `region`
/// argument `region` and its `Mcp-Param-Region` header `header` (none if `None`); the HTTP status
/// and the JSON-RPC answer.
async fn call_with_region_header(url: &str, region: &str, header: Option<&str>) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "test_header_parameter", "arguments": {"region": region},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut request = e2e::http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "test_header_parameter")
        .body(body.to_string());
    if let Some(header) = header {
        request = request.header("mcp-param-region", header);
    }
    let response = request.send().await.expect("POST");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    let answer = messages(&text)
        .into_iter()
        .next()
        .unwrap_or_else(|| serde_json::from_str(&text).unwrap_or(Value::Null));
    (status, answer)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_argument_mirrored_into_a_header_must_agree_with_it_under_2026() {
    let dir = PluginDir::with(&["conformance"]);
    let host = HostProcess::serve(&dir, &[]);
    let url = format!("{}/mcp?only=conformance", host.base_url());
    // The generated schema that says `x-mcp-header` is known once the plugin is open.
    let listed = connect_2026(&url, ()).await;
    let tools = listed.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|t| t.name == "test_header_parameter")
        .expect("the tool is listed");
    assert_eq!(
        tool.input_schema["properties"]["region"]["x-mcp-header"],
        "Region"
    );

    let (status, answer) = call_with_region_header(&url, "eu", Some("eu")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "region: eu",
        "{answer}"
    );
    for header in [Some("us"), None, Some("=?base64?ZXU?=x")] {
        let (status, answer) = call_with_region_header(&url, "eu", header).await;
        assert_eq!(status, 400, "{header:?}: {answer}");
        assert_eq!(answer["error"]["code"], -32020, "{header:?}: {answer}");
    }
    let (status, answer) = call_with_region_header(&url, "eu", Some("=?base64?ZXU=?=")).await;
    assert_eq!(status, 200, "base64 of `eu`: {answer}");
}

#[test]
fn a_copy_folder_left_by_a_host_that_no_longer_runs_is_removed_at_start_up() {
    let dir = PluginDir::with(&["benchmarks"]);
    let temporary = tempfile::tempdir().unwrap();
    let prefix = reactor_mcp_server::internals::build::private_copy::FOLDER_PREFIX;
    // Above the largest pid Linux hands out (2^22); this test's own process runs.
    let stale = temporary
        .path()
        .join(format!("{prefix}0123456789ab-4999999-x1"));
    let live = (temporary.path()).join(format!("{prefix}0123456789ab-{}-x2", std::process::id()));
    for folder in [&stale, &live] {
        std::fs::create_dir(folder).unwrap();
        std::fs::write(folder.join(library_file_name("benchmarks")), b"half a copy").unwrap();
    }
    let _host =
        HostProcess::serve_with_env(&dir, &[], &[("TMPDIR", temporary.path().to_str().unwrap())]);
    assert!(!stale.exists(), "the stale copy is removed before serving");
    assert!(live.exists(), "a running process's copy is kept");
}
