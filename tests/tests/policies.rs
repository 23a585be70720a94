//! The policy file end to end (`--policy`): the real host with real plugins, rmcp's client and
//! raw HTTP.
//!
//! Covered: a key over its rate gets HTTP 429 with `Retry-After` and is served again after it,
//! a second key unaffected; one key's sessions capped while another opens sessions; a rule
//! hides a tool from one key's `tools/list` and refuses its call (audited with the rule) while
//! another key sees and calls it; a 5 MB result cut with the notice; a policy edited under a
//! running server taking effect without a restart (its sessions hear their tool list changed),
//! and a broken edit keeping it; a failing plugin's and a failing bridged server's circuit
//! breakers opening, shown in `/healthz` and `/toolsets`, and a later success closing them.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use e2e::{
    HostProcess, PluginDir,
    mcp::{call_tool, connect, connect_as, connect_with_token, get_ok_json, text, tool_names},
    run_host,
};
use serde_json::{Value, json};

/// How long a test waits for something that should happen within a second or two.
const PATIENCE: Duration = Duration::from_secs(20);

/// A plugin folder with `crates`, the policy file `policy` written in it, and keys made for
/// `names` (every toolset): the folder, the policy file's path, the keys file's and the keys.
fn folder(
    crates: &[&str],
    policy: &str,
    names: &[&str],
) -> (PluginDir, PathBuf, PathBuf, Vec<String>) {
    let dir = PluginDir::with(crates);
    let policy_file = dir.path().join("policy.toml");
    std::fs::write(&policy_file, policy).unwrap();
    let keys_file = dir.path().join("keys.toml");
    let keys = names
        .iter()
        .map(|name| {
            let output = run_host(
                &[
                    "keys",
                    "new",
                    name,
                    "--toolsets",
                    "*",
                    "--file",
                    keys_file.to_str().unwrap(),
                ],
                &dir,
            );
            output.assert_success();
            output.stdout.trim().to_owned()
        })
        .collect();
    (dir, policy_file, keys_file, keys)
}

/// What a raw POST got: status, `Retry-After`, session id, the JSON body.
#[derive(Debug)]
struct Answer {
    status: u16,
    retry_after: Option<u64>,
    session: Option<String>,
    body: Value,
}

/// POSTs `message` to `url` with `token` as bearer.
async fn post(url: &str, token: Option<&str>, message: Value) -> Answer {
    let mut request = e2e::http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(message.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let status = response.status().as_u16();
    let (retry_after, session) = (header("retry-after"), header("mcp-session-id"));
    let text = response.text().await.unwrap_or_default();
    // A streamed answer is one `data:` line of JSON.
    let json = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .find(|data| !data.trim().is_empty())
        .unwrap_or(&text)
        .trim();
    Answer {
        status,
        retry_after: retry_after.and_then(|s| s.parse().ok()),
        session,
        body: serde_json::from_str(json).unwrap_or(Value::Null),
    }
}

/// A `tools/call` of `name` with `arguments`.
fn tools_call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

/// An `initialize` request.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

/// A client that says each time it hears `notifications/tools/list_changed`.
#[derive(Debug, Clone)]
struct Hearing(tokio::sync::mpsc::UnboundedSender<()>);

impl rmcp::ClientHandler for Hearing {
    async fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(());
    }
}

/// Retries `ask` until it says yes, within [`PATIENCE`].
async fn eventually<F, Fut>(what: &str, mut ask: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    while !ask().await {
        assert!(
            started.elapsed() < PATIENCE,
            "{what} did not happen within {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_over_its_rate_gets_429_with_retry_after_and_is_served_again_after() {
    let policy =
        "[[limit]]\nname = \"each key\"\nper = [\"identity\"]\nrate = 2\nperiod = \"3s\"\n";
    let (dir, policy_file, keys_file, keys) = folder(&["benchmarks"], policy, &["alice", "bob"]);
    let host = HostProcess::serve(
        &dir,
        &[
            "--stateless",
            "--auth-keys",
            keys_file.to_str().unwrap(),
            "--policy",
            policy_file.to_str().unwrap(),
        ],
    );
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    let (alice, bob) = (Some(keys[0].as_str()), Some(keys[1].as_str()));
    let echo = || tools_call("echo", json!({"text": "hi"}));
    for _ in 0..2 {
        let served = post(&url, alice, echo()).await;
        assert_eq!(served.status, 200, "{served:?}");
        assert_eq!(
            served.body["result"]["content"][0]["text"], "hi",
            "{served:?}"
        );
    }
    let refused = post(&url, alice, echo()).await;
    assert_eq!(refused.status, 429, "{refused:?}");
    let wait = refused.retry_after.expect("a Retry-After header");
    assert!((1..=2).contains(&wait), "{refused:?}");
    let error = &refused.body["error"];
    assert_eq!(error["code"], 429, "{refused:?}");
    assert_eq!(error["data"]["retryAfterSeconds"], wait, "{refused:?}");
    assert_eq!(error["data"]["rule"], "each key", "{refused:?}");
    assert_eq!(error["data"]["reason"], "rate_limited", "{refused:?}");

    let other = post(&url, bob, echo()).await;
    assert_eq!(
        other.status, 200,
        "another key has its own bucket: {other:?}"
    );

    tokio::time::sleep(Duration::from_secs(wait)).await;
    let again = post(&url, alice, echo()).await;
    assert_eq!(
        again.status, 200,
        "served again after Retry-After: {again:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn one_keys_sessions_are_capped_while_another_opens_sessions() {
    let policy = "[sessions]\nper_identity = 2\n";
    let (dir, policy_file, keys_file, keys) = folder(&["benchmarks"], policy, &["alice", "bob"]);
    let host = HostProcess::serve(
        &dir,
        &[
            "--auth-keys",
            keys_file.to_str().unwrap(),
            "--policy",
            policy_file.to_str().unwrap(),
        ],
    );
    let url = format!("{}/mcp", host.base_url());
    let (alice, bob) = (Some(keys[0].as_str()), Some(keys[1].as_str()));
    for _ in 0..2 {
        let opened = post(&url, alice, initialize()).await;
        assert_eq!(opened.status, 200, "{opened:?}");
        assert!(opened.session.is_some(), "{opened:?}");
    }
    let refused = post(&url, alice, initialize()).await;
    assert_eq!(refused.status, 429, "{refused:?}");
    assert_eq!(
        refused.body["error"]["data"]["reason"], "sessions",
        "{refused:?}"
    );
    for _ in 0..2 {
        let opened = post(&url, bob, initialize()).await;
        assert_eq!(opened.status, 200, "another key opens sessions: {opened:?}");
        assert!(opened.session.is_some(), "{opened:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_hides_a_tool_from_one_key_and_refuses_its_call_while_another_calls_it() {
    let policy = "[[rule]]\nname = \"no sums for bob\"\neffect = \"deny\"\nwhen = \"identity.name == 'bob' && mcp.tool.name == 'add'\"\n";
    let (dir, policy_file, keys_file, keys) = folder(&["benchmarks"], policy, &["alice", "bob"]);
    let mut host = HostProcess::serve(
        &dir,
        &[
            "--auth-keys",
            keys_file.to_str().unwrap(),
            "--policy",
            policy_file.to_str().unwrap(),
        ],
    );
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    let alice = connect_with_token(&url, &keys[0]).await;
    let bob = connect_with_token(&url, &keys[1]).await;
    assert!(tool_names(&alice).await.contains(&"add".to_owned()));
    let names = tool_names(&bob).await;
    assert!(!names.contains(&"add".to_owned()), "{names:?}");
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    let sum = call_tool(&alice, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(text(&sum), "5");
    let refused = bob
        .call_tool(e2e::mcp::call("add", json!({"a": 2, "b": 3})))
        .await
        .expect_err("denied");
    assert!(refused.to_string().contains("Unknown tool"), "{refused}");
    let line = host.wait_for_stderr("denied by the policy", PATIENCE);
    for part in ["audit", "bob", "add", "no sums for bob", "rule"] {
        assert!(line.contains(part), "{part}: {line}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_5_mb_result_is_cut_with_a_notice() {
    let policy = "[[result]]\nname = \"one MiB\"\ntool = \"blob\"\nbytes = 1048576\n";
    let (dir, policy_file, _, _) = folder(&["benchmarks"], policy, &[]);
    let host = HostProcess::serve(&dir, &["--policy", policy_file.to_str().unwrap()]);
    let client = connect(&format!("{}/mcp?only=benchmarks", host.base_url())).await;
    let cut = call_tool(&client, "blob", json!({"bytes": 5_000_000})).await;
    assert_ne!(cut.is_error, Some(true));
    let first = cut.content[0].as_text().expect("the text, cut").text.len();
    assert!(first < 1_048_576 && first > 1_000_000, "{first}");
    let notice = &cut.content.last().unwrap().as_text().unwrap().text;
    for part in [
        "over the cap of 1048576 bytes",
        "\"rule\":\"one MiB\"",
        "textBytesCut",
    ] {
        assert!(notice.contains(part), "{part}: {notice}");
    }
    let small = call_tool(&client, "blob", json!({"bytes": 10})).await;
    assert_eq!(text(&small), "x".repeat(10), "within the cap");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_edited_under_a_running_server_takes_effect_without_a_restart() {
    let (dir, policy_file, _, _) = folder(&["benchmarks"], "", &[]);
    let mut host = HostProcess::serve(&dir, &["--policy", policy_file.to_str().unwrap()]);
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    let (heard, mut hearing) = tokio::sync::mpsc::unbounded_channel();
    let client = connect_as(&url, Hearing(heard)).await;
    assert!(tool_names(&client).await.contains(&"echo".to_owned()));
    std::fs::write(
        &policy_file,
        "[[rule]]\nname = \"no echo\"\neffect = \"deny\"\nwhen = \"mcp.tool.name == 'echo'\"\n",
    )
    .unwrap();
    tokio::time::timeout(PATIENCE, hearing.recv())
        .await
        .expect("the session hears its tool list changed")
        .expect("the client is gone");
    assert!(
        !tool_names(&client).await.contains(&"echo".to_owned()),
        "the new rule hides echo"
    );
    std::fs::write(
        &policy_file,
        "\n[[rule]]\neffect = \"allow\"\nwhen = \"1 +\"\n",
    )
    .unwrap();
    let warning = host.wait_for_stderr("the policy read before stays in force", PATIENCE);
    assert!(warning.contains("line 2"), "{warning}");
    assert!(
        !tool_names(&client).await.contains(&"echo".to_owned()),
        "the last good policy stays"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_plugin_opens_its_breaker_and_a_later_success_closes_it() {
    let policy = "[[breaker]]\nname = \"panics\"\nplugin = \"panicky\"\nfailures = 2\nwindow = \"1m\"\nopen_for = \"2s\"\n";
    let (dir, policy_file, _, _) = folder(&["fixture-panicky"], policy, &[]);
    let host = HostProcess::serve(
        &dir,
        &[
            "--isolate",
            "panicky",
            "--policy",
            policy_file.to_str().unwrap(),
        ],
    );
    let base = host.base_url();
    let client = connect(&format!("{base}/mcp?only=panicky")).await;
    for _ in 0..2 {
        let failed = call_tool(&client, "boom", json!({"message": "down"})).await;
        assert_eq!(failed.is_error, Some(true));
    }
    let refused = client
        .call_tool(e2e::mcp::call("fine", json!({})))
        .await
        .expect_err("the breaker is open");
    let refused = refused.to_string();
    assert!(
        refused.contains("circuit breaker `panics` is open"),
        "{refused}"
    );
    let open = get_ok_json(&format!("{base}/healthz")).await;
    assert_eq!(open["status"], "degraded", "{open}");
    assert_eq!(open["breakers"][0]["plugin"], "panicky", "{open}");
    assert_eq!(open["breakers"][0]["state"], "open", "{open}");
    eventually(
        "the probe is let through and closes the breaker",
        || async {
            matches!(
                client.call_tool(e2e::mcp::call("fine", json!({}))).await,
                Ok(result) if text(&result) == "ok"
            )
        },
    )
    .await;
    let closed = get_ok_json(&format!("{base}/healthz")).await;
    assert_eq!(closed["breakers"][0]["state"], "closed", "{closed}");
    assert_eq!(closed["status"], "ok", "{closed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_bridged_server_opens_its_breaker_and_a_later_success_closes_it() {
    let policy = "[[breaker]]\nname = \"tiny down\"\nplugin = \"tiny\"\nfailures = 2\nwindow = \"1m\"\nopen_for = \"2s\"\n";
    let (dir, policy_file, _, _) = folder(&[], policy, &[]);
    let script = e2e::workspace_root().join("tests/servers/tiny_mcp.py");
    let servers = json!({"mcpServers": {"tiny": {"command": "python3", "args": [script]}}});
    std::fs::write(dir.file("mcp.json"), servers.to_string()).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let host = HostProcess::serve(
        &dir,
        &[
            "--cache-dir",
            cache.path().to_str().unwrap(),
            "--policy",
            policy_file.to_str().unwrap(),
        ],
    );
    let base = host.base_url();
    let client = connect(&format!("{base}/mcp?toolsets=tiny")).await;
    for _ in 0..2 {
        let failed = client
            .call_tool(e2e::mcp::call("tiny__echo", json!({"fail": true})))
            .await;
        let failed = format!("{failed:?}");
        assert!(failed.contains("the database is down"), "{failed}");
    }
    let refused = client
        .call_tool(e2e::mcp::call("tiny__echo", json!({"text": "a"})))
        .await
        .expect_err("the breaker is open")
        .to_string();
    assert!(
        refused.contains("circuit breaker `tiny down` is open")
            && refused.contains("the database is down"),
        "{refused}"
    );
    let open = get_ok_json(&format!("{base}/toolsets")).await;
    assert_eq!(open["breakers"][0]["plugin"], "tiny", "{open}");
    assert_eq!(open["breakers"][0]["state"], "open", "{open}");
    let health = get_ok_json(&format!("{base}/healthz")).await;
    assert_eq!(health["status"], "degraded", "{health}");
    eventually(
        "the probe is let through and closes the breaker",
        || async {
            matches!(
                client.call_tool(e2e::mcp::call("tiny__echo", json!({"text": "back"}))).await,
                Ok(result) if text(&result) == "back"
            )
        },
    )
    .await;
    let closed = get_ok_json(&format!("{base}/toolsets")).await;
    assert_eq!(closed["breakers"][0]["state"], "closed", "{closed}");
}
