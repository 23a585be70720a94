//! Trusting plugins end to end: `keygen` and `sign` make minisign signatures that a server
//! with `--trusted-keys` and `--require-signed` checks (in process, isolated, and again when a
//! library or its signature changes), and `lock` writes the lock file `--locked` serves from.

use std::{path::Path, time::Duration};

use e2e::{
    HostProcess, PluginDir, library_file_name,
    mcp::{call_tool, connect, get_ok_json, text, tool_names},
    patched, run_host, run_host_bare,
};
use serde_json::{Value, json};

/// How long a rescan may take to show a change.
const PATIENCE: Duration = Duration::from_secs(20);

/// The fixture whose `build` tool answers which build it is, and a patched build of it.
const RELOADABLE: &str = "fixture-reload";
const BUILD_A: &str = "fixture-reload build A";
const BUILD_B: &str = "fixture-reload build B";

/// Makes a key pair with the real binary: `(secret key, public key)` under `dir`.
fn keygen(dir: &Path) -> (String, String) {
    let prefix = dir.join("release");
    let made = run_host_bare(&["keygen", "--out", prefix.to_str().unwrap()], &[]);
    made.assert_success();
    assert!(made.stderr.contains("made key "), "{}", made.stderr);
    (
        format!("{}.key", prefix.display()),
        format!("{}.pub", prefix.display()),
    )
}

/// Signs `library` with `key` with the real binary.
fn sign(library: &Path, key: &str) {
    run_host_bare(&["sign", library.to_str().unwrap(), "--key", key], &[]).assert_success();
}

/// Writes `bytes` as `file_name` in `dir`: to a hidden name, renamed over.
fn rename_in(dir: &PluginDir, file_name: &str, bytes: &[u8]) {
    let temporary = dir.file(&format!(".{file_name}.tmp"));
    std::fs::write(&temporary, bytes).unwrap();
    std::fs::rename(&temporary, dir.file(file_name)).unwrap();
}

/// The reasons `/healthz` gives for skipped files whose name contains `file`.
async fn skipped(host: &HostProcess, file: &str) -> Vec<String> {
    let health = get_ok_json(&format!("{}/healthz", host.base_url())).await;
    health["skipped"]
        .as_array()
        .expect("a detailed /healthz lists skipped files")
        .iter()
        .filter(|s| s["file"].as_str().is_some_and(|f| f.contains(file)))
        .map(|s| s["reason"].to_string())
        .collect()
}

/// Waits until the reasons `/healthz` gives for `file` satisfy `done`.
async fn skipped_until(
    host: &HostProcess,
    file: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let start = std::time::Instant::now();
    loop {
        let reasons = skipped(host, file).await;
        if done(&reasons) {
            return reasons;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "{file}: skipped for {reasons:?}; {}",
            host.stderr_so_far()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Renames build B of the reloadable fixture over build A, and waits until `/healthz` says why
/// it is skipped.
async fn rename_build_b_over(dir: &PluginDir, host: &HostProcess) -> Vec<String> {
    rename_in(
        dir,
        &library_file_name("fixture_reload"),
        &patched(RELOADABLE, BUILD_A, BUILD_B),
    );
    skipped_until(host, "fixture_reload", |r| !r.is_empty()).await
}

/// Whether `/toolsets` says `query` would be served the tool `tool`.
async fn serves(host: &HostProcess, query: &str, tool: &str) -> bool {
    let report = get_ok_json(&format!("{}/toolsets?{query}", host.base_url())).await;
    let tools: Vec<Value> = report["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().any(|t| t == tool || t["name"] == tool)
}

#[tokio::test(flavor = "multi_thread")]
async fn only_libraries_signed_by_a_trusted_key_are_served_and_checked_again_when_they_change() {
    let dir = PluginDir::with(&["benchmarks", RELOADABLE]);
    let keys = tempfile::tempdir().unwrap();
    let (secret, public) = keygen(keys.path());
    let benchmarks = dir.file(&library_file_name("benchmarks"));
    let reloadable = dir.file(&library_file_name("fixture_reload"));
    sign(&benchmarks, &secret);
    assert!(Path::new(&format!("{}.minisig", benchmarks.display())).is_file());

    let host = HostProcess::serve(
        &dir,
        &[
            "--trusted-keys",
            &public,
            "--require-signed",
            "--isolate",
            "benchmarks",
        ],
    );
    let unsigned = skipped(&host, "fixture_reload").await;
    assert!(
        unsigned.iter().any(|r| r.contains("not signed")
            && r.contains(&format!("{}.minisig", reloadable.display()))),
        "{unsigned:?}"
    );
    let client = connect(&format!("{}/mcp?only=benchmarks", host.base_url())).await;
    let echoed = call_tool(client.peer(), "echo", json!({"text": "signed"})).await;
    assert_eq!(
        text(&echoed),
        "signed",
        "the isolated child opened the checked bytes"
    );

    // Signed while the server runs: served on the next scan.
    sign(&reloadable, &secret);
    skipped_until(&host, "fixture_reload", <[String]>::is_empty).await;
    let reload = connect(&format!("{}/mcp?only=reloadable", host.base_url())).await;
    assert!(
        tool_names(reload.peer())
            .await
            .contains(&"build".to_owned())
    );
    assert_eq!(
        text(&call_tool(reload.peer(), "build", json!({})).await),
        BUILD_A
    );

    // Another build renamed over, its signature left as it was: refused, named, not opened.
    let tampered = rename_build_b_over(&dir, &host).await;
    assert!(
        tampered
            .iter()
            .any(|r| r.contains("bad signature") && r.contains("does not verify with key")),
        "{tampered:?}"
    );
    assert!(!serves(&host, "only=reloadable", "build").await);

    // A signature by a key that is not trusted does not count either.
    let stranger = tempfile::tempdir().unwrap();
    let (other_secret, _) = keygen(stranger.path());
    sign(&reloadable, &other_secret);
    let foreign = skipped_until(&host, "fixture_reload", |r| {
        r.iter().any(|r| r.contains("not in the trusted keys file"))
    })
    .await;
    assert!(foreign[0].contains("made by key"), "{foreign:?}");

    let echoed = call_tool(client.peer(), "echo", json!({"text": "still"})).await;
    assert_eq!(text(&echoed), "still", "the other plugin kept serving");
}

#[test]
fn require_signed_without_trusted_keys_is_refused_at_start_up() {
    let dir = PluginDir::with(&["benchmarks"]);
    let listed = run_host(&["list", "--require-signed"], &dir);
    assert!(!listed.status.success());
    assert!(
        listed
            .stderr
            .contains("--require-signed needs --trusted-keys FILE"),
        "{}",
        listed.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn locked_serves_the_libraries_of_the_lock_file_alone_with_their_digests() {
    let dir = PluginDir::with(&["benchmarks", RELOADABLE]);
    let missing = run_host(&["list", "--locked"], &dir);
    assert!(!missing.status.success());
    assert!(
        missing.stderr.contains("cannot read the lock file")
            && missing.stderr.contains("reactor-mcp-server lock"),
        "{}",
        missing.stderr
    );

    let locked = run_host(&["lock"], &dir);
    locked.assert_success();
    let lock = std::fs::read_to_string(dir.file("plugins.lock")).unwrap();
    assert!(
        lock.contains("name = \"benchmarks\"") && lock.contains("name = \"reloadable\""),
        "{lock}"
    );
    assert!(
        locked.stderr.contains("locked benchmarks"),
        "{}",
        locked.stderr
    );

    let host = HostProcess::serve(&dir, &["--locked"]);
    let client = connect(&format!("{}/mcp?only=reloadable", host.base_url())).await;
    assert_eq!(
        text(&call_tool(client.peer(), "build", json!({})).await),
        BUILD_A
    );

    let changed = rename_build_b_over(&dir, &host).await;
    assert!(
        changed
            .iter()
            .any(|r| r.contains("differs from the lock file")
                && r.contains("plugins.lock")
                && r.contains("SHA-256")),
        "{changed:?}"
    );
    assert!(!serves(&host, "only=reloadable", "build").await);

    dir.add("fixture-base");
    let unlocked = skipped_until(&host, "fixture_base", |r| !r.is_empty()).await;
    assert!(unlocked[0].contains("not in the lock file"), "{unlocked:?}");

    // The lock written again takes the reviewed build: served without a restart.
    run_host(&["lock"], &dir).assert_success();
    skipped_until(&host, "fixture_reload", <[String]>::is_empty).await;
    let client = connect(&format!("{}/mcp?only=reloadable", host.base_url())).await;
    assert_eq!(
        text(&call_tool(client.peer(), "build", json!({})).await),
        BUILD_B
    );
    assert!(
        serves(&host, "only=benchmarks", "echo").await,
        "benchmarks is still served"
    );
}
