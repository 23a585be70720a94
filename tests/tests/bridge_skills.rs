//! A bridged server's skills (SEP-2640) relayed under its name: the tiny server
//! (`tests/servers/tiny_mcp.py` with `TINY_SKILLS`) serves `skill://git-workflow/SKILL.md`
//! and a file beside it; the host serves them as `skill://<server>/git-workflow/...`, from the
//! server's cached listing before it starts, its files read from it, in its toolset only.

use e2e::{
    mcp::{connect, get_ok_json, tool_names},
    procs::children,
    run_host,
};
use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use crate::bridge::{refresh, serve, tiny, with_servers};
use crate::search::{entries, got_and_read, listed_skills, refused};

/// The tiny server's entry serving its skill.
fn tiny_with_skills() -> Value {
    tiny(
        "ok",
        json!({"env": {"TINY_MODE": "ok", "TINY_SKILLS": "1"}}),
    )
}

/// The URI the host serves the tiny server `server`'s skill under.
fn served(server: &str) -> String {
    format!("skill://{server}/git-workflow/SKILL.md")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bridged_servers_cached_skill_is_listed_got_and_read_under_its_name_in_its_toolset_only()
{
    let (dir, cache) = with_servers(json!({
        "tiny": tiny_with_skills(),
        "twin": tiny_with_skills(),
    }));
    refresh(&dir, &cache).assert_success();
    let host = serve(&dir, &cache);
    let url = format!("{}/mcp", host.base_url());
    let uri = served("tiny");

    let client = connect(&format!("{url}?toolsets=tiny")).await;
    let skills = listed_skills(&client).await;
    assert_eq!(
        entries(&skills),
        [(
            uri.as_str(),
            "git-workflow",
            "Commit and branch the team's way"
        )]
    );
    assert_eq!(
        children(host.pid()),
        Vec::<u32>::new(),
        "listed from the cache, nothing started"
    );
    let read_back = got_and_read(&client, &uri).await;
    let style = "skill://tiny/git-workflow/references/style.md";
    let read_uris: Vec<&str> = read_back.iter().map(|(uri, _)| uri.as_str()).collect();
    assert_eq!(read_uris, [uri.as_str(), style]);
    assert!(read_back[0].1.starts_with("---\nname: git-workflow\n"));
    assert_eq!(children(host.pid()).len(), 1, "started by the first read");
    let resources = client.list_all_resources().await.expect("resources/list");
    assert!(resources.iter().any(|r| r.uri == uri), "{resources:?}");
    client
        .read_resource(ReadResourceRequestParams::new(
            "skill://tiny/git-workflow/../../etc/passwd",
        ))
        .await
        .expect_err("not a file of the skill");

    let other = connect(&format!("{url}?toolsets=twin")).await;
    let skills = listed_skills(&other).await;
    let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(uris, [served("twin")], "{skills:?}");
    refused(&other, &uri).await;

    let report = get_ok_json(&format!("{}/toolsets?toolsets=tiny", host.base_url())).await;
    assert_eq!(report["skills"], json!([uri]), "{report}");
    let report = get_ok_json(&format!("{}/toolsets", host.base_url())).await;
    assert!(
        report["skills"].as_array().is_none_or(Vec::is_empty),
        "no URL key selects no server: {report}"
    );
    let listed = run_host(
        &["list", "--cache-dir", cache.path().to_str().unwrap()],
        &dir,
    );
    listed.assert_success();
    assert!(
        listed
            .stdout
            .contains(&format!("skill {uri}: Commit and branch the team's way")),
        "{}",
        listed.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bridged_servers_skills_with_nothing_cached_are_relayed_once_started_each_under_its_name() {
    let (dir, cache) = with_servers(json!({
        "tiny": tiny_with_skills(),
        "twin": tiny_with_skills(),
    }));
    let host = serve(&dir, &cache);
    let url = format!("{}/mcp?toolsets=tiny,twin", host.base_url());
    let first = connect(&url).await;
    let names = tool_names(first.peer()).await;
    assert!(names.contains(&"twin__echo".to_owned()), "{names:?}");

    let client = connect(&url).await;
    let skills = listed_skills(&client).await;
    let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(uris, [served("tiny"), served("twin")], "{skills:?}");
    for uri in [served("tiny"), served("twin")] {
        let read = client
            .read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await
            .expect("resources/read of SKILL.md");
        let text = format!("{:?}", read.contents);
        assert!(text.contains("name: git-workflow"), "{text}");
    }
}
