//! Many tools: `search_tools` over the manifests (a plugin that is not opened, a bridged server
//! that is not started), what the caller's bound and the URL's filters hide from it, and
//! discovery mode (`?discover`), whose `call_tool` opens the one plugin it calls.

use e2e::{
    HostProcess, PluginDir,
    mcp::{Client, call_tool, connect, connect_with_token, text, tool_names},
    procs::children,
};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::bridge::{refresh, serve, tiny, with_servers};

/// A successful result's structured content.
fn value(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "an error: {}", text(result));
    result
        .structured_content
        .clone()
        .expect("structured content")
}

/// The names `search_tools` answers for `arguments`, best first.
async fn found(client: &Client, arguments: Value) -> Vec<String> {
    let answer = value(&call_tool(client, "search_tools", arguments).await);
    answer["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A host serving `sandboxes` and `benchmarks`, neither opened yet.
fn two_plugins() -> (PluginDir, HostProcess) {
    let dir = PluginDir::with(&["sandboxes", "benchmarks"]);
    let host = HostProcess::serve(&dir, &[]);
    (dir, host)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_search_finds_a_tool_of_a_plugin_it_does_not_open() {
    let (dir, host) = two_plugins();
    let client = connect(&format!("{}/mcp?discover", host.base_url())).await;
    let answer = value(
        &call_tool(
            &client,
            "search_tools",
            json!({"query": "launch a new sandbox to run code"}),
        )
        .await,
    );
    let best = &answer["tools"][0];
    assert_eq!(best["name"], "launch_sandbox", "{answer}");
    assert_eq!(best["toolset"], "sandboxes");
    assert_eq!(best["description"], "Launch a sandbox to run code in.");
    assert_eq!(
        found(&client, json!({"query": "add two numbers", "limit": 1})).await,
        ["add"]
    );
    assert_eq!(
        found(
            &client,
            json!({"query": "sandbox", "annotations": {"readOnlyHint": true}})
        )
        .await,
        ["list_sandboxes"]
    );
    assert!(
        host.mapped_plugin_libraries(&dir).is_empty(),
        "searching opens nothing: {:?}",
        host.mapped_plugin_libraries(&dir)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_mode_lists_its_own_tools_and_call_tool_opens_only_the_plugin_it_calls() {
    let (dir, host) = two_plugins();
    let client = connect(&format!("{}/mcp?discover", host.base_url())).await;
    let listed = tool_names(&client).await;
    assert_eq!(
        listed,
        ["search_tools", "call_tool", "list_server_toolsets"]
    );
    assert!(host.mapped_plugin_libraries(&dir).is_empty());

    let launched = call_tool(
        &client,
        "call_tool",
        json!({"name": "launch_sandbox", "arguments": {"sandbox_name": "a"}}),
    )
    .await;
    assert_eq!(value(&launched)["name"], "a", "{}", text(&launched));
    let mapped = host.mapped_plugin_file_names(&dir);
    assert_eq!(mapped.len(), 1, "only sandboxes is opened: {mapped:?}");
    assert!(mapped[0].contains("sandboxes"), "{mapped:?}");
    assert_eq!(
        tool_names(&client).await,
        listed,
        "the list does not change"
    );

    let bad = call_tool(
        &client,
        "call_tool",
        json!({"name": "launch_sandbox", "arguments": {}}),
    )
    .await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("sandbox_name"), "{}", text(&bad));
    let refused = client
        .call_tool(e2e::mcp::call("call_tool", json!({"arguments": {}})))
        .await
        .expect_err("call_tool needs a name");
    assert!(refused.to_string().contains("`name`"), "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_urls_filters_hide_what_they_hide_from_search_and_call_tool() {
    let (_dir, host) = two_plugins();
    let url = format!("{}/mcp", host.base_url());
    let without = connect(&format!("{url}?discover&without=sandboxes")).await;
    let names = found(&without, json!({"query": "sandbox", "limit": 50})).await;
    assert!(!names.iter().any(|n| n.contains("sandbox")), "{names:?}");
    let refused = without
        .call_tool(e2e::mcp::call(
            "call_tool",
            json!({"name": "list_sandboxes", "arguments": {}}),
        ))
        .await
        .expect_err("a toolset the URL drops");
    assert!(refused.to_string().contains("Unknown tool"), "{refused}");

    let excluded = connect(&format!("{url}?discover&exclude_tools=launch_*")).await;
    let names = found(&excluded, json!({"query": "launch a sandbox"})).await;
    assert!(!names.contains(&"launch_sandbox".to_owned()), "{names:?}");
    assert!(names.contains(&"list_sandboxes".to_owned()), "{names:?}");

    let reading = connect(&format!("{url}?discover&readonly")).await;
    let names = found(&reading, json!({"query": "stop or launch a sandbox"})).await;
    assert_eq!(names[0], "list_sandboxes", "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n == "launch_sandbox" || n == "stop_sandbox"),
        "read-only tools only: {names:?}"
    );

    // Normal mode with `?search`: every tool listed, and search_tools too, over the active set.
    let searching = connect(&format!("{url}?search&only=benchmarks")).await;
    let listed = tool_names(&searching).await;
    assert!(
        listed.contains(&"search_tools".to_owned()) && listed.contains(&"echo".to_owned()),
        "{listed:?}"
    );
    let names = found(&searching, json!({"query": "sandbox", "limit": 50})).await;
    assert!(!names.iter().any(|n| n.contains("sandbox")), "{names:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_callers_bound_hides_what_it_hides_from_search() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks"]);
    let file = dir.path().join("keys.toml");
    let alice = crate::auth::new_key(&dir, &file, "alice", &["--toolsets", "benchmarks"]);
    let host = HostProcess::serve(&dir, &["--auth-keys", file.to_str().unwrap()]);
    let client = connect_with_token(&format!("{}/mcp?discover", host.base_url()), &alice).await;
    let names = found(&client, json!({"query": "launch a sandbox", "limit": 50})).await;
    assert!(!names.iter().any(|n| n.contains("sandbox")), "{names:?}");
    assert_eq!(
        found(&client, json!({"query": "echo text"})).await[0],
        "echo"
    );
    let refused = client
        .call_tool(e2e::mcp::call(
            "call_tool",
            json!({"name": "launch_sandbox", "arguments": {"sandbox_name": "a"}}),
        ))
        .await
        .expect_err("outside the key's toolsets");
    assert!(refused.to_string().contains("Unknown tool"), "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_search_finds_a_tool_of_a_bridged_server_it_does_not_start() {
    let (dir, cache) = with_servers(json!({"tiny": tiny("ok", json!({}))}));
    refresh(&dir, &cache).assert_success();
    let host = serve(&dir, &cache);
    let client = connect(&format!("{}/mcp?discover", host.base_url())).await;
    let answer = value(&call_tool(&client, "search_tools", json!({"query": "echo my text"})).await);
    let best = &answer["tools"][0];
    assert_eq!(best["name"], "tiny__echo", "{answer}");
    assert_eq!(best["toolset"], "tiny");
    assert!(
        best["inputSchema"]["properties"]["text"].is_object(),
        "the cached schema: {best}"
    );
    assert_eq!(children(host.pid()), Vec::<u32>::new(), "not started");

    let echoed = call_tool(
        &client,
        "call_tool",
        json!({"name": "tiny__echo", "arguments": {"text": "hi"}}),
    )
    .await;
    assert_eq!(text(&echoed), "hi");
    assert_eq!(children(host.pid()).len(), 1, "started by the call");
}

/// What `SKILL.md` of the `run-code` skill says.
const SKILL_MD: &str = "---\nname: run-code\ndescription: Run code in a sandbox, then stop it\n---\n\
# Run code\n\nLaunch a sandbox with launch_sandbox; its limits are in references/limits.md.\n";

/// The other file of the `run-code` skill.
const LIMITS_MD: &str = "At most 32 sandboxes per client.\n";

/// The text of a read resource's only contents.
fn contents_text(read: &rmcp::model::ReadResourceResult) -> String {
    match &read.contents[..] {
        [rmcp::model::ResourceContents::TextResourceContents { text, .. }] => text.clone(),
        other => panic!("one text contents, not {other:?}"),
    }
}

/// The skills `client` is served, its server having declared the extension.
pub(crate) async fn listed_skills(client: &Client) -> Vec<rmcp::model::Skill> {
    let declared = client
        .peer_info()
        .expect("initialized")
        .capabilities
        .clone();
    assert!(declared.supports_skills(), "{declared:?}");
    client.list_all_skills().await.expect("skills/list")
}

/// The URI, name and description of each of `skills`.
pub(crate) fn entries(skills: &[rmcp::model::Skill]) -> Vec<(&str, &str, &str)> {
    (skills.iter())
        .map(|s| {
            let f = &s.frontmatter;
            (s.uri.as_str(), f.name.as_str(), f.description.as_str())
        })
        .collect()
}

/// `client` can neither get the skill `uri` nor read it.
pub(crate) async fn refused(client: &Client, uri: &str) {
    use rmcp::model::{GetSkillRequestParams, ReadResourceRequestParams};
    client
        .get_skill(GetSkillRequestParams::new(uri))
        .await
        .expect_err("not this URL's skill");
    client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .expect_err("not this URL's skill file");
}

/// Gets the skill `uri` and reads each file its entry lists, checking each against its size
/// and `sha256` digest and that it comes back under its URI: each file's URI and text, sorted.
pub(crate) async fn got_and_read(client: &Client, uri: &str) -> Vec<(String, String)> {
    use rmcp::model::{GetSkillRequestParams, ReadResourceRequestParams, SkillResources};
    let got = client
        .get_skill(GetSkillRequestParams::new(uri))
        .await
        .expect("skills/get");
    let SkillResources::Files(files) = &got.skill.resources else {
        panic!("a manifest of files: {got:?}");
    };
    let mut read_back = Vec::new();
    for file in files {
        let read = client
            .read_resource(ReadResourceRequestParams::new(file.uri.clone()))
            .await
            .expect("resources/read of a skill file");
        let text = contents_text(&read);
        file.verify(text.as_bytes())
            .unwrap_or_else(|e| panic!("{}: {e}", file.uri));
        let served = serde_json::to_value(&read.contents[0]).unwrap();
        assert_eq!(served["uri"], file.uri.as_str(), "{read:?}");
        read_back.push((file.uri.clone(), text));
    }
    read_back.sort();
    read_back
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugins_skill_is_listed_got_and_read_with_its_digests_in_its_toolsets_only() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks"]);
    let skill = dir.path().join("skills/sandboxes/run-code");
    std::fs::create_dir_all(skill.join("references")).unwrap();
    std::fs::write(skill.join("SKILL.md"), SKILL_MD).unwrap();
    std::fs::write(skill.join("references/limits.md"), LIMITS_MD).unwrap();
    let host = HostProcess::serve(&dir, &[]);
    let url = format!("{}/mcp", host.base_url());

    let client = connect(&format!("{url}?discover&only=sandboxes")).await;
    let skills = listed_skills(&client).await;
    let uri = "skill://sandboxes/run-code/SKILL.md";
    assert_eq!(
        entries(&skills),
        [(uri, "run-code", "Run code in a sandbox, then stop it")]
    );
    let read_back = got_and_read(&client, uri).await;
    assert_eq!(
        read_back,
        [
            (uri.to_owned(), SKILL_MD.to_owned()),
            (
                "skill://sandboxes/run-code/references/limits.md".to_owned(),
                LIMITS_MD.to_owned()
            ),
        ]
    );
    assert!(
        host.mapped_plugin_libraries(&dir).is_empty(),
        "skills open nothing"
    );

    let other = connect(&format!("{url}?only=benchmarks")).await;
    assert!(
        other
            .list_all_skills()
            .await
            .expect("skills/list")
            .is_empty()
    );
    refused(&other, uri).await;

    let report =
        e2e::mcp::get_ok_json(&format!("{}/toolsets?only=sandboxes", host.base_url())).await;
    assert_eq!(report["skills"], json!([uri]), "{report}");
    let listed = e2e::run_host(&["list"], &dir);
    listed.assert_success();
    assert!(
        listed
            .stdout
            .contains(&format!("skill {uri}: Run code in a sandbox")),
        "{}",
        listed.stdout
    );
}
