//! `reactor-mcp-server list`: what a plugin folder holds, read from manifests alone, as text
//! and as JSON, narrowed by `--extension` or `REACTOR_MCP_EXTENSIONS`.

use e2e::{PluginDir, run_host, run_host_bare, run_host_with_env};
use serde_json::Value;

fn sandboxes_and_benchmarks() -> PluginDir {
    PluginDir::with(&["sandboxes", "benchmarks"])
}

/// The names of the plugins in a `list --json` answer, in order.
fn plugin_names(listing: &Value) -> Vec<&str> {
    listing["plugins"]
        .as_array()
        .expect("`plugins` is an array")
        .iter()
        .map(|p| p["name"].as_str().expect("a plugin has a name"))
        .collect()
}

fn plugin<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["plugins"]
        .as_array()
        .expect("`plugins` is an array")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no plugin `{name}` in {listing:#}"))
}

#[test]
fn list_shows_both_plugins_their_toolsets_and_every_tool() {
    let dir = sandboxes_and_benchmarks();
    let out = run_host(&["list"], &dir);
    out.assert_success();
    let text = &out.stdout;
    let folder = format!("plugin folder: {}", dir.path().display());
    let benchmarks = format!(
        "benchmarks 0.1.0  ({})",
        dir.file("libbenchmarks.so").display()
    );
    let sandboxes = format!(
        "sandboxes 0.1.0  ({})",
        dir.file("libsandboxes.so").display()
    );
    for expected in [
        folder.as_str(),
        // Plugins, in file-name order, with version and file.
        &benchmarks,
        &sandboxes,
        // Toolsets with their default flags.
        "toolset benchmarks [not default]: Tools for measuring the server: echo, add, sleep, blob",
        "toolset sandboxes [default]: Launch, list and stop sandboxes",
        // When each is opened.
        "activation: when toolset `benchmarks` is served",
        "activation: when one of its toolsets is served",
        // Every tool: title, toolset, annotations, first line of the description.
        "tool launch_sandbox \"Launch Sandbox\" (sandboxes): Launch a sandbox to run code in.",
        "tool list_sandboxes \"List Sandboxes\" (sandboxes) [read_only, idempotent, !open_world]: List this client's sandboxes, with their status.",
        "tool stop_sandbox \"Stop Sandbox\" (sandboxes) [destructive, idempotent]: Stop one of this client's sandboxes. Stopping a stopped sandbox changes nothing.",
        "tool echo (benchmarks) [read_only, idempotent, !open_world]: Return the text unchanged.",
        "tool add (benchmarks) [read_only, idempotent, !open_world]: Add two numbers.",
        "tool sleep (benchmarks) [read_only, idempotent, !open_world]: Wait this many milliseconds (at most one hour) without holding a thread, then say so.",
        "tool blob (benchmarks) [read_only, idempotent, !open_world]: Return a string of this many bytes (at most 16 MiB).",
    ] {
        assert!(
            text.contains(expected),
            "`list` does not show\n  {expected}\nin\n{text}"
        );
    }
    assert!(
        text.find("benchmarks 0.1.0") < text.find("sandboxes 0.1.0"),
        "plugins are listed in file-name order:\n{text}"
    );
    assert!(!text.contains("skipped"), "nothing is skipped:\n{text}");
}

#[test]
fn list_json_holds_the_same_plugins_toolsets_and_tools() {
    let dir = sandboxes_and_benchmarks();
    let listing: Value = run_host(&["list", "--json"], &dir).assert_success().json();

    assert_eq!(listing["plugin_dir"], dir.path().to_str().unwrap());
    assert_eq!(plugin_names(&listing), ["benchmarks", "sandboxes"]);
    assert_eq!(listing["skipped"], serde_json::json!([]));
    assert_eq!(listing["unmatched_extensions"], serde_json::json!([]));

    let sandboxes = plugin(&listing, "sandboxes");
    assert_eq!(
        sandboxes["file"],
        dir.file("libsandboxes.so").to_str().unwrap()
    );
    assert_eq!(sandboxes["version"], "0.1.0");
    assert_eq!(sandboxes["dynamic_tools"], false);
    assert_eq!(
        sandboxes["activation"],
        serde_json::json!(["when one of its toolsets is served"])
    );
    let toolset = &sandboxes["toolsets"][0];
    assert_eq!(toolset["name"], "sandboxes");
    assert_eq!(toolset["title"], "Sandboxes");
    assert_eq!(toolset["default"], true);
    assert_eq!(toolset["always"], false);
    assert_eq!(
        toolset["instructions"],
        "Launch a sandbox with launch_sandbox before running code; stop it when done."
    );
    let tools = sandboxes["tools"].as_array().unwrap();
    let summary: Vec<(&str, &str, &str, &Value)> = tools
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["title"].as_str().unwrap(),
                t["toolset"].as_str().unwrap(),
                &t["annotations"],
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "launch_sandbox",
                "Launch Sandbox",
                "sandboxes",
                &serde_json::json!([])
            ),
            (
                "list_sandboxes",
                "List Sandboxes",
                "sandboxes",
                &serde_json::json!(["read_only", "idempotent", "!open_world"])
            ),
            (
                "stop_sandbox",
                "Stop Sandbox",
                "sandboxes",
                &serde_json::json!(["destructive", "idempotent"])
            ),
        ]
    );
    assert_eq!(tools[0]["summary"], "Launch a sandbox to run code in.");

    let benchmarks = plugin(&listing, "benchmarks");
    assert_eq!(benchmarks["toolsets"][0]["default"], false);
    assert_eq!(benchmarks["toolsets"][0]["always"], false);
    assert_eq!(
        benchmarks["activation"],
        serde_json::json!(["when toolset `benchmarks` is served"])
    );
    let names: Vec<&str> = benchmarks["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "add", "sleep", "blob"]);
    for tool in benchmarks["tools"].as_array().unwrap() {
        assert_eq!(tool["toolset"], "benchmarks");
        assert_eq!(tool["title"], Value::Null);
    }
    assert_eq!(benchmarks["tools"][1]["summary"], "Add two numbers.");
}

#[test]
fn extension_flag_narrows_the_listing_to_that_plugin() {
    let dir = sandboxes_and_benchmarks();
    let out = run_host(&["list", "--json", "--extension", "benchmarks"], &dir);
    let listing: Value = out.assert_success().json();
    assert_eq!(plugin_names(&listing), ["benchmarks"]);
    // The plugin left out is not a problem: no warning about it.
    assert!(
        !out.stderr.contains("WARN"),
        "narrowing to a plugin that exists warns about nothing:\n{}",
        out.stderr
    );

    let text = run_host(&["list", "--extension", "benchmarks"], &dir);
    assert!(text.assert_success().stdout.contains("benchmarks 0.1.0"));
    assert!(!text.stdout.contains("sandboxes 0.1.0"), "{}", text.stdout);
}

#[test]
fn extensions_env_var_narrows_and_warns_about_unknown_names() {
    let dir = sandboxes_and_benchmarks();
    let env = [("REACTOR_MCP_EXTENSIONS", "sandboxes,nope")];
    let out = run_host_with_env(&["list", "--json"], &dir, &env);
    let listing: Value = out.assert_success().json();
    assert_eq!(plugin_names(&listing), ["sandboxes"]);
    assert_eq!(listing["unmatched_extensions"], serde_json::json!(["nope"]));
    let warnings: Vec<&str> = out.stderr.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(
        warnings.len(),
        1,
        "one warning, about `nope`:\n{}",
        out.stderr
    );
    assert!(
        warnings[0].contains("extension `nope` was asked for")
            && warnings[0].contains(dir.path().to_str().unwrap()),
        "the warning names the unknown extension and the folder: {}",
        warnings[0]
    );

    let text = run_host_with_env(&["list"], &dir, &env);
    assert!(
        text.assert_success()
            .stdout
            .contains("extension `nope` was asked for and matches no plugin"),
        "{}",
        text.stdout
    );
}

#[test]
fn extension_flag_replaces_the_env_var() {
    let dir = sandboxes_and_benchmarks();
    let out = run_host_with_env(
        &["list", "--json", "--extension", "benchmarks"],
        &dir,
        &[("REACTOR_MCP_EXTENSIONS", "sandboxes,nope")],
    );
    let listing: Value = out.assert_success().json();
    assert_eq!(plugin_names(&listing), ["benchmarks"]);
    assert_eq!(listing["unmatched_extensions"], serde_json::json!([]));
    assert!(
        !out.stderr.contains("nope"),
        "the env var is not read at all when --extension is given:\n{}",
        out.stderr
    );
}

#[test]
fn repeated_extension_flags_add_up() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks", "fixture-panicky"]);
    let out = run_host(
        &[
            "list",
            "--json",
            "--extension",
            "sandboxes",
            "--extension",
            "panicky",
        ],
        &dir,
    );
    let listing: Value = out.assert_success().json();
    assert_eq!(plugin_names(&listing), ["panicky", "sandboxes"]);
}

#[test]
fn list_says_a_dynamic_plugin_builds_tools_at_run_time() {
    let dir = PluginDir::with(&["fixture-dynamic"]);
    let text = run_host(&["list"], &dir);
    let stdout = &text.assert_success().stdout;
    assert!(
        stdout.contains("tool static_tool (dynamic) [read_only]: A tool declared in code."),
        "{stdout}"
    );
    assert!(
        stdout.contains("+ tools built at run time (listed once the plugin is opened)"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("dynamic_upper"),
        "run-time tools cannot be listed without opening the plugin:\n{stdout}"
    );

    let listing: Value = run_host(&["list", "--json"], &dir).assert_success().json();
    let dynamic = plugin(&listing, "dynamic");
    assert_eq!(dynamic["dynamic_tools"], true);
    assert_eq!(dynamic["tools"].as_array().unwrap().len(), 1);

    let sandboxes = PluginDir::with(&["sandboxes"]);
    let plain = run_host(&["list"], &sandboxes);
    assert!(
        !plain
            .assert_success()
            .stdout
            .contains("tools built at run time")
    );
}

#[test]
fn list_of_an_empty_folder_says_no_plugins() {
    let dir = PluginDir::new();
    let out = run_host(&["list"], &dir);
    assert!(
        out.assert_success().stdout.contains("no plugins"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_missing_relative_folder_is_named_absolute_with_a_hint() {
    let dir = PluginDir::new();
    let out = std::process::Command::new(e2e::host_bin())
        .current_dir(dir.path())
        .env_remove("REACTOR_MCP_PLUGIN_DIR")
        .arg("list")
        .output()
        .expect("the host runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let expected = format!(
        "cannot read the plugin folder {} (`plugins`, relative to the working directory; a \
         client that starts the server over stdio starts it in a directory of its own: give \
         --plugin-dir an absolute path)",
        dir.path().canonicalize().unwrap().join("plugins").display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
}

#[test]
fn list_of_a_missing_folder_fails_naming_it() {
    let dir = PluginDir::new();
    let missing = dir.file("not-there");
    let out = run_host_bare(&["list", "--plugin-dir", missing.to_str().unwrap()], &[]);
    assert!(!out.status.success(), "{}", out.stdout);
    assert!(
        out.stderr.contains(&format!(
            "cannot read the plugin folder {}",
            missing.display()
        )),
        "{}",
        out.stderr
    );
}
