//! The library mounted in an application of its own (`host/examples/embed.rs`): the example's
//! own route beside the MCP server nested at `/tools`, driven with rmcp's client.

use std::time::Duration;

use e2e::{
    PluginDir, embed_example_bin,
    mcp::{call_tool, connect, get_json, text, tool_names},
};
use harness::Launch;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_server_nested_in_an_app_serves_mcp_and_its_routes_beside_the_apps_own() {
    let dir = PluginDir::with(&["benchmarks"]);
    let mut launch = Launch::new(embed_example_bin());
    launch.arg(dir.path()).arg("127.0.0.1:0");
    let mut app = launch.spawn().expect("the example starts");
    let line = app
        .wait_for_stderr("listening on http://", Duration::from_secs(60))
        .unwrap_or_else(|| panic!("the example did not listen:\n{}", app.stderr()));
    let base = line
        .split("listening on ")
        .nth(1)
        .expect("the line names the address")
        .trim()
        .to_owned();

    let own = e2e::http().get(format!("{base}/")).send().await.unwrap();
    assert_eq!(own.status(), 200);
    assert!(own.text().await.unwrap().contains("my application"));

    let (status, toolsets) = get_json(&format!("{base}/tools/toolsets?only=benchmarks")).await;
    assert_eq!(status, 200, "{toolsets}");
    assert_eq!(toolsets["active"], json!(["benchmarks"]));
    assert!(
        toolsets["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("echo"))
    );
    let (status, health) = get_json(&format!("{base}/tools/healthz")).await;
    assert_eq!((status, &health["status"]), (200, &json!("ok")));

    let client = connect(&format!("{base}/tools/mcp?only=benchmarks")).await;
    assert!(tool_names(client.peer()).await.contains(&"echo".to_owned()));
    let echoed = call_tool(client.peer(), "echo", json!({"text": "nested"})).await;
    assert!(text(&echoed).contains("nested"), "{echoed:?}");
    client.cancel().await.unwrap();

    let outside = e2e::http().get(format!("{base}/mcp")).send().await.unwrap();
    assert_eq!(
        outside.status(),
        404,
        "the MCP server answers only under /tools"
    );

    e2e::procs::signal(app.pid(), "TERM");
    let status = app
        .wait_for_exit(Duration::from_secs(20))
        .expect("the example stops on SIGTERM");
    assert!(status.success(), "{status}:\n{}", app.stderr());
    assert!(app.stderr().contains("stopped"), "{}", app.stderr());
}
