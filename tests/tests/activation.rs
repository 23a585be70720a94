//! Activation through the host library: opening real plugin libraries, calling their tools,
//! bad arguments, panicking tools, tools built at run time, and opening only what an active set
//! needs.

use std::sync::Arc;

use e2e::{PluginDir, library_file_name, mapped_plugin_libraries};
use reactor_mcp_server::internals::{
    build::{self, Builder, CallError, LoadedPlugin, ProviderOpener},
    discovery::{self, DiscoveredPlugin},
    registry::Registry,
    selection::ActiveSet,
};
use serde_json::{Map, Value, json};

/// The plugin called `name` in `dir`, as discovery found it.
fn discovered(dir: &PluginDir, name: &str) -> DiscoveredPlugin {
    discovery::discover(dir.path(), None)
        .expect("the plugin folder can be read")
        .plugins
        .into_iter()
        .find(|p| p.manifest.name == name)
        .unwrap_or_else(|| panic!("no plugin `{name}` in {}", dir.path().display()))
}

/// A fresh copy of the crate's library, opened.
fn activate(crate_name: &str, plugin: &str) -> (PluginDir, LoadedPlugin) {
    let dir = PluginDir::with(&[crate_name]);
    let loaded = build::activate(&discovered(&dir, plugin))
        .unwrap_or_else(|e| panic!("{plugin} activates: {e}"));
    (dir, loaded)
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments are an object, not {other}"),
    }
}

async fn call(plugin: &LoadedPlugin, tool: &str, arguments: Value) -> Result<Value, CallError> {
    plugin
        .tool(tool)
        .unwrap_or_else(|| panic!("the plugin has a tool `{tool}`"))
        .call(&args(arguments))
        .await
}

#[test]
fn activating_sandboxes_maps_its_library() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks"]);
    let sandboxes = discovered(&dir, "sandboxes");
    assert!(mapped_plugin_libraries(std::process::id(), dir.path()).is_empty());
    let _loaded = build::activate(&sandboxes).unwrap();
    assert_eq!(
        mapped_plugin_libraries(std::process::id(), dir.path()),
        [dir.file(&library_file_name("sandboxes"))],
        "the opened library is mapped, the other one is not"
    );
}

#[tokio::test]
async fn sandboxes_launch_list_and_stop_through_the_host() {
    let (_dir, sandboxes) = activate("sandboxes", "sandboxes");

    let launched = call(&sandboxes, "launch_sandbox", json!({"sandbox_name": "a"}))
        .await
        .unwrap();
    assert_eq!(
        launched,
        json!({"id": "sbx-1", "name": "a", "variant": "eval", "status": "running"})
    );
    let other = call(
        &sandboxes,
        "launch_sandbox",
        json!({"sandbox_name": "b", "variant": "gpu"}),
    )
    .await
    .unwrap();
    assert_eq!(other["variant"], "gpu");

    let listed = call(&sandboxes, "list_sandboxes", json!({})).await.unwrap();
    assert_eq!(listed, json!([launched, other]));

    let stopped = call(&sandboxes, "stop_sandbox", json!({"id": "sbx-1"}))
        .await
        .unwrap();
    assert_eq!(stopped["status"], "stopped");
    assert_eq!(stopped["name"], "a");
    let listed = call(&sandboxes, "list_sandboxes", json!({})).await.unwrap();
    assert_eq!(listed[0]["status"], "stopped");
    assert_eq!(listed[1]["status"], "running");

    // A tool's own error is a tool error, not a crash.
    let missing = call(&sandboxes, "stop_sandbox", json!({"id": "sbx-9"})).await;
    assert_eq!(
        missing,
        Err(CallError::Tool(
            "you have no sandbox with id sbx-9".to_owned()
        ))
    );
}

#[tokio::test]
async fn bad_arguments_are_invalid_arguments_naming_the_problem() {
    let (_dir, sandboxes) = activate("sandboxes", "sandboxes");
    for (arguments, says) in [
        (json!({}), "missing field `sandbox_name`"),
        (
            json!({"sandbox_name": "a", "colour": "red"}),
            "unknown field `colour`",
        ),
        (
            json!({"sandbox_name": 5}),
            "invalid argument `sandbox_name`: invalid type: integer `5`, expected a string",
        ),
    ] {
        match call(&sandboxes, "launch_sandbox", arguments.clone()).await {
            Err(CallError::InvalidArguments(message)) => assert!(
                message.contains(says),
                "{arguments}: `{message}` should say `{says}`"
            ),
            other => panic!("{arguments}: expected invalid arguments, got {other:?}"),
        }
    }
    // Arguments that are not a JSON object at all.
    let tool = sandboxes.tool("launch_sandbox").unwrap();
    match tool.call_json("[1, 2]".to_owned()).await {
        Err(CallError::InvalidArguments(message)) => {
            assert!(message.starts_with("invalid arguments:"), "{message}");
        }
        other => panic!("expected invalid arguments, got {other:?}"),
    }
    // Nothing was launched by the bad calls.
    let listed = call(&sandboxes, "list_sandboxes", json!({})).await.unwrap();
    assert_eq!(listed, json!([]));
}

#[test]
fn loaded_tools_carry_their_input_schema() {
    let (_dir, sandboxes) = activate("sandboxes", "sandboxes");
    let names: Vec<&str> = sandboxes
        .tools()
        .iter()
        .map(|t| t.decl.name.as_str())
        .collect();
    assert_eq!(names, ["launch_sandbox", "list_sandboxes", "stop_sandbox"]);

    let launch = &sandboxes.tool("launch_sandbox").unwrap().decl;
    let schema = Value::Object(launch.input_schema.clone().expect("an input schema"));
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["sandbox_name"]));
    assert_eq!(schema["properties"]["sandbox_name"]["type"], "string");
    assert_eq!(
        schema["properties"]["sandbox_name"]["description"],
        "A name for the sandbox (at most 128 characters)."
    );
    assert_eq!(schema["properties"]["sandbox_name"]["maxLength"], 128);
    assert_eq!(schema["properties"]["variant"]["default"], "eval");
    assert_eq!(schema["properties"]["variant"]["type"], "string");
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());

    let list = &sandboxes.tool("list_sandboxes").unwrap().decl;
    let schema = Value::Object(list.input_schema.clone().unwrap());
    assert_eq!(schema["type"], "object");
    let properties: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(properties, ["space"], "{schema}");
    assert!(
        schema.get("required").is_none_or(|r| r == &json!([])),
        "{schema}"
    );
    assert_eq!(list.annotations.read_only, Some(true));
    assert_eq!(list.title.as_deref(), Some("List Sandboxes"));
}

#[tokio::test]
async fn a_panicking_tool_is_reported_and_the_plugin_keeps_serving() {
    let (_dir, panicky) = activate("fixture-panicky", "panicky");

    assert_eq!(
        call(&panicky, "boom", json!({"message": "kaboom"})).await,
        Err(CallError::Panicked("tool boom panicked: kaboom".to_owned()))
    );
    assert_eq!(call(&panicky, "fine", json!({})).await, Ok(json!("ok")));

    assert_eq!(
        call(&panicky, "boom_later", json!({})).await,
        Err(CallError::Panicked(
            "tool boom_later panicked: later".to_owned()
        ))
    );
    assert_eq!(call(&panicky, "fine", json!({})).await, Ok(json!("ok")));

    assert_eq!(
        call(&panicky, "boom", json!({"message": "again"})).await,
        Err(CallError::Panicked("tool boom panicked: again".to_owned()))
    );
    assert_eq!(call(&panicky, "fine", json!({})).await, Ok(json!("ok")));
}

#[tokio::test]
async fn panics_in_concurrent_calls_leave_the_other_calls_alone() {
    let (_dir, panicky) = activate("fixture-panicky", "panicky");
    let calls = (0..16).map(|i| {
        let panicky = &panicky;
        async move {
            if i % 2 == 0 {
                call(panicky, "boom", json!({"message": format!("n{i}")})).await
            } else {
                call(panicky, "fine", json!({})).await
            }
        }
    });
    let results = futures::future::join_all(calls).await;
    for (i, result) in results.into_iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(
                result,
                Err(CallError::Panicked(format!("tool boom panicked: n{i}")))
            );
        } else {
            assert_eq!(result, Ok(json!("ok")));
        }
    }
}

#[tokio::test]
async fn dynamic_plugin_lists_its_static_tool_then_the_run_time_ones() {
    let (_dir, dynamic) = activate("fixture-dynamic", "dynamic");
    let tools: Vec<(&str, &str)> = dynamic
        .tools()
        .iter()
        .map(|t| (t.decl.name.as_str(), t.decl.toolset.as_str()))
        .collect();
    assert_eq!(
        tools,
        [
            ("static_tool", "dynamic"),
            ("dynamic_upper", "dynamic"),
            ("dynamic_count", "dynamic"),
        ]
    );
    let upper = &dynamic.tool("dynamic_upper").unwrap().decl;
    assert_eq!(upper.title.as_deref(), Some("Upper"));
    assert_eq!(
        upper.input_schema.as_ref().unwrap()["required"],
        json!(["text"])
    );
    assert_eq!(
        call(&dynamic, "dynamic_upper", json!({"text": "hi"})).await,
        Ok(json!("HI"))
    );
    assert_eq!(
        call(&dynamic, "dynamic_count", json!({})).await,
        Ok(json!(2))
    );
    assert_eq!(
        call(&dynamic, "static_tool", json!({})).await,
        Ok(json!("static"))
    );
}

#[tokio::test]
async fn builder_opens_only_the_plugins_an_active_set_needs() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks", "fixture-panicky"]);
    let found = discovery::discover(dir.path(), None).unwrap();
    let builder = Builder::with_opener(
        Arc::new(Registry::new(found.plugins)),
        Arc::new(ProviderOpener::default()),
    );
    let mapped = || mapped_plugin_libraries(std::process::id(), dir.path());
    assert!(mapped().is_empty());

    let sandboxes_only = builder.table(&ActiveSet::from_names(["sandboxes"]));
    let names: Vec<&str> = sandboxes_only
        .tools()
        .iter()
        .map(|t| t.decl.name.as_str())
        .collect();
    assert_eq!(names, ["launch_sandbox", "list_sandboxes", "stop_sandbox"]);
    assert!(sandboxes_only.instructions().contains("## Sandboxes"));
    assert_eq!(mapped(), [dir.file(&library_file_name("sandboxes"))]);

    let with_benchmarks = builder.table(&ActiveSet::from_names(["sandboxes", "benchmarks"]));
    assert!(with_benchmarks.get("echo").is_some());
    assert!(with_benchmarks.get("boom").is_none());
    let echoed = with_benchmarks
        .get("echo")
        .unwrap()
        .call(&args(json!({"text": "hi"})))
        .await;
    assert_eq!(echoed, Ok(json!("hi")));
    let mut opened = mapped();
    opened.sort();
    assert_eq!(
        opened,
        [
            dir.file(&library_file_name("benchmarks")),
            dir.file(&library_file_name("sandboxes")),
        ],
        "panicky is not opened: none of its toolsets is active"
    );

    // Each plugin is opened once: the second table shares the first's sandboxes.
    assert!(Arc::ptr_eq(
        &builder.plugin("sandboxes").unwrap(),
        &builder.plugin("sandboxes").unwrap()
    ));
    assert_eq!(builder.opened().len(), 2);
    let launched = sandboxes_only
        .get("launch_sandbox")
        .unwrap()
        .call(&args(json!({"sandbox_name": "x"})))
        .await
        .unwrap();
    let listed = with_benchmarks
        .get("list_sandboxes")
        .unwrap()
        .call(&Map::new())
        .await
        .unwrap();
    assert_eq!(listed, json!([launched]));
}
