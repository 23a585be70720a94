//! Sandboxed plugins end to end (`--sandbox`): the real host binary runs `fixture-sandboxed`
//! in a child confined to what its manifest declares (a folder it reads, one it writes, a
//! loopback port, a variable), beside `benchmarks` in process, and a real MCP client calls
//! both. The declared file is read and the declared port reached, while an undeclared file,
//! port, variable and system call fail inside the tool with the system's error; the host and
//! the plugin in process go on serving; `/toolsets` and `list` show the permissions and what
//! is enforced. On a kernel without Landlock the host must say so, and the test checks that it
//! does rather than pass silently. The same plugin merely isolated reads and reaches anything.

use std::{net::TcpListener, path::PathBuf, time::Duration};

use e2e::{
    HostProcess, PluginDir,
    mcp::{call_tool, connect, get_json, text},
    run_host_with_env,
};
use serde_json::{Value, json};

/// The files and listeners a test hands the plugin: what it may touch and what it may not.
struct World {
    _dir: tempfile::TempDir,
    allowed: PathBuf,
    writable: PathBuf,
    secret: PathBuf,
    declared: TcpListener,
    undeclared: TcpListener,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (allowed, writable, secret) = (
            root.join("allowed"),
            root.join("writable"),
            root.join("secret"),
        );
        for (folder, text) in [
            (&allowed, "declared"),
            (&writable, "scratch"),
            (&secret, "undeclared"),
        ] {
            std::fs::create_dir(folder).unwrap();
            std::fs::write(folder.join("data.txt"), text).unwrap();
        }
        Self {
            _dir: dir,
            allowed,
            writable,
            secret,
            declared: TcpListener::bind("127.0.0.1:0").unwrap(),
            undeclared: TcpListener::bind("127.0.0.1:0").unwrap(),
        }
    }

    fn port(listener: &TcpListener) -> u16 {
        listener.local_addr().unwrap().port()
    }

    /// The variables the host starts with: where the plugin's permissions point, and two
    /// variables, of which it declares one.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "REACTOR_SANDBOX_ALLOWED",
                self.allowed.display().to_string(),
            ),
            (
                "REACTOR_SANDBOX_WRITABLE",
                self.writable.display().to_string(),
            ),
            (
                "REACTOR_SANDBOX_PORT",
                Self::port(&self.declared).to_string(),
            ),
            ("REACTOR_SANDBOX_DECLARED", "declared".to_owned()),
            ("REACTOR_SANDBOX_UNDECLARED", "undeclared".to_owned()),
        ]
    }

    /// A host serving `fixture-sandboxed` with `flags`, and `benchmarks` in process.
    fn serve(&self, flags: &[&str]) -> (PluginDir, HostProcess) {
        let dir = PluginDir::with(&["fixture-sandboxed", "benchmarks"]);
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let host = HostProcess::serve_with_env(&dir, flags, &env);
        (dir, host)
    }
}

/// The call's text, and whether it is an error.
async fn try_tool(client: &e2e::mcp::Client, tool: &str, arguments: Value) -> (String, bool) {
    let answer = call_tool(client.peer(), tool, arguments).await;
    (text(&answer), answer.is_error == Some(true))
}

/// The `/toolsets` row of `fixture-sandboxed`'s permissions.
async fn permissions_row(host: &HostProcess) -> Value {
    let (_, toolsets) = get_json(&format!("{}/toolsets", host.base_url())).await;
    toolsets["permissions"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["plugin"] == "sandboxed"))
        .cloned()
        .unwrap_or_else(|| panic!("no permissions row for `sandboxed`: {toolsets}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_plugin_gets_what_it_declares_and_nothing_else() {
    let world = World::new();
    let (_dir, mut host) = world.serve(&["--sandbox", "sandboxed"]);
    let row = permissions_row(&host).await;
    assert_eq!(row["sandboxed"], true, "{row}");
    assert_eq!(
        row["declared"],
        json!({
            "read": ["${REACTOR_SANDBOX_ALLOWED:-/nonexistent}"],
            "write": ["${REACTOR_SANDBOX_WRITABLE:-/nonexistent}"],
            "connect": ["127.0.0.1:${REACTOR_SANDBOX_PORT:-1}"],
            "env": ["REACTOR_SANDBOX_DECLARED"]
        })
    );
    assert_eq!(row["not_granted"], json!([]), "{row}");
    let not_enforced = row["not_enforced"].to_string();
    assert!(not_enforced.contains("connect `127.0.0.1:"), "{row}");
    assert!(not_enforced.contains("UDP"), "{row}");
    host.wait_for_stderr(
        "plugin `sandboxed` is sandboxed, but: UDP",
        Duration::from_secs(5),
    );

    let client = connect(&format!(
        "{}/mcp?only=sandboxed,benchmarks",
        host.base_url()
    ))
    .await;
    let data = |folder: &PathBuf| json!({"path": folder.join("data.txt").display().to_string()});
    let has_landlock = row["enforced"].to_string().contains("files (Landlock ABI");
    if !has_landlock {
        assert!(
            not_enforced.contains("files: not restricted: this system has no Landlock"),
            "without Landlock the host must say so: {row}"
        );
        let (secret, failed) = try_tool(&client, "read", data(&world.secret)).await;
        assert_eq!((secret.as_str(), failed), ("undeclared", false));
        return;
    }

    assert_eq!(
        try_tool(&client, "read", data(&world.allowed)).await,
        ("declared".to_owned(), false)
    );
    let (denied, failed) = try_tool(&client, "read", data(&world.secret)).await;
    assert!(failed, "{denied}");
    assert!(
        denied.starts_with(&format!(
            "cannot read {}/data.txt: Permission denied",
            world.secret.display()
        )),
        "{denied}"
    );
    let (denied, failed) = try_tool(
        &client,
        "write",
        json!({"path": world.allowed.join("new.txt").display().to_string(), "text": "x"}),
    )
    .await;
    assert!(
        failed && denied.contains("Permission denied"),
        "a read path is not writable: {denied}"
    );
    let scratch = world.writable.join("new.txt");
    let (wrote, failed) = try_tool(
        &client,
        "write",
        json!({"path": scratch.display().to_string(), "text": "written"}),
    )
    .await;
    assert!(!failed, "{wrote}");
    assert_eq!(std::fs::read_to_string(&scratch).unwrap(), "written");

    let address =
        |listener: &TcpListener| json!({"address": format!("127.0.0.1:{}", World::port(listener))});
    if row["enforced"].to_string().contains("TCP (Landlock)") {
        let (connected, failed) = try_tool(&client, "connect", address(&world.declared)).await;
        assert!(!failed && connected.starts_with("connected"), "{connected}");
        let (refused, failed) = try_tool(&client, "connect", address(&world.undeclared)).await;
        assert!(failed, "{refused}");
        assert!(
            refused.contains("cannot connect to 127.0.0.1:")
                && refused.contains("Permission denied"),
            "{refused}"
        );
    } else {
        assert!(not_enforced.contains("TCP: not restricted"), "{row}");
    }

    let variable = |name: &str| json!({"name": name});
    let declared = call_tool(
        client.peer(),
        "variable",
        variable("REACTOR_SANDBOX_DECLARED"),
    )
    .await;
    assert_eq!(text(&declared), "declared");
    let undeclared = call_tool(
        client.peer(),
        "variable",
        variable("REACTOR_SANDBOX_UNDECLARED"),
    )
    .await;
    assert_eq!(text(&undeclared), "null", "{undeclared:?}");

    if row["enforced"]
        .to_string()
        .contains("system calls (seccomp)")
    {
        let (refused, failed) = try_tool(&client, "add_key", json!({})).await;
        assert!(failed, "{refused}");
        assert!(
            refused.starts_with("add_key: Operation not permitted"),
            "{refused}"
        );
    }

    let echoed = call_tool(client.peer(), "echo", json!({"text": "in process"})).await;
    assert_eq!(
        text(&echoed),
        "in process",
        "the plugin in process is not confined"
    );
    let (_, health) = get_json(&format!("{}/healthz", host.base_url())).await;
    assert_eq!(health["status"], "ok", "{health}");
    let pid: u32 = text(&call_tool(client.peer(), "pid", json!({})).await)
        .parse()
        .unwrap();
    assert_ne!(pid, host.pid(), "the sandbox is the child's alone");
    assert!(
        !std::fs::read_to_string(format!("/proc/{}/status", host.pid()))
            .unwrap()
            .lines()
            .any(|l| l.split_whitespace().eq(["NoNewPrivs:", "1"])),
        "the host is not confined"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn isolated_without_a_sandbox_the_same_plugin_reaches_anything() {
    let world = World::new();
    let (_dir, host) = world.serve(&["--isolate", "sandboxed"]);
    let row = permissions_row(&host).await;
    assert_eq!(row["sandboxed"], false, "{row}");
    assert!(row.get("enforced").is_none(), "{row}");
    let client = connect(&format!("{}/mcp?only=sandboxed", host.base_url())).await;
    let (secret, failed) = try_tool(
        &client,
        "read",
        json!({"path": world.secret.join("data.txt").display().to_string()}),
    )
    .await;
    assert_eq!((secret.as_str(), failed), ("undeclared", false));
    let (connected, failed) = try_tool(
        &client,
        "connect",
        json!({"address": format!("127.0.0.1:{}", World::port(&world.undeclared))}),
    )
    .await;
    assert!(!failed, "{connected}");
    let undeclared = call_tool(
        client.peer(),
        "variable",
        json!({"name": "REACTOR_SANDBOX_UNDECLARED"}),
    )
    .await;
    assert_eq!(text(&undeclared), "undeclared");
}

#[test]
fn list_shows_the_permissions_and_what_the_sandbox_enforces() {
    let world = World::new();
    let dir = PluginDir::with(&["fixture-sandboxed"]);
    let env = world.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let listed = run_host_with_env(&["list", "--sandbox", "sandboxed"], &dir, &env);
    listed.assert_success();
    assert!(
        listed.stdout.contains(
            "  permissions: read ${REACTOR_SANDBOX_ALLOWED:-/nonexistent}; write \
             ${REACTOR_SANDBOX_WRITABLE:-/nonexistent}; connect \
             127.0.0.1:${REACTOR_SANDBOX_PORT:-1}; env REACTOR_SANDBOX_DECLARED\n  sandboxed:\n"
        ),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stdout.contains("    NOT enforced: UDP"),
        "{}",
        listed.stdout
    );
    let plain = run_host_with_env(&["list"], &dir, &[]);
    assert!(
        plain
            .stdout
            .contains("  not sandboxed: nothing of them is enforced"),
        "{}",
        plain.stdout
    );
    let json = run_host_with_env(&["list", "--json", "--sandbox", "*"], &dir, &[]);
    let listing: Value = serde_json::from_str(&json.stdout).unwrap();
    let permissions = &listing["plugins"][0]["permissions"];
    assert_eq!(permissions["sandboxed"], true, "{listing}");
    let not_granted = permissions["not_granted"].to_string();
    assert!(
        not_granted.contains(
            "read `${REACTOR_SANDBOX_ALLOWED:-/nonexistent}`: /nonexistent does not exist"
        ),
        "an entry whose variable is not set falls back to its default: {permissions}"
    );
}
