//! Who may call what, end to end: the real host with `--auth-keys` or `--oauth-issuer`, real
//! plugins, rmcp's client and raw HTTP.
//!
//! Covered: a non-loopback bind without authentication refuses to start naming the flags; `keys
//! new`, `keys list` and `keys revoke`; a key valid, wrong, missing, expired, bounded to its
//! toolsets and read-only, and the keys file changing under a running server; `/healthz` open and
//! naming no plugin, `/toolsets` and `/contributions` for the caller; a session id presented by
//! another caller gets 404; plugins see the caller; an audit line per call. With a JWKS this test
//! serves from keys it generates (the [`issuer`]): a valid token (ES256, EdDSA, RS256, PS256),
//! expired, not yet valid, wrong issuer, wrong audience, bad signature, `alg: none`, HMAC signed
//! with the public key (EC and RSA), an unknown key id then rotated keys, a dropped key refused
//! at the next refresh, scopes mapping to toolsets and the `insufficient_scope` step-up; the
//! protected resource metadata.

mod issuer;

use std::time::{Duration, Instant};

use e2e::{
    HostProcess, PluginDir,
    mcp::{call_tool, connect_2026_with, connect_with_token, text, tool_names},
    run_host,
};
use issuer::{Issuer, SigningKey, hmac_with_public_key, now, unsigned};
use jsonwebtoken::Algorithm;
use serde_json::{Value, json};

/// How long a test waits for something that should happen within a second or two.
const PATIENCE: Duration = Duration::from_secs(20);

/// The audience the OAuth tests' server says it is.
const AUDIENCE: &str = "http://mcp.test/mcp";

/// `keys new NAME ARGS --file FILE` in `dir`: the key it printed.
pub(crate) fn new_key(
    dir: &PluginDir,
    file: &std::path::Path,
    name: &str,
    args: &[&str],
) -> String {
    let file = file.to_str().expect("a UTF-8 path");
    let mut all = vec!["keys", "new", name];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--file", file]);
    let output = run_host(&all, dir);
    output.assert_success();
    output.stdout.trim().to_owned()
}

/// A host serving `crates` with the keys file `keys.toml` holding what `keys` made (name and
/// `keys new` arguments each); the host, its MCP URL, the keys file and the keys in order.
fn serve_with_keys(
    crates: &[&str],
    keys: &[(&str, &[&str])],
) -> (
    PluginDir,
    HostProcess,
    String,
    std::path::PathBuf,
    Vec<String>,
) {
    let dir = PluginDir::with(crates);
    let file = dir.path().join("keys.toml");
    let made = keys
        .iter()
        .map(|(name, args)| new_key(&dir, &file, name, args))
        .collect();
    let host = HostProcess::serve(&dir, &["--auth-keys", file.to_str().unwrap()]);
    let url = format!("{}/mcp", host.base_url());
    (dir, host, url, file, made)
}

/// The JSON of `GET path` on `host` with `token` as bearer, which must answer 200.
async fn report_json(host: &HostProcess, path: &str, token: Option<&str>) -> Value {
    let answer = send(&format!("{}{path}", host.base_url()), token, None, None).await;
    assert_eq!(answer.status, 200, "{path}: {answer:?}");
    serde_json::from_str(&answer.body).unwrap()
}

/// The string `field` of each entry of the JSON array `list`.
fn each<'v>(list: &'v Value, field: &str) -> Vec<&'v str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|entry| entry[field].as_str().unwrap())
        .collect()
}

/// What a raw request got: status, `WWW-Authenticate`, session id, body.
#[derive(Debug)]
struct Answer {
    status: u16,
    challenge: String,
    session: Option<String>,
    body: String,
}

/// Sends `body` to `url` (POST, or GET when `None`) with `token` as bearer and `session` as
/// session id.
async fn send(
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: Option<Value>,
) -> Answer {
    let http = e2e::http();
    let mut request = match &body {
        Some(body) => http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string()),
        None => http.get(url),
    };
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
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
    Answer {
        status: response.status().as_u16(),
        challenge: header("www-authenticate").unwrap_or_default(),
        session: header("mcp-session-id"),
        body: response.text().await.unwrap_or_default(),
    }
}

/// An `initialize` request.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

/// Panics unless `answer` is a 401 with a Bearer challenge whose text holds `reason`.
fn assert_refused(answer: &Answer, reason: &str) {
    assert_eq!(answer.status, 401, "{answer:?}");
    assert!(answer.challenge.starts_with("Bearer "), "{answer:?}");
    assert!(
        answer.challenge.contains(reason) || answer.body.contains(reason),
        "expected `{reason}` in {answer:?}"
    );
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

#[test]
fn a_non_loopback_bind_without_authentication_refuses_to_start_naming_the_flags() {
    let dir = PluginDir::with(&["benchmarks"]);
    let output = run_host(&["serve", "--host", "0.0.0.0", "--port", "0"], &dir);
    assert!(!output.status.success(), "{output:?}");
    for flag in [
        "--auth-keys FILE",
        "--oauth-issuer URL",
        "--allow-unauthenticated",
    ] {
        assert!(output.stderr.contains(flag), "{flag}: {}", output.stderr);
    }
    let mut open = HostProcess::spawn(
        &[
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--allow-unauthenticated",
        ],
        &[("REACTOR_MCP_PLUGIN_DIR", dir.path().to_str().unwrap())],
    );
    open.wait_for_stderr("WITHOUT AUTHENTICATION", PATIENCE);
}

#[test]
fn keys_new_prints_the_key_once_and_keys_list_shows_bounds_never_keys() {
    let dir = PluginDir::new();
    let file = dir.path().join("keys.json");
    let key = new_key(
        &dir,
        &file,
        "alice",
        &["--toolsets", "benchmarks,sandboxes", "--readonly"],
    );
    assert!(key.starts_with("rmk_"), "{key}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(&key), "the file never holds the key: {text}");
    let listed = run_host(&["keys", "list", "--file", file.to_str().unwrap()], &dir);
    listed.assert_success();
    assert_eq!(
        listed.stdout,
        "alice\ttoolsets=benchmarks,sandboxes\treadonly\n"
    );
    let refused = run_host(
        &["keys", "new", "bob", "--file", file.to_str().unwrap()],
        &dir,
    );
    assert!(
        !refused.status.success() && refused.stderr.contains("--toolsets"),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_or_wrong_key_gets_401_and_healthz_stays_open() {
    let (_dir, host, url, _, _) =
        serve_with_keys(&["benchmarks"], &[("alice", &["--toolsets", "*"])]);
    let missing = send(&url, None, None, Some(initialize())).await;
    assert_eq!(missing.status, 401, "{missing:?}");
    assert_eq!(missing.challenge, r#"Bearer realm="mcp""#);
    assert_refused(
        &send(&url, Some("rmk_wrong"), None, Some(initialize())).await,
        "invalid_token",
    );
    let toolsets = format!("{}/toolsets", host.base_url());
    assert_eq!(send(&toolsets, None, None, None).await.status, 401);
    assert_eq!(
        send(
            &format!("{}/contributions", host.base_url()),
            None,
            None,
            None
        )
        .await
        .status,
        401
    );
    let health = send(&format!("{}/healthz", host.base_url()), None, None, None).await;
    assert_eq!(health.status, 200, "{health:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_is_bounded_to_its_toolsets_and_the_url_narrows_inside() {
    let (_dir, host, url, _, keys) = serve_with_keys(
        &["benchmarks", "sandboxes"],
        &[
            ("alice", &["--toolsets", "benchmarks"]),
            ("reader", &["--toolsets", "sandboxes", "--readonly"]),
        ],
    );
    let (alice, reader) = (&keys[0], &keys[1]);
    let client = connect_with_token(&format!("{url}?toolsets=benchmarks,sandboxes"), alice).await;
    let names = tool_names(&client).await;
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("sandbox")),
        "never widened: {names:?}"
    );
    let refused = client
        .call_tool(e2e::mcp::call("list_sandboxes", json!({})))
        .await
        .expect_err("outside the key's toolsets");
    assert!(refused.to_string().contains("Unknown tool"), "{refused}");
    let narrowed = connect_with_token(&format!("{url}?only=benchmarks&tools=add"), alice).await;
    assert_eq!(tool_names(&narrowed).await, ["add"]);

    let reading = connect_with_token(&format!("{url}?toolsets=sandboxes"), reader).await;
    let names = tool_names(&reading).await;
    assert!(names.contains(&"list_sandboxes".to_owned()), "{names:?}");
    assert!(
        !names.contains(&"launch_sandbox".to_owned()),
        "read-only: {names:?}"
    );
    let contributions = report_json(&host, "/contributions", Some(reader)).await;
    assert_eq!(
        each(&contributions["tools"], "name"),
        ["list_sandboxes"],
        "read-only tools only: {contributions}"
    );

    let path = "/toolsets?toolsets=benchmarks,sandboxes";
    let report = report_json(&host, path, Some(alice)).await;
    assert_eq!(
        each(&report["toolsets"], "name"),
        ["benchmarks"],
        "{report}"
    );
    assert_eq!(report["active"], json!(["benchmarks"]), "{report}");
    let own = call_tool(&client, "list_server_toolsets", json!({})).await;
    let own: Value = serde_json::from_str(&text(&own)).unwrap();
    assert_eq!(own["toolsets"].as_array().map(Vec::len), Some(1), "{own}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_learns_nothing_of_processes_outside_its_bound() {
    let dir = PluginDir::with(&["benchmarks", "sandboxes"]);
    let file = dir.path().join("keys.toml");
    let alice = new_key(&dir, &file, "alice", &["--toolsets", "benchmarks"]);
    let admin = new_key(&dir, &file, "admin", &["--toolsets", "*"]);
    let host = HostProcess::serve(
        &dir,
        &[
            "--auth-keys",
            file.to_str().unwrap(),
            "--isolate",
            "sandboxes",
        ],
    );
    let url = format!("{}/mcp", host.base_url());
    let opener = connect_with_token(&format!("{url}?toolsets=sandboxes"), &admin).await;
    call_tool(&opener, "list_sandboxes", json!({})).await;
    let seen = report_json(&host, "/toolsets", Some(&admin)).await;
    assert_eq!(seen["processes"][0]["plugin"], "sandboxes", "{seen}");
    let hidden = report_json(&host, "/toolsets", Some(&alice)).await;
    assert_eq!(hidden.get("processes"), None, "{hidden}");
}

#[tokio::test(flavor = "multi_thread")]
async fn reports_name_only_plugins_inside_the_bound_and_healthz_names_none() {
    let (_dir, host, url, _, keys) = serve_with_keys(
        &["benchmarks", "fixture-base", "fixture-ext-unopenable"],
        &[
            ("alice", &["--toolsets", "benchmarks"]),
            ("admin", &["--toolsets", "*"]),
            ("bob", &["--toolsets", "base"]),
        ],
    );
    let (alice, admin, bob) = (&keys[0], &keys[1], &keys[2]);
    // Listing `base` opens ext-unopenable, whose extension of `trace` fails to open.
    let opener = connect_with_token(&format!("{url}?toolsets=base"), admin).await;
    tool_names(&opener).await;

    let health = report_json(&host, "/healthz", None).await;
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health.get("failed"), None, "{health}");
    assert_eq!(health.get("processes"), None, "{health}");
    assert!(!health.to_string().contains("unopenable"), "{health}");

    let seen = report_json(&host, "/toolsets", Some(admin)).await;
    assert_eq!(seen["failed"][0]["plugin"], "ext-unopenable", "{seen}");
    assert!(
        seen["failed"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("ext-unopenable")),
        "{seen}"
    );
    let hidden = report_json(&host, "/toolsets", Some(alice)).await;
    assert_eq!(hidden.get("failed"), None, "{hidden}");
    // ext-unopenable has no toolset of its own: it is seen by who may use the tool it extends.
    let extended = report_json(&host, "/toolsets", Some(bob)).await;
    assert_eq!(
        extended["failed"][0]["plugin"], "ext-unopenable",
        "{extended}"
    );

    let tools_of = |report: &Value| -> Vec<String> {
        report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                format!(
                    "{}/{}",
                    t["toolset"].as_str().unwrap(),
                    t["name"].as_str().unwrap()
                )
            })
            .collect()
    };
    let all = report_json(&host, "/contributions", Some(admin)).await;
    assert!(tools_of(&all).contains(&"base/trace".to_owned()), "{all}");
    let trace = all["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "trace")
        .unwrap();
    assert_eq!(trace["extensions"][0]["plugin"], "ext-unopenable", "{all}");
    let bounded = report_json(&host, "/contributions", Some(alice)).await;
    let tools = tools_of(&bounded);
    assert!(tools.contains(&"benchmarks/echo".to_owned()), "{bounded}");
    assert!(
        tools.iter().all(|t| t.starts_with("benchmarks/")),
        "{bounded}"
    );
    assert!(!bounded.to_string().contains("unopenable"), "{bounded}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_filtered_by_the_caller_is_private_to_it() {
    let (_dir, _host, url, _file, keys) =
        serve_with_keys(&["benchmarks"], &[("alice", &["--toolsets", "*"])]);
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.as_str(),
        )
        .auth_header(keys[0].clone());
    let client = connect_2026_with(config, rmcp::model::ClientConfig::default()).await;
    let tools = client.list_tools(None).await.expect("tools/list answers");
    assert_eq!(tools.ttl_ms, Some(0));
    assert_eq!(tools.cache_scope, Some(rmcp::model::CacheScope::Private));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_key_is_told_it_expired() {
    let (_dir, _host, url, _, keys) = serve_with_keys(
        &["benchmarks"],
        &[(
            "old",
            &["--toolsets", "*", "--expires", "2020-01-01T00:00:00Z"],
        )],
    );
    let answer = send(&url, Some(&keys[0]), None, Some(initialize())).await;
    assert_refused(&answer, "the API key `old` expired at 2020-01-01T00:00:00Z");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_keys_file_is_read_again_when_it_changes_and_a_revoked_key_is_refused() {
    let (dir, mut host, url, file, keys) =
        serve_with_keys(&["benchmarks"], &[("alice", &["--toolsets", "*"])]);
    let bob = new_key(&dir, &file, "bob", &["--toolsets", "benchmarks"]);
    eventually("bob's new key is accepted", || async {
        send(&url, Some(&bob), None, Some(initialize()))
            .await
            .status
            == 200
    })
    .await;
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, "this is not TOML [").unwrap();
    host.wait_for_stderr("the keys read before stay in force", PATIENCE);
    assert_eq!(
        send(&url, Some(&keys[0]), None, Some(initialize()))
            .await
            .status,
        200,
        "a broken file keeps the keys in force"
    );
    std::fs::write(&file, text).unwrap();
    let revoked = run_host(
        &["keys", "revoke", "alice", "--file", file.to_str().unwrap()],
        &dir,
    );
    revoked.assert_success();
    assert!(
        revoked.stderr.contains("revoked 1 key(s) named `alice`"),
        "{revoked:?}"
    );
    eventually("alice's revoked key is refused", || async {
        send(&url, Some(&keys[0]), None, Some(initialize()))
            .await
            .status
            == 401
    })
    .await;
    assert_eq!(
        send(&url, Some(&bob), None, Some(initialize()))
            .await
            .status,
        200
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_id_presented_by_another_caller_is_not_found() {
    let (_dir, _host, url, _, keys) = serve_with_keys(
        &["benchmarks"],
        &[
            ("alice", &["--toolsets", "*"]),
            ("mallory", &["--toolsets", "*"]),
        ],
    );
    let (alice, mallory) = (&keys[0], &keys[1]);
    let opened = send(&url, Some(alice), None, Some(initialize())).await;
    let session = opened.session.expect("a session id");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let stolen = send(&url, Some(mallory), Some(&session), Some(list.clone())).await;
    assert_eq!(stolen.status, 404, "{stolen:?}");
    let stolen_stream = send(&url, Some(mallory), Some(&session), None).await;
    assert_eq!(stolen_stream.status, 404, "{stolen_stream:?}");
    let own = send(&url, Some(alice), Some(&session), Some(list)).await;
    assert_eq!(own.status, 200, "{own:?}");
}

/// A host serving `fixture-context` to the key `alice` with `args`; the host and alice's client.
async fn context_as_alice(args: &[&str]) -> (PluginDir, HostProcess, String, e2e::mcp::Client) {
    let dir = PluginDir::with(&["fixture-context"]);
    let file = dir.path().join("keys.toml");
    let key = new_key(&dir, &file, "alice", &["--toolsets", "context"]);
    let mut all = vec!["--auth-keys", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let host = HostProcess::serve(&dir, &all);
    let url = format!("{}/mcp?toolsets=context", host.base_url());
    let client = connect_with_token(&url, &key).await;
    (dir, host, key, client)
}

/// What the fixture's `caller` tool answers `client`.
async fn caller_seen_by(client: &e2e::mcp::Client) -> Value {
    let seen = call_tool(client, "caller", json!({})).await;
    seen.structured_content
        .clone()
        .unwrap_or_else(|| serde_json::from_str(&text(&seen)).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn plugins_see_the_caller_and_each_call_is_audited() {
    let (_dir, mut host, key, client) = context_as_alice(&[]).await;
    assert_eq!(
        caller_seen_by(&client).await,
        json!({"name": "alice", "scopes": []})
    );
    let line = host.wait_for_stderr("tool call", PATIENCE);
    for part in ["audit", "alice", "caller", "context", "ok", "duration_ms"] {
        assert!(line.contains(part), "{part}: {line}");
    }
    assert!(!line.contains(&key), "never a key: {line}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_isolated_plugin_sees_the_caller_too() {
    let (_dir, _host, _key, client) = context_as_alice(&["--isolate", "context"]).await;
    assert_eq!(
        caller_seen_by(&client).await,
        json!({"name": "alice", "scopes": []})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateless_server_checks_every_request() {
    let dir = PluginDir::with(&["benchmarks"]);
    let file = dir.path().join("keys.toml");
    let key = new_key(&dir, &file, "alice", &["--toolsets", "benchmarks"]);
    let host = HostProcess::serve(
        &dir,
        &["--stateless", "--auth-keys", file.to_str().unwrap()],
    );
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    let client = connect_with_token(&url, &key).await;
    assert_eq!(
        text(&call_tool(&client, "echo", json!({"text": "hi"})).await),
        "hi"
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(send(&url, None, None, Some(list.clone())).await.status, 401);
    assert_refused(
        &send(&url, Some("rmk_0"), None, Some(list)).await,
        "not a known API key",
    );
}

/// A host trusting `issuer`, with `args`; the host and its MCP URL.
fn serve_oauth(
    crates: &[&str],
    issuer: &Issuer,
    args: &[&str],
) -> (PluginDir, HostProcess, String) {
    let dir = PluginDir::with(crates);
    let mut all = vec![
        "--oauth-issuer",
        issuer.url.as_str(),
        "--oauth-audience",
        AUDIENCE,
    ];
    all.extend_from_slice(args);
    let host = HostProcess::serve(&dir, &all);
    let url = format!("{}/mcp", host.base_url());
    (dir, host, url)
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_are_checked_for_signature_time_issuer_and_audience() {
    let (es, ed, rs, ps, stranger) = (
        SigningKey::es256("es"),
        SigningKey::ed25519("ed"),
        SigningKey::rsa("rs", Algorithm::RS256),
        SigningKey::rsa("ps", Algorithm::PS256),
        SigningKey::es256("es"),
    );
    let issuer = Issuer::start(&[&es, &ed, &rs, &ps]).await;
    let (_dir, host, url) = serve_oauth(&["benchmarks"], &issuer, &[]);
    let good = issuer.claims(AUDIENCE, "alice", "");
    let with = |patch: Value| {
        let mut claims = good.clone();
        for (k, v) in patch.as_object().unwrap() {
            claims[k] = v.clone();
        }
        claims
    };

    for key in [&es, &ed, &rs, &ps] {
        let ok = send(&url, Some(&key.sign(&good)), None, Some(initialize())).await;
        assert_eq!(ok.status, 200, "{:?}: {ok:?}", key.alg);
    }
    let cases = [
        (
            es.sign(&with(json!({"exp": now() - 600}))),
            "the token expired",
        ),
        (es.sign(&with(json!({"nbf": now() + 600}))), "not valid yet"),
        (
            es.sign(&with(json!({"iss": "http://evil.test"}))),
            "issuer (iss)",
        ),
        (
            es.sign(&with(json!({"aud": "http://other.test/mcp"}))),
            "audience (aud)",
        ),
        (stranger.sign(&good), "signature does not verify"),
        (unsigned(&good), "alg `none`"),
        (hmac_with_public_key(&es, &good), "HS256"),
        (hmac_with_public_key(&rs, &good), "HS256"),
        (
            SigningKey::rsa("rs", Algorithm::RS256).sign(&good),
            "signature does not verify",
        ),
        ("not-a-jwt".to_owned(), "not a signed JWT"),
    ];
    for (token, reason) in cases {
        let answer = send(&url, Some(&token), None, Some(initialize())).await;
        assert_refused(&answer, reason);
        assert!(
            answer.challenge.contains(&format!(
                r#"resource_metadata="{}""#,
                "http://mcp.test/.well-known/oauth-protected-resource/mcp"
            )),
            "{answer:?}"
        );
    }
    let client = connect_with_token(&url, &ed.sign(&good)).await;
    assert!(
        tool_names(&client)
            .await
            .contains(&"list_server_toolsets".to_owned())
    );

    let metadata = send(
        &format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            host.base_url()
        ),
        None,
        None,
        None,
    )
    .await;
    assert_eq!(metadata.status, 200, "{metadata:?}");
    let metadata: Value = serde_json::from_str(&metadata.body).unwrap();
    assert_eq!(metadata["resource"], AUDIENCE);
    assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_key_id_is_refused_until_the_issuer_publishes_it() {
    let (old, new) = (SigningKey::es256("old"), SigningKey::ed25519("new"));
    let issuer = Issuer::start(&[&old]).await;
    let (_dir, _host, url) = serve_oauth(&["benchmarks"], &issuer, &[]);
    let claims = issuer.claims(AUDIENCE, "alice", "");
    assert_eq!(
        send(&url, Some(&old.sign(&claims)), None, Some(initialize()))
            .await
            .status,
        200
    );
    let rotated = new.sign(&claims);
    assert_refused(
        &send(&url, Some(&rotated), None, Some(initialize())).await,
        "no key with id `new`",
    );
    issuer.publish(&[&new]);
    eventually("the rotated key is fetched", || async {
        send(&url, Some(&rotated), None, Some(initialize()))
            .await
            .status
            == 200
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_the_issuer_drops_is_refused_at_the_next_refresh_for_tokens_seen_before_too() {
    let (old, new) = (SigningKey::es256("old"), SigningKey::ed25519("new"));
    let issuer = Issuer::start(&[&old, &new]).await;
    let (_dir, _host, url) = serve_oauth(&["benchmarks"], &issuer, &["--oauth-jwks-refresh", "1"]);
    let claims = issuer.claims(AUDIENCE, "alice", "");
    let (seen, kept) = (old.sign(&claims), new.sign(&claims));
    for token in [&seen, &kept] {
        assert_eq!(
            send(&url, Some(token), None, Some(initialize()))
                .await
                .status,
            200
        );
    }
    issuer.publish(&[&new]);
    eventually("the dropped key's token is refused", || async {
        send(&url, Some(&seen), None, Some(initialize()))
            .await
            .status
            == 401
    })
    .await;
    assert_refused(
        &send(&url, Some(&seen), None, Some(initialize())).await,
        "no key with id `old`",
    );
    assert_eq!(
        send(&url, Some(&kept), None, Some(initialize()))
            .await
            .status,
        200,
        "a token of a key still published is still accepted"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_issuer_that_cannot_be_reached_is_named_and_the_host_keeps_serving() {
    let dir = PluginDir::with(&["benchmarks"]);
    let gone = "http://127.0.0.1:9";
    let host = HostProcess::serve(
        &dir,
        &["--oauth-issuer", gone, "--oauth-audience", AUDIENCE],
    );
    let url = format!("{}/mcp", host.base_url());
    let key = SigningKey::es256("k");
    let claims = json!({"iss": gone, "aud": AUDIENCE, "sub": "a", "exp": now() + 60});
    let answer = send(&url, Some(&key.sign(&claims)), None, Some(initialize())).await;
    assert_refused(
        &answer,
        "cannot read the metadata of the issuer http://127.0.0.1:9",
    );
    let health = send(&format!("{}/healthz", host.base_url()), None, None, None).await;
    assert_eq!(health.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn scopes_bound_toolsets_and_a_missing_one_gets_the_step_up_challenge() {
    let key = SigningKey::es256("k");
    let issuer = Issuer::start(&[&key]).await;
    let (_dir, _host, url) = serve_oauth(
        &["benchmarks", "sandboxes"],
        &issuer,
        &["--oauth-scopes", "bench=benchmarks,sand=sandboxes"],
    );
    let token = key.sign(&issuer.claims(AUDIENCE, "alice", "bench"));
    let client = connect_with_token(&format!("{url}?toolsets=benchmarks,sandboxes"), &token).await;
    let names = tool_names(&client).await;
    assert!(
        names.contains(&"echo".to_owned()) && !names.contains(&"list_sandboxes".to_owned()),
        "{names:?}"
    );
    let seen = call_tool(&client, "echo", json!({"text": "hi"})).await;
    assert_eq!(text(&seen), "hi");

    let opened = send(
        &format!("{url}?toolsets=benchmarks,sandboxes"),
        Some(&token),
        None,
        Some(initialize()),
    )
    .await;
    let session = opened.session.expect("a session");
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "list_sandboxes", "arguments": {}}});
    let answer = send(
        &format!("{url}?toolsets=benchmarks,sandboxes"),
        Some(&token),
        Some(&session),
        Some(call),
    )
    .await;
    assert_eq!(answer.status, 403, "{answer:?}");
    assert!(
        answer.challenge.contains(r#"error="insufficient_scope""#),
        "{answer:?}"
    );
    assert!(
        answer.challenge.contains(r#"scope="bench sand""#),
        "{answer:?}"
    );
    assert!(
        answer.challenge.contains("resource_metadata="),
        "{answer:?}"
    );

    let stepped_up = key.sign(&issuer.claims(AUDIENCE, "alice", "bench sand"));
    let client =
        connect_with_token(&format!("{url}?toolsets=benchmarks,sandboxes"), &stepped_up).await;
    assert!(
        tool_names(&client)
            .await
            .contains(&"list_sandboxes".to_owned())
    );
}

/// Two 2026-07-28 clients (no sessions) keep their sandboxes apart: by their API keys when the
/// server authenticates them, and by the `space` each names when it does not.
#[tokio::test(flavor = "multi_thread")]
async fn clients_without_sessions_keep_their_sandboxes_apart_by_key_or_by_space() {
    let (dir, _host, url, _file, keys) = serve_with_keys(
        &["sandboxes"],
        &[
            ("alice", &["--toolsets", "*"]),
            ("bob", &["--toolsets", "*"]),
        ],
    );
    let client_of = |key: &str| {
        let config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                format!("{url}?toolsets=sandboxes"),
            )
            .auth_header(key.to_owned());
        connect_2026_with(config, rmcp::model::ClientConfig::default())
    };
    let (alice, bob) = (client_of(&keys[0]).await, client_of(&keys[1]).await);
    let launched = call_tool(
        alice.peer(),
        "launch_sandbox",
        json!({"sandbox_name": "alice's"}),
    )
    .await;
    assert_eq!(launched.is_error, Some(false), "{launched:?}");
    let listed = |peer: rmcp::service::Peer<rmcp::RoleClient>, arguments: Value| async move {
        let result = call_tool(&peer, "list_sandboxes", arguments).await;
        serde_json::from_str::<Value>(&text(&result)).unwrap()
    };
    assert_eq!(listed(bob.peer().clone(), json!({})).await, json!([]));
    assert_eq!(
        listed(alice.peer().clone(), json!({})).await[0]["name"],
        "alice's"
    );

    let open = HostProcess::serve(&dir, &[]);
    let url = format!("{}/mcp?toolsets=sandboxes", open.base_url());
    let anonymous = || e2e::mcp::connect_2026(&url, rmcp::model::ClientConfig::default());
    let (one, other) = (anonymous().await, anonymous().await);
    call_tool(
        one.peer(),
        "launch_sandbox",
        json!({"sandbox_name": "one's", "space": "one-4b1"}),
    )
    .await;
    assert_eq!(
        listed(other.peer().clone(), json!({"space": "other-9c2"})).await,
        json!([])
    );
    assert_eq!(
        listed(one.peer().clone(), json!({"space": "one-4b1"})).await[0]["name"],
        "one's"
    );
}

/// `GET /`, and a browser opening the MCP endpoint, get a page saying what the server is and
/// how to connect, without credentials; an MCP client's `GET` of the endpoint still needs them.
#[tokio::test(flavor = "multi_thread")]
async fn the_index_page_needs_no_credentials_and_names_the_endpoint() {
    let (_dir, host, url, _file, _keys) =
        serve_with_keys(&["benchmarks"], &[("alice", &["--toolsets", "*"])]);
    let http = e2e::http();
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    for page in [host.base_url() + "/", url.clone()] {
        let answer = http
            .get(&page)
            .header("accept", browser)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{page}");
        assert_eq!(
            answer.headers()["content-type"],
            "text/html; charset=utf-8",
            "{page}"
        );
        let body = answer.text().await.unwrap();
        assert!(
            body.contains(&format!("<code>{url}</code>")),
            "{page}: {body}"
        );
        assert!(body.contains(r#"<a href="/toolsets">"#), "{page}: {body}");
    }
    let stream = http
        .get(&url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_rule_reads_a_claim_of_the_token() {
    let key = SigningKey::es256("k");
    let issuer = Issuer::start(&[&key]).await;
    let dir = PluginDir::with(&["benchmarks"]);
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[[rule]]\nname = \"echo for admins\"\neffect = \"deny\"\nwhen = \"mcp.tool.name == \
         'echo' && !(has(jwt.groups) && 'admins' in jwt.groups)\"\n",
    )
    .unwrap();
    let mut host = HostProcess::serve(
        &dir,
        &[
            "--oauth-issuer",
            issuer.url.as_str(),
            "--oauth-audience",
            AUDIENCE,
            "--policy",
            policy.to_str().unwrap(),
        ],
    );
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    let token = |groups: Value| {
        let mut claims = issuer.claims(AUDIENCE, "carol", "");
        claims["groups"] = groups;
        key.sign(&claims)
    };
    let admin = connect_with_token(&url, &token(json!(["admins", "staff"]))).await;
    assert!(tool_names(&admin).await.contains(&"echo".to_owned()));
    assert_eq!(
        text(&call_tool(&admin, "echo", json!({"text": "hi"})).await),
        "hi"
    );
    let staff = connect_with_token(&url, &token(json!(["staff"]))).await;
    let names = tool_names(&staff).await;
    assert!(!names.contains(&"echo".to_owned()), "{names:?}");
    let refused = staff
        .call_tool(e2e::mcp::call("echo", json!({"text": "hi"})))
        .await
        .expect_err("the rule denies it")
        .to_string();
    assert!(refused.contains("Unknown tool"), "{refused}");
    let line = host.wait_for_stderr("denied by the policy", Duration::from_secs(20));
    assert!(line.contains("echo for admins"), "{line}");
}
