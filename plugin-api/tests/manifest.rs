//! What `#[plugin]` writes into the manifest section, read back as the host reads it: a plugin
//! that declares one of everything the attributes can say, whose unframed record must equal
//! the manifest built here by hand, and whose tools carry the same declarations at run time.

use std::{collections::HashMap, sync::Arc};

use plugin_api::{
    __private::PluginDefinition,
    Annotations, Context, Manifest, Original, Tool, ToolError, Value, Wrapped,
    manifest::{
        Activation, CompletionDecl, CompletionRef, ExtensionDecl, Permissions, PromptArgumentDecl,
        PromptDecl, ResourceDecl, ResourceTemplateDecl, ToolDecl, ToolsetDecl, section,
    },
    plugin,
};
use serde_json::{Map, json};

/// The state of the plugin below: none.
#[derive(Debug, Default)]
struct Everything;

/// One of everything the attributes can declare.
#[plugin(
    name = "everything",
    version = "2.3.4",
    toolset(
        name = "main",
        title = "Main",
        description = "The main tools",
        instructions = "Start here.",
    ),
    toolset(name = "extra", default = false),
    toolset(name = "core", always),
    on_startup,
    on_toolset = "elsewhere",
    extend(
        tool = "search",
        order = -2,
        title = "Search everywhere",
        description = "Searches every plugin.",
        read_only,
        meta = r#"{"source": "attribute"}"#,
    ),
    permissions(
        read = ["/etc/everything", "${HOME}/.everything"],
        write = ["${TMPDIR:-/tmp}/everything"],
        connect = ["api.example.com:443", "[::1]:8080", "5432"],
        bind = ["${PORT}"],
        env = ["EVERYTHING_TOKEN"],
    ),
)]
impl Everything {
    /// Add two numbers.
    ///
    /// Exactly.
    #[tool(
        title = "Add",
        read_only,
        idempotent = true,
        open_world = false,
        meta = r#"{"scope": "math"}"#
    )]
    fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }

    /// Forget everything.
    #[tool(name = "forget", toolset = "extra", destructive, task = "optional")]
    async fn forget_all(&self) -> String {
        String::new()
    }

    #[tool(description = "Count the calls.", toolset = "core", inline)]
    fn count(&self, context: &Context) -> u32 {
        context.info("counted");
        0
    }

    /// Find a place.
    #[tool(
        input_schema = r##"{"type": "object", "$defs": {"city": {"$anchor": "city", "type": "string"}},
        "properties": {"city": {"$ref": "#city"}}, "if": {"required": ["city"]},
        "then": {"minProperties": 1}, "else": {"maxProperties": 0}}"##
    )]
    fn find(&self, city: Option<String>) -> String {
        city.unwrap_or_default()
    }

    #[extend(
        tool = "launch",
        order = 3,
        description = "Launches, logged.",
        input_schema = r#"{"type": "object"}"#
    )]
    fn on_launch(&self, _original: Original) -> Wrapped {
        Wrapped::sync(|_: Value| Ok::<_, ToolError>(1))
    }

    #[dynamic_tools]
    fn more(&self) -> Vec<Tool> {
        vec![Tool::new("dynamic", "Made at run time.").sync(|_: Value| Ok::<_, ToolError>(0))]
    }

    /// The readme.
    #[resource(
        uri = "test://readme",
        title = "Readme",
        mime_type = "text/markdown",
        size = 5
    )]
    fn readme(&self) -> String {
        "hello".to_owned()
    }

    #[resource(
        uri = "test://data",
        name = "data",
        description = "Raw.",
        toolset = "extra"
    )]
    fn raw(&self) -> Vec<u8> {
        Vec::new()
    }

    /// One book.
    #[resource_template(
        uri_template = "test://book/{id}",
        name = "book",
        mime_type = "text/plain"
    )]
    fn book(&self, id: u32) -> String {
        format!("book {id}")
    }

    /// Greet someone.
    #[prompt(title = "Greeting")]
    fn greet(
        &self,
        /// Whom to greet.
        who: String,
        #[arg(rename = "style", description = "How.")] how: Option<String>,
    ) -> String {
        format!("{} {who}", how.unwrap_or_default())
    }

    #[complete(prompt = "greet", argument = "who")]
    fn complete_who(&self, value: String) -> Vec<String> {
        vec![value]
    }

    #[complete(resource = "test://book/{id}", argument = "id")]
    fn complete_id(&self, value: String, given: HashMap<String, String>) -> Vec<String> {
        vec![value, given.len().to_string()]
    }
}

/// The manifest in `Everything`'s link-section record, unframed and parsed.
fn written() -> Manifest {
    let json = section::decode(Everything::manifest_record()).expect("one framed record");
    Manifest::from_json(json).expect("a manifest")
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn toolset(name: &str) -> ToolsetDecl {
    ToolsetDecl {
        name: name.to_owned(),
        title: String::new(),
        description: String::new(),
        instructions: String::new(),
        default: true,
        always: false,
    }
}

fn tool(name: &str, description: &str, toolset: &str) -> ToolDecl {
    ToolDecl {
        name: name.to_owned(),
        title: None,
        description: description.to_owned(),
        toolset: toolset.to_owned(),
        annotations: Annotations::default(),
        meta: None,
        input_schema: None,
        output_schema: None,
        task: plugin_api::TaskSupport::Forbidden,
        input_first: false,
    }
}

fn extension(tool: &str, order: i32, wrap: bool, description: &str) -> ExtensionDecl {
    ExtensionDecl {
        tool: tool.to_owned(),
        order,
        wrap,
        title: None,
        description: Some(description.to_owned()),
        annotations: None,
        meta: None,
        input_schema: None,
    }
}

fn argument(name: &str, description: &str, required: bool) -> PromptArgumentDecl {
    PromptArgumentDecl {
        name: name.to_owned(),
        description: description.to_owned(),
        required,
    }
}

/// What `Everything`'s attributes say, built by hand.
fn expected() -> Manifest {
    Manifest {
        abi: plugin_abi::VERSION.to_owned(),
        name: "everything".to_owned(),
        version: "2.3.4".to_owned(),
        description: "One of everything the attributes can declare.".to_owned(),
        toolsets: vec![
            ToolsetDecl {
                title: "Main".to_owned(),
                description: "The main tools".to_owned(),
                instructions: "Start here.".to_owned(),
                ..toolset("main")
            },
            ToolsetDecl {
                default: false,
                ..toolset("extra")
            },
            ToolsetDecl {
                always: true,
                ..toolset("core")
            },
        ],
        activation: vec![
            Activation::OnStartup,
            Activation::OnToolset("elsewhere".to_owned()),
        ],
        tools: vec![
            ToolDecl {
                title: Some("Add".to_owned()),
                annotations: Annotations {
                    read_only: Some(true),
                    idempotent: Some(true),
                    open_world: Some(false),
                    ..Annotations::default()
                },
                meta: Some(object(json!({"scope": "math"}))),
                ..tool("add", "Add two numbers.\n\nExactly.", "main")
            },
            ToolDecl {
                annotations: Annotations {
                    destructive: Some(true),
                    ..Annotations::default()
                },
                task: plugin_api::TaskSupport::Optional,
                ..tool("forget", "Forget everything.", "extra")
            },
            tool("count", "Count the calls.", "core"),
            ToolDecl {
                input_schema: Some(find_schema()),
                ..tool("find", "Find a place.", "main")
            },
        ],
        dynamic_tools: true,
        extends: vec![
            ExtensionDecl {
                title: Some("Search everywhere".to_owned()),
                annotations: Some(Annotations {
                    read_only: Some(true),
                    ..Annotations::default()
                }),
                meta: Some(object(json!({"source": "attribute"}))),
                ..extension("search", -2, false, "Searches every plugin.")
            },
            ExtensionDecl {
                input_schema: Some(object(json!({"type": "object"}))),
                ..extension("launch", 3, true, "Launches, logged.")
            },
        ],
        resources: vec![
            ResourceDecl {
                uri: "test://readme".to_owned(),
                name: "readme".to_owned(),
                title: Some("Readme".to_owned()),
                description: "The readme.".to_owned(),
                mime_type: Some("text/markdown".to_owned()),
                toolset: "main".to_owned(),
                size: Some(5),
            },
            ResourceDecl {
                uri: "test://data".to_owned(),
                name: "data".to_owned(),
                title: None,
                description: "Raw.".to_owned(),
                mime_type: None,
                toolset: "extra".to_owned(),
                size: None,
            },
        ],
        resource_templates: vec![ResourceTemplateDecl {
            uri_template: "test://book/{id}".to_owned(),
            name: "book".to_owned(),
            title: None,
            description: "One book.".to_owned(),
            mime_type: Some("text/plain".to_owned()),
            toolset: "main".to_owned(),
        }],
        prompts: vec![PromptDecl {
            name: "greet".to_owned(),
            title: Some("Greeting".to_owned()),
            description: "Greet someone.".to_owned(),
            toolset: "main".to_owned(),
            arguments: vec![
                argument("who", "Whom to greet.", true),
                argument("style", "How.", false),
            ],
        }],
        completions: vec![
            CompletionDecl {
                reference: CompletionRef::Prompt {
                    name: "greet".to_owned(),
                },
                argument: "who".to_owned(),
            },
            CompletionDecl {
                reference: CompletionRef::Resource {
                    uri: "test://book/{id}".to_owned(),
                },
                argument: "id".to_owned(),
            },
        ],
        permissions: permissions(),
    }
}

/// The permissions `Everything` declares, as the manifest's JSON has them.
fn permissions() -> Permissions {
    serde_json::from_value(json!({
        "read": ["/etc/everything", "${HOME}/.everything"],
        "write": ["${TMPDIR:-/tmp}/everything"],
        "connect": ["api.example.com:443", "[::1]:8080", "5432"],
        "bind": ["${PORT}"],
        "env": ["EVERYTHING_TOKEN"]
    }))
    .unwrap()
}

/// The schema `find` gives in its attribute.
fn find_schema() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "$defs": {"city": {"$anchor": "city", "type": "string"}},
        "properties": {"city": {"$ref": "#city"}},
        "if": {"required": ["city"]},
        "then": {"minProperties": 1},
        "else": {"maxProperties": 0}
    }))
}

#[test]
fn the_written_manifest_is_what_the_attributes_declare() {
    assert_eq!(written(), expected());
}

#[test]
fn the_manifest_records_the_abi_version_the_plugin_is_built_against() {
    assert_eq!(written().abi, plugin_abi::VERSION);
}

#[test]
fn the_tools_carry_their_manifest_declarations_and_a_schema_at_run_time() {
    let tools = Everything::tools(&Arc::new(Everything));
    let names: Vec<&str> = tools.iter().map(|t| t.decl().name.as_str()).collect();
    assert_eq!(names, ["add", "forget", "count", "find", "dynamic"]);
    let declared: Vec<ToolDecl> = tools[..4].iter().map(|t| t.decl().clone()).collect();
    let mut written = written().tools;
    for (code, manifest) in declared.iter().zip(&mut written) {
        let schema = code.input_schema.clone();
        assert!(schema.is_some(), "{}", code.name);
        // A schema written in the attribute is in the manifest too, as written.
        manifest.input_schema.get_or_insert(schema.unwrap());
    }
    assert_eq!(declared, written);
    assert_eq!(tools[3].decl().input_schema, Some(find_schema()));
}
