//! The manifest of a reactor-mcp-server plugin, as plain data.
//!
//! A plugin library carries a [`Manifest`] as JSON in a link section (framed by [`section`]);
//! the host reads it with an object-file parser, never with `dlopen`, so listing, selection and
//! `GET /toolsets` need nothing but this crate. The `#[plugin]` attribute builds the same typed
//! value at expansion time and serialises it, so writer and reader share one definition.
//! [`uri_template`] matches resource URIs against RFC 6570 templates, and [`abi_compatible`]
//! says whether a host can open a library built against another version of the ABI crate.
//! [`Permissions`] are what a plugin needs of the system, which a sandboxing host grants alone.

mod permissions;
#[cfg(test)]
mod properties;
pub mod section;
pub mod uri_template;

pub use permissions::{Endpoint, PermissionError, PermissionKind, Permissions};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Everything a plugin declares statically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The version of the ABI crate (`plugin-abi`) the plugin was built against, which the host
    /// checks with [`abi_compatible`] before it opens the library.
    #[serde(alias = "plugin_api")]
    pub abi: String,
    /// The plugin's name, unique in a plugin folder.
    pub name: String,
    /// The plugin's own version.
    pub version: String,
    /// What the plugin is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The toolsets it declares.
    #[serde(default)]
    pub toolsets: Vec<ToolsetDecl>,
    /// When the host opens the library; empty means "when one of its toolsets is first served".
    #[serde(default)]
    pub activation: Vec<Activation>,
    /// The tools declared in code, in declaration order.
    #[serde(default)]
    pub tools: Vec<ToolDecl>,
    /// Whether the plugin also builds tools at run time, which only activation can list.
    #[serde(default)]
    pub dynamic_tools: bool,
    /// Its extensions of tools that (usually) other plugins offer, in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extends: Vec<ExtensionDecl>,
    /// Its static resources, in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceDecl>,
    /// Its resource templates, in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_templates: Vec<ResourceTemplateDecl>,
    /// Its prompts, in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<PromptDecl>,
    /// The arguments of its prompts and resource templates that it completes, in declaration
    /// order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completions: Vec<CompletionDecl>,
    /// What it needs of the system: the files, endpoints and variables a sandbox grants it.
    /// Absent from the manifests of plugins that declare nothing (and of older plugins).
    #[serde(default, skip_serializing_if = "Permissions::is_empty")]
    pub permissions: Permissions,
}

impl Manifest {
    /// Parses a manifest from its JSON text.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The declared toolset called `name`.
    pub fn toolset(&self, name: &str) -> Option<&ToolsetDecl> {
        self.toolsets.iter().find(|t| t.name == name)
    }

    /// Whether the host opens this plugin at start-up.
    pub fn on_startup(&self) -> bool {
        self.activation.contains(&Activation::OnStartup)
    }

    /// Whether serving `toolset` opens this plugin: one of its own toolsets, or a toolset named
    /// by an `on_toolset` event.
    pub fn activated_by(&self, toolset: &str) -> bool {
        self.toolset(toolset).is_some()
            || self
                .activation
                .iter()
                .any(|a| matches!(a, Activation::OnToolset(t) if t == toolset))
    }
}

/// A named group of tools that a URL selects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolsetDecl {
    /// The name a URL uses.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// What the toolset offers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Server instructions contributed when the toolset is active.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instructions: String,
    /// Served to a URL that names no toolset.
    #[serde(default = "yes")]
    pub default: bool,
    /// Served to every URL, and cannot be removed by `without`.
    #[serde(default)]
    pub always: bool,
}

fn yes() -> bool {
    true
}

/// An event that makes the host open a plugin's library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// Open it when the host starts.
    OnStartup,
    /// Open it when a URL names this toolset.
    OnToolset(String),
}

/// The static description of one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDecl {
    /// What a client calls it.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What a model reads: the doc comment unless given explicitly.
    #[serde(default)]
    pub description: String,
    /// The toolset it belongs to.
    pub toolset: String,
    /// Hints for clients; unset hints are left out so MCP's cautious defaults apply.
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
    /// Anything the host carries and does not interpret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// The JSON schema of the arguments. Generated from the argument types at activation;
    /// absent from a manifest unless given explicitly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Map<String, Value>>,
    /// The JSON schema of the structured content the tool answers with, if it says (a bridged
    /// MCP server's tool carries its own over).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    /// Whether the host may run a call as a task (the MCP tasks extension); absent: never.
    #[serde(default, skip_serializing_if = "TaskSupport::is_forbidden")]
    pub task: TaskSupport,
    /// For a task tool: the call starts as a plain call, whose input is gathered first (requests
    /// on the session, or input-required rounds), and becomes a task when the tool says so
    /// (`Context::run_as_task`); absent: a task from the start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub input_first: bool,
}

/// Whether a tool's calls may run as tasks (the MCP extension `io.modelcontextprotocol/tasks`):
/// the host answers a call with a task handle, and the client polls for the result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never a task (the default; what a manifest without the field says).
    #[default]
    Forbidden,
    /// A task for clients that declared the extension, a plain call for the others.
    Optional,
    /// Only a task: a client without the extension is refused (`-32021`).
    Required,
}

impl TaskSupport {
    /// Whether the tool never runs as a task.
    pub fn is_forbidden(&self) -> bool {
        *self == Self::Forbidden
    }

    /// Reads `forbidden`, `optional` or `required`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "forbidden" => Some(Self::Forbidden),
            "optional" => Some(Self::Optional),
            "required" => Some(Self::Required),
            _ => None,
        }
    }
}

impl ToolDecl {
    /// The first line of the description.
    pub fn summary(&self) -> &str {
        self.description.lines().next().unwrap_or("").trim()
    }
}

/// An extension of a tool, by the tool's name: what it changes, statically.
///
/// A field left `None` keeps what the tool said. `meta` is merged over the tool's key by key;
/// the others replace. With `wrap`, the extending plugin's code wraps the tool's handler (its
/// library is opened when the target is built into a tool table); without, the extension is
/// applied from the manifest alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtensionDecl {
    /// The name of the tool it extends.
    pub tool: String,
    /// Where it goes among the extensions of one tool: lower first (default 0); ties go by
    /// plugin name, then declaration order. The last applied is the outermost wrapper.
    #[serde(default)]
    pub order: i32,
    /// Whether the plugin's code wraps the tool's handler.
    #[serde(default)]
    pub wrap: bool,
    /// A new title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A new description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// New annotations, replacing the tool's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Merged over the tool's meta, key by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// A new input schema, for a wrap that changes the arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Map<String, Value>>,
}

impl ExtensionDecl {
    /// What it changes, for listings: `wrap`, then each field it gives, in a fixed order.
    ///
    /// ```
    /// use plugin_manifest::ExtensionDecl;
    ///
    /// let decl: ExtensionDecl = serde_json::from_str(
    ///     r#"{"tool": "launch_sandbox", "wrap": true, "description": "On Datalayer."}"#,
    /// )
    /// .unwrap();
    /// assert_eq!(decl.changes(), ["wrap", "description"]);
    /// ```
    pub fn changes(&self) -> Vec<&'static str> {
        [
            ("wrap", self.wrap),
            ("title", self.title.is_some()),
            ("description", self.description.is_some()),
            ("annotations", self.annotations.is_some()),
            ("meta", self.meta.is_some()),
            ("input_schema", self.input_schema.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}

/// MCP tool annotations; each one left `None` keeps the protocol's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The tool does not modify its environment.
    #[serde(
        default,
        rename = "readOnlyHint",
        skip_serializing_if = "Option::is_none"
    )]
    pub read_only: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(
        default,
        rename = "destructiveHint",
        skip_serializing_if = "Option::is_none"
    )]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(
        default,
        rename = "idempotentHint",
        skip_serializing_if = "Option::is_none"
    )]
    pub idempotent: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(
        default,
        rename = "openWorldHint",
        skip_serializing_if = "Option::is_none"
    )]
    pub open_world: Option<bool>,
}

impl Annotations {
    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The hints that are set, as `name` or `!name`, for listings.
    pub fn flags(&self) -> Vec<String> {
        [
            ("read_only", self.read_only),
            ("destructive", self.destructive),
            ("idempotent", self.idempotent),
            ("open_world", self.open_world),
        ]
        .into_iter()
        .filter_map(|(name, v)| {
            v.map(|on| {
                if on {
                    name.to_owned()
                } else {
                    format!("!{name}")
                }
            })
        })
        .collect()
    }
}

/// A resource with a fixed URI (MCP `resources/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceDecl {
    /// Its URI, unique among the resources a URL is served.
    pub uri: String,
    /// Its programmatic name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds: the doc comment unless given explicitly.
    #[serde(default)]
    pub description: String,
    /// The MIME type of its contents, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The toolset it belongs to.
    pub toolset: String,
    /// Its size in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A family of resources whose URIs fit an RFC 6570 template such as
/// `test://template/{id}/data` (MCP `resources/templates/list`). See [`crate::uri_template`]
/// for the forms understood.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceTemplateDecl {
    /// The URI template, unique among the templates a URL is served.
    pub uri_template: String,
    /// Its programmatic name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What its resources hold: the doc comment unless given explicitly.
    #[serde(default)]
    pub description: String,
    /// The MIME type of its resources' contents, if they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The toolset it belongs to.
    pub toolset: String,
}

/// A prompt (MCP `prompts/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptDecl {
    /// Its name, unique among the prompts a URL is served.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for: the doc comment unless given explicitly.
    #[serde(default)]
    pub description: String,
    /// The toolset it belongs to.
    pub toolset: String,
    /// Its arguments, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgumentDecl>,
}

impl PromptDecl {
    /// Whether the arguments `given` hold every required one; the error names those missing.
    ///
    /// ```
    /// use plugin_manifest::PromptDecl;
    ///
    /// let prompt: PromptDecl = serde_json::from_str(
    ///     r#"{"name": "p", "toolset": "s", "arguments": [
    ///         {"name": "a", "required": true}, {"name": "b"}]}"#,
    /// )
    /// .unwrap();
    /// assert_eq!(
    ///     prompt.check_arguments(|_| false).unwrap_err(),
    ///     "missing required argument `a` of prompt p"
    /// );
    /// assert!(prompt.check_arguments(|name| name == "a").is_ok());
    /// ```
    pub fn check_arguments(&self, given: impl Fn(&str) -> bool) -> Result<(), String> {
        let missing: Vec<String> = self
            .arguments
            .iter()
            .filter(|a| a.required && !given(&a.name))
            .map(|a| format!("`{}`", a.name))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let plural = if missing.len() == 1 { "" } else { "s" };
        Err(format!(
            "missing required argument{plural} {} of prompt {}",
            missing.join(", "),
            self.name
        ))
    }
}

/// One argument of a prompt. Prompt arguments are strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptArgumentDecl {
    /// Its name.
    pub name: String,
    /// What to give: the parameter's doc comment.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Whether `prompts/get` must give it.
    #[serde(default)]
    pub required: bool,
}

/// An argument a plugin completes (MCP `completion/complete`): an argument of one of its
/// prompts, or a variable of one of its resource templates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionDecl {
    /// What the argument belongs to.
    #[serde(rename = "ref")]
    pub reference: CompletionRef,
    /// The argument's (or template variable's) name.
    pub argument: String,
}

/// What a completion refers to, tagged as MCP tags it.
///
/// ```
/// use plugin_manifest::CompletionRef;
///
/// let reference: CompletionRef =
///     serde_json::from_str(r#"{"type": "ref/prompt", "name": "greet"}"#).unwrap();
/// assert_eq!(reference, CompletionRef::Prompt { name: "greet".into() });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompletionRef {
    /// An argument of the prompt called `name`.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// A variable of the resource template `uri` (the template itself, not a URI it matches).
    #[serde(rename = "ref/resource")]
    Resource {
        /// The URI template.
        uri: String,
    },
}

impl std::fmt::Display for CompletionRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Prompt { name } => write!(f, "prompt `{name}`"),
            Self::Resource { uri } => write!(f, "resource template `{uri}`"),
        }
    }
}

/// Whether a library built against version `plugin` of the ABI crate can be opened by a host
/// built against version `host`: Cargo's rule for compatible versions, the same major version,
/// and for `0.x` the same minor version. An unparsable version is never compatible.
/// Either may be the newer: a host opens plugins of its line built before or after it.
/// ```
/// use plugin_manifest::abi_compatible;
///
/// assert!(abi_compatible("0.1.0", "0.1.7"));
/// assert!(abi_compatible("0.2.1", "0.2.0"));
/// assert!(!abi_compatible("0.1.0", "0.2.0"));
/// ```
pub fn abi_compatible(host: &str, plugin: &str) -> bool {
    let (Ok(host), Ok(plugin)) = (semver::Version::parse(host), semver::Version::parse(plugin))
    else {
        return false;
    };
    let minor = (host.major == 0).then_some(host.minor);
    let requirement = semver::VersionReq {
        comparators: vec![semver::Comparator {
            op: semver::Op::Caret,
            major: host.major,
            minor: minor.or(Some(0)),
            patch: Some(0),
            pre: semver::Prerelease::EMPTY,
        }],
    };
    let mut plugin = plugin;
    plugin.pre = semver::Prerelease::EMPTY;
    requirement.matches(&plugin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compatibility_follows_cargo_rules() {
        assert!(abi_compatible("0.1.0", "0.1.7"));
        assert!(!abi_compatible("0.1.0", "0.2.0"));
        assert!(abi_compatible("1.2.0", "1.0.3"));
        assert!(!abi_compatible("1.0.0", "2.0.0"));
        assert!(!abi_compatible("0.1.0", "garbage"));
    }

    #[test]
    fn toolset_defaults_are_default_on_and_not_always() {
        let t: ToolsetDecl = serde_json::from_str(r#"{"name":"x"}"#).unwrap();
        assert!(t.default);
        assert!(!t.always);
    }

    #[test]
    fn unset_annotations_are_left_out() {
        let a = Annotations {
            read_only: Some(true),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"readOnlyHint":true}"#
        );
        assert_eq!(a.flags(), ["read_only"]);
    }

    #[test]
    fn an_older_manifest_without_resources_or_prompts_parses_and_writes_none() {
        let json = r#"{"abi":"0.1.0","name":"p","version":"1"}"#;
        let manifest = Manifest::from_json(json).unwrap();
        assert!(manifest.resources.is_empty() && manifest.prompts.is_empty());
        let written = serde_json::to_value(&manifest).unwrap();
        for key in [
            "resources",
            "resource_templates",
            "prompts",
            "completions",
            "permissions",
        ] {
            assert!(written.get(key).is_none(), "{key} written: {written}");
        }
    }

    #[test]
    fn resources_prompts_and_completions_round_trip() {
        let json = serde_json::json!({
            "abi": "0.1.0", "name": "p", "version": "1",
            "toolsets": [{"name": "s"}],
            "resources": [{"uri": "test://a", "name": "a", "description": "A.",
                           "mime_type": "text/plain", "toolset": "s", "size": 3}],
            "resource_templates": [{"uri_template": "test://t/{id}", "name": "t",
                                    "description": "T.", "toolset": "s"}],
            "prompts": [{"name": "greet", "description": "Greet.", "toolset": "s",
                         "arguments": [{"name": "who", "description": "Whom.", "required": true}]}],
            "completions": [
                {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": "who"},
                {"ref": {"type": "ref/resource", "uri": "test://t/{id}"}, "argument": "id"}
            ]
        });
        let manifest: Manifest = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(manifest.resources[0].size, Some(3));
        assert!(manifest.prompts[0].arguments[0].required);
        assert_eq!(
            manifest.completions[1].reference,
            CompletionRef::Resource {
                uri: "test://t/{id}".into()
            }
        );
        let written = serde_json::to_value(&manifest).unwrap();
        for key in ["resources", "resource_templates", "prompts", "completions"] {
            assert_eq!(written[key], json[key], "{key}");
        }
    }

    #[test]
    fn a_tool_without_task_is_never_a_task_and_writes_none() {
        let json = r#"{"name":"t","toolset":"s"}"#;
        let tool: ToolDecl = serde_json::from_str(json).unwrap();
        assert_eq!(tool.task, TaskSupport::Forbidden);
        assert!(serde_json::to_value(&tool).unwrap().get("task").is_none());
        let required: ToolDecl =
            serde_json::from_str(r#"{"name":"t","toolset":"s","task":"required"}"#).unwrap();
        assert_eq!(required.task, TaskSupport::Required);
        assert_eq!(serde_json::to_value(&required).unwrap()["task"], "required");
    }

    #[test]
    fn activation_events_round_trip() {
        let events = vec![Activation::OnStartup, Activation::OnToolset("b".into())];
        let text = serde_json::to_string(&events).unwrap();
        assert_eq!(text, r#"["on_startup",{"on_toolset":"b"}]"#);
        assert_eq!(
            serde_json::from_str::<Vec<Activation>>(&text).unwrap(),
            events
        );
    }
}
