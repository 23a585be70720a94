//! Discovery of bad plugin files: each is skipped with one clear warning naming the file and
//! the reason, the good plugins are still listed, the host exits 0, and the bad file is never
//! opened as a library (checked with `/proc/self/maps` around the host library's discovery).

use std::path::{Path, PathBuf};

use e2e::{
    PluginDir, library_file_name, mapped_plugin_libraries, run_host, truncated, with_abi_version,
};
use reactor_mcp_server::internals::discovery::{self, SkipReason};
use serde_json::{Value, json};

/// A bad file: how to make it, and what discovery must say about it.
struct BadFile {
    /// Its file name in the plugin folder.
    file_name: String,
    /// The `kind` of its `SkipReason` in `list --json`.
    kind: &'static str,
    /// Text the reason must contain.
    reason: String,
}

impl BadFile {
    fn not_a_library() -> Self {
        Self {
            file_name: format!("notes.{}", std::env::consts::DLL_EXTENSION),
            kind: "not_a_library",
            reason: "not a shared library".to_owned(),
        }
    }

    fn truncated() -> Self {
        Self {
            file_name: library_file_name("truncated"),
            kind: "truncated",
            reason: "truncated: its headers need".to_owned(),
        }
    }

    fn without_manifest() -> Self {
        Self {
            file_name: library_file_name("fixture_nomanifest"),
            kind: "no_manifest",
            reason: "no plugin manifest (no .rmcpmf section): not built with plugin-api".to_owned(),
        }
    }

    fn incompatible_abi() -> Self {
        Self {
            file_name: library_file_name("future_abi"),
            kind: "incompatible_abi",
            reason: format!(
                "built against plugin-abi 9.9.9, which this host (plugin-abi {}) cannot load: \
                 it loads plugins of its own ABI line only, older or newer ({})",
                plugin_abi::VERSION,
                plugin_abi::line_name(plugin_abi::VERSION)
            ),
        }
    }

    /// `libsandboxes.so` again, under a name sorting after the original.
    fn taken_name(dir: &PluginDir) -> Self {
        Self {
            file_name: library_file_name("zz_sandboxes_again"),
            kind: "duplicate_name",
            reason: format!(
                "is also in {}, at version 0.1.0, which is served",
                dir.file(&library_file_name("sandboxes")).display()
            ),
        }
    }

    fn all(dir: &PluginDir) -> Vec<Self> {
        vec![
            Self::not_a_library(),
            Self::truncated(),
            Self::without_manifest(),
            Self::incompatible_abi(),
            Self::taken_name(dir),
        ]
    }

    /// Puts the file in `dir`.
    fn put(&self, dir: &PluginDir) -> PathBuf {
        match self.kind {
            "not_a_library" => dir.write(&self.file_name, "these are notes, not a library\n"),
            "truncated" => dir.write(&self.file_name, truncated("sandboxes")),
            "no_manifest" => dir.add_as("fixture-nomanifest", &self.file_name),
            "incompatible_abi" => {
                dir.write(&self.file_name, with_abi_version("sandboxes", "9.9.9"))
            }
            "duplicate_name" => dir.add_as("sandboxes", &self.file_name),
            other => unreachable!("no bad file of kind {other}"),
        }
    }
}

fn good_plugins() -> PluginDir {
    PluginDir::with(&["sandboxes", "benchmarks"])
}

/// No file of `dir` is mapped into this process.
#[track_caller]
fn assert_nothing_mapped_from(dir: &Path, when: &str) {
    let mapped = mapped_plugin_libraries(std::process::id(), dir);
    assert!(
        mapped.is_empty(),
        "{when}, plugin files are mapped into the process: {mapped:?}"
    );
}

/// The whole contract for one bad file, through the binary and through the library.
fn assert_bad_file_is_skipped(make: impl FnOnce(&PluginDir) -> BadFile) {
    let dir = good_plugins();
    let bad = make(&dir);
    let path = bad.put(&dir);
    let shown = path.display().to_string();

    // The binary's JSON: the good plugins, and this one file skipped with its reason.
    let json = run_host(&["list", "--json"], &dir);
    let listing: Value = json.assert_success().json();
    let names: Vec<&str> = listing["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["benchmarks", "sandboxes"]);
    assert_eq!(
        listing["plugins"][1]["file"],
        dir.file(&library_file_name("sandboxes")).to_str().unwrap(),
        "the first file with a plugin name is the one served"
    );
    let skipped = listing["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{listing:#}");
    assert_eq!(skipped[0]["file"], shown);
    assert_eq!(skipped[0]["detail"]["kind"], bad.kind, "{:#}", skipped[0]);
    let reason = skipped[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains(&bad.reason),
        "reason `{reason}` should say `{}`",
        bad.reason
    );

    // One warning on stderr, naming the file and the reason.
    let warnings: Vec<&str> = json.stderr.lines().filter(|l| l.contains(&shown)).collect();
    assert_eq!(
        warnings.len(),
        1,
        "one warning about {shown}:\n{}",
        json.stderr
    );
    assert!(
        warnings[0].contains("WARN")
            && warnings[0].contains(&format!("skipping plugin file {shown}: {reason}")),
        "the warning names the file and the reason: {}",
        warnings[0]
    );

    // The text listing says the same after the plugins.
    let text = run_host(&["list"], &dir);
    let stdout = &text.assert_success().stdout;
    assert!(
        stdout.contains(&format!("skipped {shown}: {reason}")),
        "{stdout}"
    );
    assert!(stdout.contains("sandboxes 0.1.0") && stdout.contains("benchmarks 0.1.0"));

    // The library: the same verdict, and the file was never mapped as a library.
    let found = discovery::discover(dir.path(), None).expect("the folder can be read");
    assert_eq!(found.plugins.len(), 2);
    assert_eq!(found.skipped.len(), 1);
    assert_eq!(found.skipped[0].path, path);
    assert!(found.skipped[0].reason.to_string().contains(&bad.reason));
    assert_nothing_mapped_from(dir.path(), "after discovery");
}

#[test]
fn text_file_named_like_a_library_is_skipped_as_not_a_library() {
    assert_bad_file_is_skipped(|_| BadFile::not_a_library());
}

#[test]
fn truncated_library_is_skipped_and_never_opened() {
    assert_bad_file_is_skipped(|_| BadFile::truncated());
}

#[test]
fn library_without_a_manifest_is_skipped_as_not_a_plugin() {
    assert_bad_file_is_skipped(|_| BadFile::without_manifest());
}

#[test]
fn plugin_built_against_an_incompatible_abi_is_skipped_before_opening() {
    assert_bad_file_is_skipped(|_| BadFile::incompatible_abi());
}

#[test]
fn a_plugin_of_an_older_or_newer_version_of_the_hosts_abi_line_is_listed() {
    for version in ["0.2.0", "0.2.9"] {
        let dir = PluginDir::new();
        dir.write(
            &library_file_name("sandboxes"),
            with_abi_version("sandboxes", version),
        );
        let listing: Value = run_host(&["list", "--json"], &dir).assert_success().json();
        assert_eq!(listing["skipped"], json!([]), "{version}: {listing:#}");
        assert_eq!(listing["plugins"][0]["name"], "sandboxes", "{version}");
    }
}

#[test]
fn of_two_files_of_one_plugin_the_higher_version_is_served_whatever_their_names() {
    let dir = PluginDir::with(&["sandboxes"]);
    let newer = dir.write(
        &library_file_name("zsandboxes"),
        e2e::patched("sandboxes", r#""version":"0.1.0""#, r#""version":"0.3.0""#),
    );
    let listing: Value = run_host(&["list", "--json"], &dir).assert_success().json();
    assert_eq!(
        listing["plugins"][0]["file"],
        newer.to_str().unwrap(),
        "{listing:#}"
    );
    assert_eq!(listing["plugins"][0]["version"], "0.3.0", "{listing:#}");
    assert_eq!(
        listing["skipped"][0]["reason"],
        format!(
            "plugin `sandboxes` 0.1.0 is also in {}, at version 0.3.0, which is served (the \
             highest version; the first file of equal versions)",
            newer.display()
        )
    );
}

/// `/healthz` names the file left out for a newer one of the same plugin, and forgets it once
/// the file is gone.
#[tokio::test(flavor = "multi_thread")]
async fn healthz_names_the_older_file_of_a_plugin_until_it_is_removed() {
    let dir = PluginDir::with(&["sandboxes"]);
    let older = dir.file(&library_file_name("sandboxes"));
    dir.write(
        &library_file_name("zsandboxes"),
        e2e::patched("sandboxes", r#""version":"0.1.0""#, r#""version":"0.3.0""#),
    );
    let host = e2e::HostProcess::serve(&dir, &[]);
    let healthz = format!("{}/healthz", host.base_url());
    let health = e2e::mcp::get_ok_json(&healthz).await;
    let skipped = &health["skipped"];
    assert_eq!(skipped[0]["file"], older.to_str().unwrap(), "{health:#}");
    assert!(
        skipped[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("at version 0.3.0, which is served")),
        "{health:#}"
    );
    std::fs::remove_file(&older).unwrap();
    let start = std::time::Instant::now();
    loop {
        let health = e2e::mcp::get_ok_json(&healthz).await;
        if health["skipped"] == json!([]) {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{health:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[test]
fn second_plugin_with_a_taken_name_is_skipped_and_the_first_in_file_order_wins() {
    assert_bad_file_is_skipped(BadFile::taken_name);
}

#[test]
fn truncated_library_reason_gives_both_sizes() {
    let dir = PluginDir::new();
    let bytes = truncated("sandboxes");
    let path = dir.write(&library_file_name("truncated"), &bytes);
    let found = discovery::discover(dir.path(), None).unwrap();
    match &found.skipped[0].reason {
        SkipReason::Truncated { needs, has } => {
            assert_eq!(*has, bytes.len() as u64);
            assert!(*needs > *has);
        }
        other => panic!("{} was skipped as {other:?}", path.display()),
    }
}

#[test]
fn every_bad_file_at_once_is_skipped_and_serving_the_rest_opens_only_the_good_ones() {
    let dir = PluginDir::with(&["sandboxes", "benchmarks", "fixture-dynamic"]);
    let bad = BadFile::all(&dir);
    let paths: Vec<PathBuf> = bad.iter().map(|b| b.put(&dir)).collect();
    dir.write("README.txt", "not a library, and not named like one");

    let json = run_host(&["list", "--json"], &dir);
    let listing: Value = json.assert_success().json();
    assert_eq!(listing["plugins"].as_array().unwrap().len(), 3);
    let mut skipped: Vec<(&str, &str)> = listing["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["file"].as_str().unwrap(),
                s["detail"]["kind"].as_str().unwrap(),
            )
        })
        .collect();
    skipped.sort();
    let mut expected: Vec<(&str, &str)> = bad
        .iter()
        .zip(&paths)
        .map(|(b, p)| (p.to_str().unwrap(), b.kind))
        .collect();
    expected.sort();
    assert_eq!(
        skipped, expected,
        "files of other extensions are not looked at"
    );
    for path in &paths {
        let shown = path.display().to_string();
        assert_eq!(
            json.stderr.lines().filter(|l| l.contains(&shown)).count(),
            1,
            "one warning about {shown}:\n{}",
            json.stderr
        );
    }

    // Discovery, the registry and activation of every good plugin: the bad files stay unmapped.
    let found = discovery::discover(dir.path(), None).unwrap();
    assert_eq!(found.skipped.len(), bad.len());
    assert_nothing_mapped_from(dir.path(), "after discovering bad files");
    let builder = reactor_mcp_server::internals::build::Builder::with_opener(
        std::sync::Arc::new(reactor_mcp_server::internals::registry::Registry::new(
            found.plugins,
        )),
        std::sync::Arc::new(reactor_mcp_server::internals::build::ProviderOpener::default()),
    );
    for name in ["sandboxes", "benchmarks", "dynamic"] {
        builder
            .plugin(name)
            .unwrap_or_else(|e| panic!("{name} opens: {e}"));
    }
    let mut mapped = mapped_plugin_libraries(std::process::id(), dir.path());
    mapped.sort();
    let mut good = vec![
        dir.file(&library_file_name("benchmarks")),
        dir.file(&library_file_name("fixture_dynamic")),
        dir.file(&library_file_name("sandboxes")),
    ];
    good.sort();
    assert_eq!(mapped, good, "only the good plugins were ever opened");
}

#[test]
fn discovery_and_listing_open_no_library_though_activation_would_show() {
    let dir = PluginDir::with(&[
        "sandboxes",
        "benchmarks",
        "fixture-dynamic",
        "fixture-panicky",
    ]);
    let found = discovery::discover(dir.path(), None).unwrap();
    assert_eq!(found.plugins.len(), 4);
    assert_nothing_mapped_from(dir.path(), "after discovery");

    let listing =
        reactor_mcp_server::internals::reports::Listing::new(dir.path().to_owned(), &found);
    let text = listing.to_text();
    assert!(text.contains("launch_sandbox") && text.contains("boom_later"));
    serde_json::to_string(&listing).unwrap();
    assert_nothing_mapped_from(dir.path(), "after rendering `list`");

    // The same check sees a library once it is opened, so the checks above mean something.
    let sandboxes = found
        .plugins
        .iter()
        .find(|p| p.manifest.name == "sandboxes")
        .unwrap();
    let _loaded = reactor_mcp_server::internals::build::activate(sandboxes).unwrap();
    assert_eq!(
        mapped_plugin_libraries(std::process::id(), dir.path()),
        [dir.file(&library_file_name("sandboxes"))]
    );
}

/// glibc's loader reports every library it loads when `LD_DEBUG=files` is set: the binary's
/// `list` must load its own dependencies and no plugin.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn list_binary_loads_no_plugin_library() {
    if std::env::var_os(e2e::SERVER_BIN_ENV).is_some() {
        // A binary from elsewhere may be linked differently; the library tests still hold.
        return;
    }
    let dir = PluginDir::with(&["sandboxes", "benchmarks", "fixture-dynamic"]);
    BadFile::truncated().put(&dir);
    let out = e2e::run_host_with_env(&["list", "--json"], &dir, &[("LD_DEBUG", "files")]);
    out.assert_success();
    let loads: Vec<&str> = out.stderr.lines().filter(|l| l.contains("file=")).collect();
    assert!(
        loads.iter().any(|l| l.contains("libc.so")),
        "LD_DEBUG shows the loader at work (libc is loaded):\n{}",
        out.stderr
    );
    let dir_text = dir.path().to_str().unwrap();
    let plugin_loads: Vec<&&str> = loads.iter().filter(|l| l.contains(dir_text)).collect();
    assert!(
        plugin_loads.is_empty(),
        "`list` loaded plugin libraries: {plugin_loads:?}"
    );
}
