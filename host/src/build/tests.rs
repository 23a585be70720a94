//! Activation, tool tables and extensions, with plugins opened in process by a test
//! [`Opener`]: plugin types instantiated directly, no library file.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use abi_stable::std_types::RResult;
use plugin_abi::{FfiError, PluginInstanceBox};
use plugin_api::{
    __private::{PluginDefinition, instantiate},
    Original, Tool, ToolError, Value, Wrapped, json,
};
use serde_json::Map;

use super::*;
use crate::discovery::DiscoveredPlugin;

/// Opens the plugins it was given by name, and records which it opened, in order.
#[derive(Debug, Default)]
struct InProcess {
    plugins: BTreeMap<String, Instantiate>,
    /// Manifests the "code" carries instead of the discovered one.
    embedded: BTreeMap<String, String>,
    opened: Mutex<Vec<String>>,
}

type Instantiate = fn() -> RResult<PluginInstanceBox, FfiError>;

impl InProcess {
    fn with(mut self, name: &str, instantiate: Instantiate) -> Self {
        self.plugins.insert(name.to_owned(), instantiate);
        self
    }

    fn opened(&self) -> Vec<String> {
        self.opened.lock().unwrap().clone()
    }
}

impl Opener for InProcess {
    fn open(&self, plugin: &DiscoveredPlugin) -> Result<Opened, ActivationError> {
        let name = &plugin.manifest.name;
        self.opened.lock().unwrap().push(name.clone());
        let instantiate = self
            .plugins
            .get(name)
            .ok_or_else(|| ActivationError::Open {
                plugin: name.clone(),
                source: Arc::new(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such test plugin",
                )),
            })?;
        let instance = instantiate()
            .into_result()
            .map_err(|e| ActivationError::instantiate(name, e))?;
        let manifest_json = self
            .embedded
            .get(name)
            .cloned()
            .unwrap_or_else(|| serde_json::to_string(&plugin.manifest).unwrap());
        Ok(Opened {
            process: None,
            manifest_json,
            instance,
        })
    }
}

/// Offers `echo` (answers its arguments) and `shout` in toolset `base`.
#[derive(Default)]
struct Base;

impl PluginDefinition for Base {
    const NAME: &'static str = "base";
    const OWN_TOOLSET: &'static str = "base";

    fn create() -> Self {
        Self
    }

    fn tools(self: &Arc<Self>) -> Vec<Tool> {
        vec![
            Tool::new("echo", "Echo.").sync(|args: Value| Ok::<_, ToolError>(args)),
            Tool::new("shout", "Shout.").sync(|_: Value| Ok::<_, ToolError>("HEY")),
        ]
    }
}

/// A plugin that only wraps `echo`, answering `{"by": NAME, "inner": <echo's answer>}`.
macro_rules! echo_wrapper {
    ($plugin:ident, $name:literal) => {
        #[derive(Default)]
        struct $plugin;

        impl PluginDefinition for $plugin {
            const OWN_TOOLSET: &'static str = "";
            const EXTENDS: &'static [&'static str] = &["echo"];

            fn create() -> Self {
                Self
            }

            fn tools(self: &Arc<Self>) -> Vec<Tool> {
                Vec::new()
            }

            fn wrap(&self, _extension: u32, original: Original) -> Result<Wrapped, ToolError> {
                wrapped_by($name, original)
            }
        }
    };
}

echo_wrapper!(Outer, "outer");
echo_wrapper!(Inner, "inner");

fn wrapped_by(name: &'static str, original: Original) -> Result<Wrapped, ToolError> {
    let original = Arc::new(original);
    Ok(Wrapped::asynchronous(move |args: Value| {
        let original = Arc::clone(&original);
        async move { Ok::<_, ToolError>(json!({"by": name, "inner": original.call(args).await?})) }
    }))
}

/// Its wrap of `echo` fails.
#[derive(Default)]
struct Refuses;

impl PluginDefinition for Refuses {
    const OWN_TOOLSET: &'static str = "";
    const EXTENDS: &'static [&'static str] = &["echo"];

    fn create() -> Self {
        Self
    }

    fn tools(self: &Arc<Self>) -> Vec<Tool> {
        Vec::new()
    }

    fn wrap(&self, _extension: u32, _original: Original) -> Result<Wrapped, ToolError> {
        Err(ToolError::new("not today"))
    }
}

/// Registers a tool its manifest does not declare.
#[derive(Default)]
struct Sneaky;

impl PluginDefinition for Sneaky {
    const OWN_TOOLSET: &'static str = "sneaky";

    fn create() -> Self {
        Self
    }

    fn tools(self: &Arc<Self>) -> Vec<Tool> {
        vec![Tool::new("hidden", "Undeclared.").sync(|_: Value| Ok::<_, ToolError>(1))]
    }
}

const BASE: &str = r#"{"abi": "0.1.0", "name": "base", "version": "1",
    "toolsets": [{"name": "base"}],
    "tools": [{"name": "echo", "description": "Echo.", "toolset": "base"},
              {"name": "shout", "description": "Shout.", "toolset": "base"}]}"#;

fn plugin(json: &str) -> DiscoveredPlugin {
    let manifest = Manifest::from_json(json).unwrap();
    DiscoveredPlugin::library(format!("lib{}.so", manifest.name), manifest)
}

/// A plugin that only extends `echo`: `extends` is its list of extension fields.
fn extender(name: &str, extends: Value) -> DiscoveredPlugin {
    plugin(&json!({"abi": "0.1.0", "name": name, "version": "1", "extends": extends}).to_string())
}

fn builder(plugins: Vec<DiscoveredPlugin>, opener: InProcess) -> (Builder, Arc<InProcess>) {
    let opener = Arc::new(opener);
    let registry = Arc::new(Registry::new(plugins));
    let dyn_opener: Arc<dyn Opener> = Arc::clone(&opener) as Arc<dyn Opener>;
    (Builder::with_opener(registry, dyn_opener), opener)
}

fn base_only() -> ActiveSet {
    ActiveSet::from_names(["base"])
}

fn names(table: &ToolTable) -> Vec<&str> {
    table.tools().iter().map(|t| t.decl.name.as_str()).collect()
}

async fn call(table: &ToolTable, tool: &str, args: Value) -> Result<Value, CallError> {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    table
        .get(tool)
        .expect("the tool is served")
        .call(&args)
        .await
}

#[tokio::test]
async fn a_plugin_opened_in_process_serves_its_tools() {
    let (builder, opener) = builder(
        vec![plugin(BASE)],
        InProcess::default().with("base", instantiate::<Base>),
    );
    let table = builder.table(&base_only());
    assert_eq!(names(&table), ["echo", "shout"]);
    assert_eq!(
        call(&table, "echo", json!({"a": 1})).await,
        Ok(json!({"a": 1}))
    );
    builder.table(&base_only());
    assert_eq!(opener.opened(), ["base"], "a plugin is opened once");
}

#[test]
fn a_set_that_names_none_of_a_plugins_toolsets_does_not_open_it() {
    let (builder, opener) = builder(
        vec![plugin(BASE)],
        InProcess::default().with("base", instantiate::<Base>),
    );
    assert!(
        builder
            .table(&ActiveSet::from_names(["elsewhere"]))
            .tools()
            .is_empty()
    );
    assert!(opener.opened().is_empty());
}

#[test]
fn code_that_registers_an_undeclared_tool_is_refused() {
    let manifest = r#"{"abi": "0.1.0", "name": "sneaky", "version": "1",
        "toolsets": [{"name": "sneaky"}]}"#;
    let opener = InProcess::default().with("sneaky", instantiate::<Sneaky>);
    let error = activate_with(&opener, &plugin(manifest)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "plugin `sneaky`: the code registers tools the manifest does not declare: hidden"
    );
}

#[test]
fn code_whose_own_manifest_differs_is_refused() {
    let mut opener = InProcess::default().with("base", instantiate::<Base>);
    opener.embedded.insert(
        "base".to_owned(),
        BASE.replace(r#""version": "1""#, r#""version": "2""#),
    );
    let error = activate_with(&opener, &plugin(BASE)).unwrap_err();
    assert!(
        matches!(&error, ActivationError::Mismatch { reason, .. } if reason.contains("differs from the one discovery read")),
        "{error}"
    );
}

#[test]
fn a_plugin_that_fails_to_open_is_left_out_and_the_rest_served() {
    let other = r#"{"abi": "0.1.0", "name": "other", "version": "1",
        "toolsets": [{"name": "other"}],
        "tools": [{"name": "x", "description": "X.", "toolset": "other"}]}"#;
    let (builder, _) = builder(
        vec![plugin(BASE), plugin(other)],
        InProcess::default().with("base", instantiate::<Base>),
    );
    let table = builder.table(&ActiveSet::from_names(["base", "other"]));
    assert_eq!(names(&table), ["echo", "shout"]);
    let failed = builder.plugin("other").unwrap_err();
    assert!(
        matches!(failed.error(), ActivationError::Open { .. }),
        "{failed:?}"
    );
    assert_eq!(
        failed.to_string(),
        "plugin `other`: the library could not be opened: no such test plugin"
    );
    let kept = builder.failure("other").unwrap();
    assert_eq!(kept.to_string(), failed.to_string());
    assert!(
        std::error::Error::source(kept.error()).is_some(),
        "its cause is kept"
    );
    assert!(builder.failure("base").is_none());
}

#[tokio::test]
async fn wraps_apply_by_order_and_the_last_applied_is_outermost() {
    let (builder, _) = builder(
        vec![
            plugin(BASE),
            extender("outer", json!([{"tool": "echo", "wrap": true, "order": 5}])),
            extender(
                "inner",
                json!([{"tool": "echo", "wrap": true, "order": -5}]),
            ),
        ],
        InProcess::default()
            .with("base", instantiate::<Base>)
            .with("outer", instantiate::<Outer>)
            .with("inner", instantiate::<Inner>),
    );
    let table = builder.table(&base_only());
    assert_eq!(
        call(&table, "echo", json!({"x": 1})).await,
        Ok(json!({"by": "outer", "inner": {"by": "inner", "inner": {"x": 1}}}))
    );
}

#[test]
fn an_extension_without_wrap_changes_the_declaration_without_opening_its_plugin() {
    let (builder, opener) = builder(
        vec![
            plugin(BASE),
            extender(
                "describer",
                json!([{"tool": "echo", "description": "Echo, described.",
                        "title": "Echo", "meta": {"k": "v"},
                        "annotations": {"readOnlyHint": true}}]),
            ),
        ],
        InProcess::default().with("base", instantiate::<Base>),
    );
    let table = builder.table(&base_only());
    let echo = &table.get("echo").unwrap().decl;
    assert_eq!(echo.description, "Echo, described.");
    assert_eq!(echo.title.as_deref(), Some("Echo"));
    assert_eq!(echo.annotations.read_only, Some(true));
    assert_eq!(
        echo.meta,
        Some(Map::from_iter([("k".to_owned(), json!("v"))]))
    );
    assert_eq!(opener.opened(), ["base"]);
}

#[test]
fn a_failing_wrap_drops_that_tool_only() {
    let (builder, _) = builder(
        vec![
            plugin(BASE),
            extender("refuses", json!([{"tool": "echo", "wrap": true}])),
        ],
        InProcess::default()
            .with("base", instantiate::<Base>)
            .with("refuses", instantiate::<Refuses>),
    );
    assert_eq!(names(&builder.table(&base_only())), ["shout"]);
}

#[test]
fn a_wrapping_plugin_that_cannot_open_drops_the_tool_it_wraps() {
    let (builder, _) = builder(
        vec![
            plugin(BASE),
            extender("missing", json!([{"tool": "echo", "wrap": true}])),
        ],
        InProcess::default().with("base", instantiate::<Base>),
    );
    assert_eq!(names(&builder.table(&base_only())), ["shout"]);
}

#[test]
fn instructions_are_the_active_toolsets_under_their_titles() {
    let manifest = BASE.replace(
        r#"[{"name": "base"}]"#,
        r#"[{"name": "base", "title": "Base", "instructions": "Use echo."}]"#,
    );
    let (builder, _) = builder(
        vec![plugin(&manifest)],
        InProcess::default().with("base", instantiate::<Base>),
    );
    assert_eq!(
        builder.table(&base_only()).instructions(),
        "## Base\n\nUse echo."
    );
}
