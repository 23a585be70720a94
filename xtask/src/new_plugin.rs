//! `cargo xtask new-plugin NAME [--dir DIR]`: a new plugin crate, from a template that builds.
//!
//! The crate goes in `plugins/NAME/` by default, where the workspace's `plugins/*` member glob
//! picks it up and `build-plugins` builds it. With `--dir` outside this workspace, it gets
//! its own `[workspace]` table and a path dependency on this checkout's `reactor-plugin-api`, so it
//! builds on its own. The template mirrors `plugins/sandboxes`: a `Default` type, a
//! `#[plugin(...)]` impl declaring one toolset, and one example tool whose doc comments are
//! its description and its parameters' descriptions, with tests that call it through
//! `plugin_api::testing` (in `src/lib.rs`: a `cdylib` cannot be linked from `tests/`).

use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};

use crate::{build_plugins, project_root};

/// Options of `cargo xtask new-plugin`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The plugin's name: lowercase ASCII letters, digits, `-` and `_`, starting with a letter.
    pub(crate) name: String,
    /// Create the crate in DIR/NAME instead of plugins/NAME.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let name = args.name.as_str();
    validate_name(name)?;
    let root = project_root();
    let plugins_dir = root.join("plugins");
    let parent = match &args.dir {
        Some(dir) => {
            std::path::absolute(dir).with_context(|| format!("resolving {}", dir.display()))?
        }
        None => plugins_dir.clone(),
    };
    let crate_dir = parent.join(name);
    if crate_dir.exists() {
        bail!(
            "{} already exists; pick another name or remove it",
            crate_dir.display()
        );
    }
    fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;

    let root = canonical(&root)?;
    let parent = canonical(&parent)?;
    let in_workspace = parent.starts_with(&root);
    if in_workspace {
        refuse_taken_package_name(name, &plugins_dir)?;
    }
    let manifest = if in_workspace {
        cargo_toml(name, PluginApi::Workspace)
    } else {
        cargo_toml(name, PluginApi::Path(&root.join("plugin-api")))
    };

    let crate_dir = parent.join(name);
    let src = crate_dir.join("src");
    fs::create_dir_all(&src).with_context(|| format!("creating {}", src.display()))?;
    fs::write(crate_dir.join("Cargo.toml"), manifest)
        .with_context(|| format!("writing {}", crate_dir.join("Cargo.toml").display()))?;
    fs::write(src.join("lib.rs"), lib_rs(name))
        .with_context(|| format!("writing {}", src.join("lib.rs").display()))?;

    let lib = build_plugins::library_file_name(name);
    eprintln!("created plugin crate `{name}` in {}", crate_dir.display());
    eprintln!("next steps:");
    let test = if in_workspace {
        format!("cargo test -p {name}")
    } else {
        "cargo test".to_owned()
    };
    eprintln!(
        "  1. write its tools, and tests that call them, in {} ({test})",
        src.join("lib.rs").display()
    );
    if in_workspace {
        if parent != canonical(&plugins_dir)? {
            eprintln!(
                "     (it is not under plugins/: add its path to `members` in {})",
                root.join("Cargo.toml").display()
            );
        }
        eprintln!("  2. cargo xtask build-plugins --plugin {name}   (copies {lib} into plugins/)");
        eprintln!(
            "  3. cargo run -p reactor-mcp-server -- list                      (its toolset `{name}` is listed)"
        );
        eprintln!(
            "  4. cargo xtask serve                              (and connect to /mcp?toolsets={name})"
        );
    } else {
        eprintln!("  2. cd {} && cargo build --release", crate_dir.display());
        eprintln!(
            "  3. copy target/release/{lib} into {} (or the host's --plugin-dir)",
            plugins_dir.display()
        );
    }
    Ok(())
}

/// Checks that `name` can be a package, plugin and toolset name.
pub(crate) fn validate_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok =
        chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !starts_with_letter || !rest_ok {
        bail!(
            "invalid plugin name `{name}`: use lowercase ASCII letters, digits, `-` and `_`, \
             starting with a letter"
        );
    }
    if RESERVED.contains(&name.replace('-', "_").as_str()) {
        bail!("invalid plugin name `{name}`: it is reserved by Rust or by this workspace");
    }
    Ok(())
}

/// Rust keywords and crate names a package cannot take, plus this workspace's own packages.
const RESERVED: &[&str] = &[
    "abstract",
    "as",
    "async",
    "await",
    "become",
    "box",
    "break",
    "const",
    "continue",
    "crate",
    "do",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "unsafe",
    "unsized",
    "use",
    "virtual",
    "where",
    "while",
    "yield",
    "alloc",
    "core",
    "proc_macro",
    "std",
    "test",
    "e2e",
    "reactor_mcp_server",
    "plugin_api",
    "plugin_api_macros",
    "plugin_abi",
    "plugin_manifest",
    "reactor_plugin_api",
    "reactor_plugin_api_macros",
    "reactor_plugin_manifest",
    "xtask",
];

/// Inside the workspace, package names must be unique: refuse one a plugin crate already has.
fn refuse_taken_package_name(name: &str, plugins_dir: &Path) -> Result<()> {
    if !plugins_dir.is_dir() {
        return Ok(());
    }
    let normalized = name.replace('-', "_");
    if let Some(taken) = build_plugins::discover(plugins_dir)?
        .into_iter()
        .find(|p| p.package.replace('-', "_") == normalized)
    {
        bail!(
            "the plugin crate in {} is already named `{}`",
            taken.dir.display(),
            taken.package
        );
    }
    Ok(())
}

fn canonical(path: &Path) -> Result<PathBuf> {
    fs::canonicalize(path).with_context(|| format!("resolving {}", path.display()))
}

/// Where the new crate finds `plugin-api`.
enum PluginApi<'a> {
    /// `plugin-api.workspace = true`: the crate is a member of this workspace.
    Workspace,
    /// A path dependency on this checkout's `plugin-api`, and a `[workspace]` of its own.
    Path(&'a Path),
}

fn cargo_toml(name: &str, plugin_api: PluginApi<'_>) -> String {
    let (dependency, tail) = match plugin_api {
        PluginApi::Workspace => (
            "plugin-api.workspace = true".to_owned(),
            "\n[lints]\nworkspace = true\n",
        ),
        PluginApi::Path(path) => (
            format!(
                "reactor-plugin-api = {{ path = {} }}",
                toml_string(&path.to_string_lossy())
            ),
            "\n# A workspace of its own, so the crate builds wherever it sits.\n[workspace]\n",
        ),
    };
    format!(
        r#"[package]
name = "{name}"
description = "The {name} plugin for reactor-mcp-server"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
# A plugin is a shared library; the host reads its manifest without loading it.
crate-type = ["cdylib"]

[dependencies]
{dependency}
{tail}"#
    )
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

fn lib_rs(name: &str) -> String {
    let type_name = camel_case(name);
    let title = title_case(name);
    format!(
        r#"//! `{name}`: a plugin for reactor-mcp-server.
//!
//! The `#[plugin]` attribute below writes both the manifest (read by the host without
//! loading this library) and the code that registers the same tools, so the two cannot drift.

use plugin_api::{{ToolError, plugin}};

/// The plugin's state; the host creates it with `Default` when a URL first names its toolset.
#[derive(Debug, Default)]
pub struct {type_name};

// Replace this example with your plugin's tools. Doc comments (`///`) are what clients are
// served: a tool's is its description, a parameter's its description in the input schema.
/// {title}.
#[plugin(toolset(
    name = "{name}",
    title = "{title}",
    description = "The {name} plugin's tools",
))]
impl {type_name} {{
    /// Greet someone by name.
    #[tool(title = "Hello", read_only, idempotent, open_world = false)]
    fn hello(
        &self,
        /// Who to greet.
        name: String,
        /// The greeting to use.
        #[arg(default = "Hello")]
        greeting: String,
    ) -> Result<String, ToolError> {{
        if name.trim().is_empty() {{
            return Err(ToolError::new("name is empty: say who to greet"));
        }}
        Ok(format!("{{greeting}}, {{name}}!"))
    }}
}}

#[cfg(test)]
mod tests {{
    //! The plugin's tools called in process, as the host would call them (`cargo test`).

    use plugin_api::{{json, testing::PluginTest}};

    use super::*;

    #[test]
    fn hello_greets_by_name() {{
        let plugin = PluginTest::new::<{type_name}>();
        let call = plugin.call("hello", json!({{"name": "Ada"}}));
        assert_eq!(call.text(), "Hello, Ada!");
        let call = plugin.call("hello", json!({{"name": "Ada", "greeting": "Hi"}}));
        assert_eq!(call.text(), "Hi, Ada!");
    }}

    #[test]
    fn hello_needs_a_name() {{
        let plugin = PluginTest::new::<{type_name}>();
        let call = plugin.call("hello", json!({{"name": " "}}));
        assert_eq!(call.error().message(), "name is empty: say who to greet");
        let call = plugin.call("hello", json!({{}}));
        assert!(call.error().message().contains("missing field `name`"));
    }}
}}
"#
    )
}

/// `my-plugin_2` -> `MyPlugin2`.
fn camel_case(name: &str) -> String {
    name.split(['-', '_'])
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// `my-plugin_2` -> `My Plugin 2`.
fn title_case(name: &str) -> String {
    name.split(['-', '_'])
        .filter(|word| !word.is_empty())
        .map(camel_case)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use std::{env, process, time::SystemTime};

    use super::*;
    use crate::{cargo, target_dir};

    #[test]
    fn names_are_checked() {
        for good in ["weather", "my-plugin", "a_1", "x"] {
            validate_name(good).unwrap();
        }
        for bad in [
            "",
            "Weather",
            "1st",
            "-x",
            "_x",
            "my plugin",
            "été",
            "fn",
            "reactor_mcp_server",
            "plugin-api",
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn type_names_and_titles() {
        assert_eq!(camel_case("my-plugin_2"), "MyPlugin2");
        assert_eq!(camel_case("a--b"), "AB");
        assert_eq!(title_case("my-plugin_2"), "My Plugin 2");
    }

    #[test]
    fn an_existing_folder_is_refused() {
        let err = run(&Args {
            name: "sandboxes".into(),
            dir: None,
        })
        .unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
    }

    /// Generates a plugin outside the workspace, builds it and runs its tests with cargo, as a
    /// user would.
    ///
    /// Reasonably fast: it builds into the workspace's `target/` (same dependency versions,
    /// from a copy of `Cargo.lock`, and no network), so only the new crate compiles once
    /// `plugin-api` has been built by anything else in the workspace.
    #[test]
    fn generated_plugin_builds_passes_its_tests_and_carries_a_manifest() {
        let temp = TempDir::new();
        let name = "xtask-template-probe";
        run(&Args {
            name: name.into(),
            dir: Some(temp.0.clone()),
        })
        .unwrap();
        let crate_dir = temp.0.join(name);
        fs::copy(
            project_root().join("Cargo.lock"),
            crate_dir.join("Cargo.lock"),
        )
        .unwrap();

        let target = target_dir();
        // Runs cargo in the generated crate, building into the workspace's target folder.
        let cargo_in_crate = |args: &[&str]| {
            let output = cargo()
                .current_dir(&crate_dir)
                .args(args)
                .env("CARGO_TARGET_DIR", &target)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(
                output.status.success(),
                "cargo {} in the generated plugin failed ({}):\n{stdout}\n{}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
            stdout
        };
        cargo_in_crate(&["build", "--quiet"]);

        // Its own tests pass: they call its tool in process, through `plugin_api::testing`.
        let report = cargo_in_crate(&["test", "--quiet"]);
        assert!(
            report.contains("test result: ok. 2 passed"),
            "the generated plugin's two tests did not run:\n{report}"
        );

        let library = target
            .join("debug")
            .join(build_plugins::library_file_name(name));
        let bytes =
            fs::read(&library).unwrap_or_else(|e| panic!("reading {}: {e}", library.display()));
        assert!(
            bytes.windows(6).any(|w| w == b"RMCPMF"),
            "{} has no manifest section (no RMCPMF magic)",
            library.display()
        );

        // The server lists it, from its manifest alone.
        let plugin_dir = temp.0.join("plugin-dir");
        fs::create_dir_all(&plugin_dir).unwrap();
        fs::copy(&library, plugin_dir.join(library.file_name().unwrap())).unwrap();
        let listed = cargo()
            .current_dir(project_root())
            .args([
                "run",
                "--quiet",
                "-p",
                "reactor-mcp-server",
                "--",
                "list",
                "--plugin-dir",
            ])
            .arg(&plugin_dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&listed.stdout);
        assert!(
            listed.status.success(),
            "list failed: {}",
            String::from_utf8_lossy(&listed.stderr)
        );
        assert!(
            text.contains(&format!("{name} 0.1.0")),
            "the plugin is not listed:\n{text}"
        );
        assert!(
            text.contains("tool hello"),
            "its example tool is not listed:\n{text}"
        );
    }

    /// A fresh folder under the system's temporary folder, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Self {
            let nanos = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let dir = env::temp_dir().join(format!("xtask-new-plugin-{}-{nanos}", process::id()));
            fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}
