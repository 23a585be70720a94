//! The page at `/ui` in a real browser: Debian's headless `chromium`, driven through
//! `chromedriver` (W3C WebDriver) with fantoccini, against the real host and fixture plugins.
//!
//! Covered: the page lists the toolsets with their tools, resources and prompts; marks a plugin
//! open after a call to one of its tools, and lists its process (isolated); shows a failed plugin's reason; follows a plugin added
//! to the folder while it is open; shows calls per tool from the metrics; asks for a key when
//! authentication is on and then hides what that key's bound may not see; serves its files
//! under a content security policy, linked from `GET /`, and not at all with `--no-ui`. The first test saves a
//! screenshot to `target/ui-screenshot.png`. Without chromium or chromedriver, the browser
//! tests print why and skip.

use std::{
    net::TcpListener,
    os::unix::process::CommandExt as _,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use e2e::{
    HostProcess, PluginDir,
    mcp::{call_tool, connect, connect_with_token, tool_names},
    run_host,
};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// How long a test waits for the page to show something it should within a poll or two.
const PATIENCE: Duration = Duration::from_secs(30);

/// The browser and its driver.
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A `chromedriver` of this test's, ended on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    /// Ends chromedriver and the browser it started (its process group), also when a test
    /// panicked before closing its session.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `chromedriver` on a free loopback port and a headless chromium session through it; `None`
/// (having said why) when either is not installed.
async fn browser() -> Option<(Driver, Client)> {
    for program in [CHROMIUM, CHROMEDRIVER] {
        if !Path::new(program).exists() {
            eprintln!(
                "SKIPPED: {program} is not installed (apt-get install chromium chromium-driver); \
                 the page at /ui is not tested in a browser"
            );
            return None;
        }
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let driver = Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--disable-crash-reporter",
                     "--disable-breakpad", "--window-size=1280,1000"],
        }),
    );
    let deadline = Instant::now() + PATIENCE;
    loop {
        match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities.clone())
            .connect(&driver.url)
            .await
        {
            Ok(client) => return Some((driver, client)),
            Err(error) if Instant::now() > deadline => {
                panic!("chromedriver at {} gave no session: {error}", driver.url)
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Waits until the page has an element matching `css`.
async fn wait_for(client: &Client, css: &str) -> fantoccini::elements::Element {
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no `{css}` on the page: {e}"))
}

/// The text of the element matching `css`, once there.
async fn text_of(client: &Client, css: &str) -> String {
    wait_for(client, css).await.text().await.unwrap()
}

/// Clicks the element matching `css`, once there.
async fn click(client: &Client, css: &str) {
    wait_for(client, css).await.click().await.unwrap();
}

/// Whether the page has an element matching `css` now.
async fn has(client: &Client, css: &str) -> bool {
    !client.find_all(Locator::Css(css)).await.unwrap().is_empty()
}

/// Saves what the browser shows as `target/ui-screenshot.png`.
async fn screenshot(client: &Client) {
    let png = client.screenshot().await.expect("a screenshot");
    let file = e2e::target_dir().join("ui-screenshot.png");
    std::fs::write(&file, png).unwrap();
    eprintln!("screenshot saved to {}", file.display());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_shows_toolsets_opens_failures_metrics_and_follows_the_folder() {
    let Some((_driver, client)) = browser().await else {
        return;
    };
    let dir = PluginDir::with(&["benchmarks", "fixture-base", "fixture-ext-unopenable"]);
    let host = HostProcess::serve(&dir, &["--metrics-addr", "0", "--isolate", "benchmarks"]);
    client
        .goto(&format!("{}/ui", host.base_url()))
        .await
        .unwrap();

    // Every toolset, with its plugin, its tools and their descriptions; none open yet.
    let benchmarks = r#"article[data-toolset="benchmarks"]"#;
    wait_for(&client, benchmarks).await;
    assert!(has(&client, r#"article[data-toolset="base"]"#).await);
    assert!(has(&client, r#"article[data-toolset="quiet"]"#).await);
    let card = text_of(&client, benchmarks).await;
    assert!(
        card.contains("benchmarks") && card.contains("echo"),
        "{card}"
    );
    assert!(card.contains("Return the text unchanged"), "{card}");
    assert_eq!(
        text_of(&client, &format!("{benchmarks} .state")).await,
        "not open"
    );

    // A call opens benchmarks: the page marks it open, and counts the call.
    let mcp = format!("{}/mcp", host.base_url());
    let caller = connect(&format!("{mcp}?toolsets=benchmarks")).await;
    call_tool(&caller, "echo", json!({"text": "hi"})).await;
    wait_for(
        &client,
        r#"article[data-toolset="benchmarks"][data-open="true"]"#,
    )
    .await;
    assert_eq!(
        text_of(&client, &format!("{benchmarks} .state")).await,
        "open"
    );
    // benchmarks runs isolated: its child process is listed, running.
    let process = text_of(&client, r#"tr[data-process="benchmarks"]"#).await;
    assert!(process.contains("running"), "{process}");
    let calls = text_of(&client, r#"tr[data-metric-tool="echo"]"#).await;
    assert!(calls.contains("echo"), "{calls}");

    // Listing base opens ext-unopenable, which fails: the page says why.
    let base = connect(&format!("{mcp}?toolsets=base")).await;
    tool_names(&base).await;
    let failed = text_of(&client, r#"#failed li[data-plugin="ext-unopenable"]"#).await;
    assert!(failed.contains("ext-unopenable"), "{failed}");
    assert!(failed.len() > "ext-unopenable: ".len(), "{failed}");

    // A plugin added to the folder while the page is open appears, with its resources and
    // prompts, without a reload.
    dir.add("fixture-library");
    let library = text_of(&client, r#"article[data-toolset="library"]"#).await;
    assert!(library.contains("Prompts"), "{library}");
    assert!(library.contains("good_morning"), "{library}");

    // The query box answers what a URL would get.
    let query = wait_for(&client, "#query").await;
    query.send_keys("only=benchmarks").await.unwrap();
    click(&client, "#query-form button").await;
    let active = text_of(&client, r#"[data-answer="active"]"#).await;
    assert_eq!(active, "benchmarks");

    // The extensions graph is drawn, with the extension as a dashed edge and in the list.
    assert!(has(&client, "#graph svg .node.plugin").await);
    assert!(has(&client, "#graph svg .edge.extension").await);
    let graph = client
        .execute(
            "return document.getElementById('graph').textContent",
            Vec::new(),
        )
        .await
        .unwrap();
    let graph = graph.as_str().unwrap();
    assert!(graph.contains("ext-unopenable extends trace"), "{graph}");

    client
        .execute("window.scrollTo(0, 0)", Vec::new())
        .await
        .unwrap();
    screenshot(&client).await;
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bounded_key_sees_only_its_toolsets_on_the_page() {
    let Some((_driver, client)) = browser().await else {
        return;
    };
    let dir = PluginDir::with(&["benchmarks", "fixture-base", "fixture-ext-unopenable"]);
    let file = dir.path().join("keys.toml");
    let key = |name: &str, toolsets: &str| {
        let output = run_host(
            &[
                "keys",
                "new",
                name,
                "--toolsets",
                toolsets,
                "--file",
                file.to_str().unwrap(),
            ],
            &dir,
        );
        output.assert_success();
        output.stdout.trim().to_owned()
    };
    let (alice, admin) = (key("alice", "benchmarks"), key("admin", "*"));
    let host = HostProcess::serve(&dir, &["--auth-keys", file.to_str().unwrap()]);
    // ext-unopenable fails to open, which alice may not learn of.
    let opener =
        connect_with_token(&format!("{}/mcp?toolsets=base", host.base_url()), &admin).await;
    tool_names(&opener).await;

    // The page's files need no key; the data does, so the page asks for one.
    client
        .goto(&format!("{}/ui", host.base_url()))
        .await
        .unwrap();
    wait_for(&client, "#login:not([hidden])").await;
    let field = wait_for(&client, "#key").await;
    field.send_keys("not a key").await.unwrap();
    click(&client, "#login button").await;
    // The error is there from the start, empty: wait for its text.
    let refused = text_of(&client, "#login-error:not(:empty)").await;
    assert!(refused.contains("refused"), "{refused}");

    field.send_keys(&alice).await.unwrap();
    click(&client, "#login button").await;
    wait_for(&client, r#"article[data-toolset="benchmarks"]"#).await;
    wait_for(&client, "#login[hidden]").await;
    assert!(!has(&client, r#"article[data-toolset="base"]"#).await);
    assert!(!has(&client, r#"article[data-toolset="quiet"]"#).await);
    assert!(!has(&client, "#failed li[data-plugin]").await);
    let page = client.source().await.unwrap();
    assert!(
        !page.contains("unopenable"),
        "alice sees a plugin outside her bound"
    );
    assert!(
        !page.contains("trace"),
        "alice sees a tool outside her bound"
    );

    // The same page with the admin key shows everything, the failure included.
    client
        .execute("sessionStorage.clear()", Vec::new())
        .await
        .unwrap();
    client.refresh().await.unwrap();
    wait_for(&client, "#key")
        .await
        .send_keys(&admin)
        .await
        .unwrap();
    click(&client, "#login button").await;
    wait_for(&client, r#"article[data-toolset="base"]"#).await;
    wait_for(&client, r#"#failed li[data-plugin="ext-unopenable"]"#).await;
    client.close().await.unwrap();
}

/// `GET path` on `host`, without credentials.
async fn get(host: &HostProcess, path: &str) -> reqwest::Response {
    e2e::http()
        .get(format!("{}{path}", host.base_url()))
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_files_carry_a_content_security_policy_and_no_ui_turns_them_off() {
    let dir = PluginDir::with(&["benchmarks"]);
    let host = HostProcess::serve(&dir, &[]);
    for (path, kind) in [
        ("/ui", "text/html"),
        ("/ui/ui.css", "text/css"),
        ("/ui/ui.js", "text/javascript"),
    ] {
        let answer = get(&host, path).await;
        assert_eq!(answer.status(), 200, "{path}");
        let headers = answer.headers();
        assert!(
            headers["content-type"].to_str().unwrap().starts_with(kind),
            "{path}: {headers:?}"
        );
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(policy.contains("default-src 'none'"), "{path}: {policy}");
    }
    let index = get(&host, "/").await.text().await.unwrap();
    assert!(index.contains(r#"href="/ui""#), "{index}");
    // Metrics are off: the page's metrics answer 404 (and the page says how to turn them on).
    assert_eq!(get(&host, "/ui/metrics").await.status(), 404);

    let off = HostProcess::serve(&dir, &["--no-ui"]);
    for path in ["/ui", "/ui/ui.js", "/ui/metrics"] {
        assert_eq!(get(&off, path).await.status(), 404, "{path} with --no-ui");
    }
    let index = get(&off, "/").await.text().await.unwrap();
    assert!(!index.contains(r#"href="/ui""#), "{index}");
}
