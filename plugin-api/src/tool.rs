//! Tools as the plugin side holds them: a [`ToolDecl`] and the code that answers it.
//!
//! The `#[plugin]` attribute builds a [`Tool`] for each `#[tool]` method. A plugin that builds
//! tools at run time (from a catalogue, say) returns them from its `#[dynamic_tools]` method,
//! made with [`Tool::new`] and [`Tool::sync`] or [`Tool::asynchronous`].

use std::{future::Future, sync::Arc};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{
    context::Context,
    error::ToolError,
    ffi::FfiOutput,
    manifest::{Annotations, TaskSupport, ToolDecl},
    result::IntoToolOutput,
    runtime::{self, CallFuture, Work},
};

type SyncFn = Arc<dyn Fn(String, Context) -> Result<FfiOutput, ToolError> + Send + Sync>;

/// The code behind a tool: JSON arguments and the call's context in, its output out.
#[derive(Clone)]
pub(crate) enum Handler {
    /// Run on the plugin's blocking pool.
    Sync(SyncFn),
    /// Run on the thread that polls the call (a quick tool that never blocks).
    Inline(SyncFn),
    /// Polled in place, with the plugin's runtime entered.
    Async(Arc<dyn Fn(String, Context) -> Work + Send + Sync>),
}

impl Handler {
    /// A synchronous handler with typed arguments, run on the plugin's blocking pool.
    pub(crate) fn sync<A, R, F>(f: F) -> Self
    where
        A: DeserializeOwned,
        R: IntoToolOutput,
        F: Fn(A) -> Result<R, ToolError> + Send + Sync + 'static,
    {
        Self::Sync(Arc::new(move |args: String, _: Context| {
            f(parse_arguments(&args)?)?.into_output()
        }))
    }

    /// A synchronous handler with typed arguments, run on the thread that polls the call.
    pub(crate) fn inline<A, R, F>(f: F) -> Self
    where
        A: DeserializeOwned,
        R: IntoToolOutput,
        F: Fn(A) -> Result<R, ToolError> + Send + Sync + 'static,
    {
        Self::sync(f).into_inline()
    }

    /// The same handler, run inline if it is synchronous.
    pub(crate) fn into_inline(self) -> Self {
        match self {
            Self::Sync(f) => Self::Inline(f),
            other => other,
        }
    }

    /// An asynchronous handler with typed arguments, polled in place.
    pub(crate) fn asynchronous<A, R, F, Fut>(f: F) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        R: IntoToolOutput,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        let f = Arc::new(f);
        Self::Async(Arc::new(move |args: String, _: Context| {
            let f = Arc::clone(&f);
            Box::pin(async move { f(parse_arguments(&args)?).await?.into_output() })
        }))
    }

    /// Starts a call: the future the host polls.
    pub(crate) fn call(&self, tool: Arc<str>, arguments: String, context: Context) -> CallFuture {
        match self {
            Self::Sync(f) => {
                let f = Arc::clone(f);
                let for_tool = context.clone();
                runtime::spawn_blocking(tool, context, move || f(arguments, for_tool))
            }
            Self::Inline(f) => {
                let f = Arc::clone(f);
                let for_tool = context.clone();
                runtime::inline(tool, context, move || f(arguments, for_tool))
            }
            Self::Async(f) => {
                let work = f(arguments, context.clone());
                runtime::in_place(tool, context, work)
            }
        }
    }
}

/// A tool built in code: its description and its handler.
///
/// ```
/// use plugin_api::{Tool, ToolError};
/// use serde_json::{Value, json};
///
/// let shout = Tool::new("shout", "Say it louder.")
///     .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
///     .sync(|args: Value| -> Result<String, ToolError> {
///         Ok(args["text"].as_str().unwrap_or_default().to_uppercase())
///     });
/// assert_eq!(shout.decl().name, "shout");
/// ```
#[derive(Clone)]
pub struct Tool {
    decl: ToolDecl,
    handler: Handler,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("decl", &self.decl)
            .finish_non_exhaustive()
    }
}

/// A tool's description, waiting for its handler.
#[derive(Debug, Clone)]
pub struct ToolBuilder {
    decl: ToolDecl,
    inline: bool,
}

impl Tool {
    /// Starts a tool with a name and a description. Its toolset is the plugin's own unless
    /// [`ToolBuilder::toolset`] says otherwise; its arguments are any object until
    /// [`ToolBuilder::input_schema`] says otherwise.
    #[allow(clippy::new_ret_no_self)] // a tool is finished by its handler: `new(..).sync(f)`
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> ToolBuilder {
        ToolBuilder {
            decl: ToolDecl {
                name: name.into(),
                title: None,
                description: description.into(),
                toolset: String::new(),
                annotations: Annotations::default(),
                meta: None,
                input_schema: None,
                output_schema: None,
                task: TaskSupport::Forbidden,
                input_first: false,
            },
            inline: false,
        }
    }

    /// The tool's description.
    pub fn decl(&self) -> &ToolDecl {
        &self.decl
    }

    pub(crate) fn into_parts(self) -> (ToolDecl, Handler) {
        (self.decl, self.handler)
    }

    #[doc(hidden)]
    pub fn __sync(
        decl: ToolDecl,
        f: impl Fn(String, Context) -> Result<FfiOutput, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            decl,
            handler: Handler::Sync(Arc::new(f)),
        }
    }

    #[doc(hidden)]
    pub fn __inline(
        decl: ToolDecl,
        f: impl Fn(String, Context) -> Result<FfiOutput, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            decl,
            handler: Handler::Inline(Arc::new(f)),
        }
    }

    #[doc(hidden)]
    pub fn __async<F, Fut>(decl: ToolDecl, f: F) -> Self
    where
        F: Fn(String, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<FfiOutput, ToolError>> + Send + 'static,
    {
        Self {
            decl,
            handler: Handler::Async(Arc::new(move |args, context| Box::pin(f(args, context)))),
        }
    }
}

impl ToolBuilder {
    /// A human-readable name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.decl.title = Some(title.into());
        self
    }

    /// The toolset the tool belongs to; it must be one the plugin declares.
    pub fn toolset(mut self, toolset: impl Into<String>) -> Self {
        self.decl.toolset = toolset.into();
        self
    }

    /// Hints for clients.
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.decl.annotations = annotations;
        self
    }

    /// Data the host carries and does not interpret.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.decl.meta = Some(meta);
        self
    }

    /// The JSON schema of the arguments (an object schema).
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.decl.input_schema = match schema {
            Value::Object(map) => Some(map),
            _ => None,
        };
        self
    }

    /// Whether the host may run a call as a task (`#[tool(task = "optional")]`): for a client
    /// that declared the tasks extension, the call answers at once with a task the client
    /// polls; progress and cancellation (`tasks/cancel`) work as in a plain call, and a request
    /// to the client (`Context::elicit`, ...) waits for the client's `tasks/update`.
    pub fn task(mut self, support: TaskSupport) -> Self {
        self.decl.task = support;
        self
    }

    /// For a task tool: its call starts as a plain call that gathers the tool's input (requests
    /// on the session, or input-required rounds under 2026-07-28), and becomes a task when the
    /// tool calls [`crate::Context::run_as_task`], running again from the start with the answers
    /// it gathered. Without it, a task tool's call is a task from the start.
    pub fn input_first(mut self) -> Self {
        self.decl.input_first = true;
        self
    }

    /// Takes the schema from a typed argument struct.
    pub fn input<A: JsonSchema>(mut self) -> Self {
        self.decl.input_schema = Some(schema_for::<A>());
        self
    }

    /// Runs the synchronous handler given to [`ToolBuilder::sync`] on the thread that polls
    /// the call instead of the plugin's blocking pool, as `#[tool(inline)]` does: for a tool
    /// that returns in microseconds and never blocks (no I/O, no lock held for long, no
    /// `block_on`). It saves two thread wake-ups per call, but while it runs it holds one of
    /// the host's workers. Has no effect on an asynchronous handler (always polled in place).
    pub fn inline(mut self) -> Self {
        self.inline = true;
        self
    }

    /// Finishes with a synchronous handler, run on the plugin's blocking pool (or inline, after
    /// [`ToolBuilder::inline`]). It returns any `Serialize` value or a [`crate::ToolResult`];
    /// [`Context::current`] is the call's context.
    pub fn sync<A, R, F>(self, f: F) -> Tool
    where
        A: DeserializeOwned,
        R: IntoToolOutput,
        F: Fn(A) -> Result<R, ToolError> + Send + Sync + 'static,
    {
        let handler = Handler::sync(f);
        Tool {
            decl: self.decl,
            handler: if self.inline {
                handler.into_inline()
            } else {
                handler
            },
        }
    }

    /// Finishes with an asynchronous handler, polled where the host polls the call, with the
    /// plugin's runtime entered (its timers and IO are the plugin's). It returns any
    /// `Serialize` value or a [`crate::ToolResult`]; [`Context::current`] is the call's context.
    pub fn asynchronous<A, R, F, Fut>(self, f: F) -> Tool
    where
        A: DeserializeOwned + Send + 'static,
        R: IntoToolOutput,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        Tool {
            decl: self.decl,
            handler: Handler::asynchronous(f),
        }
    }
}

/// Parses a call's arguments; a mismatch is an invalid-arguments error naming the problem.
#[doc(hidden)]
pub fn parse_arguments<A: DeserializeOwned>(arguments: &str) -> Result<A, ToolError> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    if !text.trim_start().starts_with('{') {
        return Err(ToolError::invalid_arguments(
            "invalid arguments: expected a JSON object of named arguments",
        ));
    }
    let mut json = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        ToolError::invalid_arguments(if path == "." {
            format!("invalid arguments: {inner}")
        } else {
            format!("invalid argument `{path}`: {inner}")
        })
    })
}

/// A tool's result as it crosses the ABI: a `Serialize` value, or a [`crate::ToolResult`].
#[doc(hidden)]
pub fn to_output<R: IntoToolOutput>(value: R) -> Result<FfiOutput, ToolError> {
    value.into_output()
}

/// The JSON schema of an argument type, as MCP wants it: an object schema with nothing
/// referenced from elsewhere, and no `$schema` or `title` of the generated struct.
pub fn schema_for<A: JsonSchema>() -> Map<String, Value> {
    let settings =
        schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let schema = settings.into_generator().into_root_schema_for::<A>();
    let mut map = match schema.to_value() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    map.remove("$schema");
    map.remove("title");
    map.entry("type").or_insert_with(|| Value::from("object"));
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        name: String,
        count: Option<u32>,
    }

    #[test]
    fn an_inline_tool_runs_on_the_callers_thread_and_a_panic_is_an_error() {
        let tool = Tool::new("t", "").inline().sync(|args: Value| {
            if args.get("boom").is_some() {
                panic!("boom");
            }
            Ok::<_, ToolError>(format!("{:?}", std::thread::current().id()))
        });
        let (_, handler) = tool.into_parts();
        assert!(matches!(handler, Handler::Inline(_)));
        let call = |args: &str| {
            crate::runtime::runtime().block_on(handler.call(
                "t".into(),
                args.to_owned(),
                Context::detached(),
            ))
        };
        let here = format!("\"{:?}\"", std::thread::current().id());
        assert_eq!(call("{}").unwrap().json.as_str(), here);
        let error = call(r#"{"boom": 1}"#).unwrap_err();
        assert_eq!(error.kind, crate::error::ErrorKind::Panicked);
        assert_eq!(error.message.as_str(), "tool t panicked: boom");
        assert_eq!(call("{}").unwrap().json.as_str(), here);
    }

    #[test]
    fn a_wrong_type_names_the_argument() {
        let e = parse_arguments::<Args>(r#"{"name": 5}"#).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArguments);
        assert!(
            e.message()
                .starts_with("invalid argument `name`: invalid type: integer `5`"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn a_missing_or_unknown_argument_is_named() {
        let missing = parse_arguments::<Args>("{}").unwrap_err();
        assert!(
            missing.message().contains("missing field `name`"),
            "{}",
            missing.message()
        );
        let unknown = parse_arguments::<Args>(r#"{"name":"a","colour":1}"#).unwrap_err();
        assert!(
            unknown.message().contains("unknown field `colour`"),
            "{}",
            unknown.message()
        );
    }
}
