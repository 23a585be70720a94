//! The plugin side of resources, resource templates, prompts and completions: each declaration
//! with the code that answers it ([`ContributionHandlers`]), and the dispatch the ABI entry points in
//! `plugin.rs` use.
//!
//! The `#[plugin]` attribute fills a [`ContributionHandlers`] from the `#[resource]`,
//! `#[resource_template]`, `#[prompt]` and `#[complete]` methods; the same declarations are in
//! the manifest, and [`ContributionHandlers::declarations`] lets the host check that at activation.
//! Reading a URI tries the static resources (exact URI), then the templates, in declaration
//! order. Code runs on the plugin's own runtime (sync on the blocking pool, async on the
//! workers: unlike an async tool, it is not polled in place); a panic comes back as an error naming the resource or prompt, and dropping
//! the future aborts the work. Sync code counts against the pool's bound like a sync tool: when
//! it is full, the answer is at once that the plugin is busy.

use std::{collections::HashMap, future::Future, pin::Pin, str::FromStr, sync::Arc};

use abi_stable::std_types::{RResult, RString};
use async_ffi::{FfiFuture, FutureExt};
use plugin_manifest::uri_template::UriTemplate;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::task::JoinHandle;

use crate::{
    context::Context,
    error::{ErrorKind, FfiError, ToolError},
    manifest::{CompletionDecl, CompletionRef, PromptDecl, ResourceDecl, ResourceTemplateDecl},
    prompt::IntoPromptResult,
    resource::IntoResourceContents,
    runtime::{blocking, joined, runtime, within},
};

/// The future the host awaits for a read, a prompt or a completion: JSON text or an error.
pub(crate) type JsonFuture = FfiFuture<RResult<RString, FfiError>>;

type BoxFuture = Pin<Box<dyn Future<Output = Result<String, ToolError>> + Send>>;

/// The code behind a contribution: a request in, JSON out; sync or async.
pub enum Code<In> {
    /// Runs on the plugin's blocking pool.
    Sync(Arc<dyn Fn(In) -> Result<String, ToolError> + Send + Sync>),
    /// Runs on the plugin's workers.
    Async(Arc<dyn Fn(In) -> BoxFuture + Send + Sync>),
}

impl<In: Send + 'static> Code<In> {
    /// Synchronous code.
    pub fn sync(f: impl Fn(In) -> Result<String, ToolError> + Send + Sync + 'static) -> Self {
        Self::Sync(Arc::new(f))
    }

    /// Asynchronous code.
    pub fn asynchronous<F, Fut>(f: F) -> Self
    where
        F: Fn(In) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        Self::Async(Arc::new(move |input| Box::pin(f(input))))
    }

    /// Starts the code on the plugin's runtime; `subject` names it in a panic's message.
    fn run(&self, subject: String, input: In, context: Context) -> JsonFuture {
        let handle = match self {
            Self::Sync(f) => {
                let f = Arc::clone(f);
                match blocking(move || {
                    let _entered = context.enter();
                    f(input)
                }) {
                    Ok(handle) => handle,
                    Err(busy) => return ready(Err(busy)),
                }
            }
            Self::Async(f) => runtime().spawn(within(context, f(input))),
        };
        let mut guard = AbortOnDrop(handle);
        async move {
            let outcome = (&mut guard.0).await;
            RResult::from(joined(&subject, outcome).map(RString::from))
        }
        .into_ffi()
    }
}

impl<In> std::fmt::Debug for Code<In> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Sync(_) => "Code::Sync",
            Self::Async(_) => "Code::Async",
        })
    }
}

/// Aborts the task when the host stops waiting for it.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An answer that needs no code.
pub(crate) fn ready(outcome: Result<String, FfiError>) -> JsonFuture {
    let outcome = RResult::from(outcome.map(RString::from));
    async move { outcome }.into_ffi()
}

/// What a resource's code receives: the URI read, the values of the template's variables, and
/// the declared MIME type.
#[derive(Debug, Clone)]
pub struct ResourceRequest {
    /// The URI the client read.
    pub uri: String,
    variables: Vec<(String, String)>,
    mime_type: Option<String>,
}

impl ResourceRequest {
    /// The template variable `name`, parsed; a value that does not parse means the URI names
    /// no resource.
    pub fn variable<T: FromStr>(&self, name: &str) -> Result<T, ToolError>
    where
        T::Err: std::fmt::Display,
    {
        let value = self
            .variables
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| ToolError::not_found(format!("{}: no `{name}` in it", self.uri)))?;
        value
            .parse()
            .map_err(|e| ToolError::not_found(format!("{}: `{name}` = `{value}`: {e}", self.uri)))
    }

    /// The answer: `value` as `ReadResourceResult` JSON.
    pub fn answer(&self, value: impl IntoResourceContents) -> Result<String, ToolError> {
        let contents = value.into_contents(&self.uri, self.mime_type.as_deref());
        to_json(json!({ "contents": contents }))
    }
}

/// What a prompt's code receives: its arguments, all strings.
#[derive(Debug, Clone)]
pub struct PromptRequest {
    arguments: Map<String, Value>,
    description: String,
}

impl PromptRequest {
    /// The argument `name`, parsed, or `None` when it is not given.
    pub fn optional<T: FromStr>(&self, name: &str) -> Result<Option<T>, ToolError>
    where
        T::Err: std::fmt::Display,
    {
        let Some(value) = self.arguments.get(name) else {
            return Ok(None);
        };
        let text = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        text.parse().map(Some).map_err(|e| {
            ToolError::invalid_arguments(format!("invalid argument `{name}` (`{text}`): {e}"))
        })
    }

    /// The argument `name`, parsed; an invalid-arguments error when it is not given.
    pub fn required<T: FromStr>(&self, name: &str) -> Result<T, ToolError>
    where
        T::Err: std::fmt::Display,
    {
        self.optional(name)?.ok_or_else(|| {
            ToolError::invalid_arguments(format!("missing required argument `{name}`"))
        })
    }

    /// The answer: `value` as `GetPromptResult` JSON, with the prompt's description when the
    /// value gives none.
    pub fn answer(&self, value: impl IntoPromptResult) -> Result<String, ToolError> {
        let mut result = value.into_prompt_result();
        if result.description.is_none() && !self.description.is_empty() {
            result.description = Some(self.description.clone());
        }
        to_json(&result)
    }
}

/// What a completion's code receives: the text typed so far and the other arguments already
/// filled in.
#[derive(Debug, Clone, Default)]
pub struct CompletionRequest {
    /// The partial value.
    pub value: String,
    /// The other arguments of the prompt (or variables of the template) already given.
    pub arguments: HashMap<String, String>,
}

impl CompletionRequest {
    /// The answer: `values` as MCP's `completion` JSON, at most 100 of them,
    /// with the total and whether there are more.
    pub fn answer(&self, values: Vec<String>) -> Result<String, ToolError> {
        Ok(completion_json(values))
    }
}

/// The most values one completion answer holds (MCP's limit).
pub(crate) const MAX_COMPLETIONS: usize = 100;

fn completion_json(mut values: Vec<String>) -> String {
    let total = values.len();
    values.truncate(MAX_COMPLETIONS);
    json!({"values": values, "total": total, "hasMore": total > MAX_COMPLETIONS}).to_string()
}

fn to_json(value: impl serde::Serialize) -> Result<String, ToolError> {
    serde_json::to_string(&value)
        .map_err(|e| ToolError::new(format!("the answer could not be serialised: {e}")))
}

/// A plugin's resources, resource templates, prompts and completions, with their code.
#[derive(Debug, Default)]
pub struct ContributionHandlers {
    resources: Vec<(ResourceDecl, Code<ResourceRequest>)>,
    templates: Vec<(ResourceTemplateDecl, UriTemplate, Code<ResourceRequest>)>,
    prompts: Vec<(PromptDecl, Code<PromptRequest>)>,
    completions: Vec<(CompletionDecl, Code<CompletionRequest>)>,
}

/// The part of an MCP `completion/complete` request the plugin reads.
#[derive(Debug, Deserialize)]
struct CompleteParams {
    #[serde(rename = "ref")]
    reference: CompletionRef,
    argument: CompleteArgument,
    #[serde(default)]
    context: Option<CompleteContext>,
}

#[derive(Debug, Deserialize)]
struct CompleteArgument {
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Debug, Deserialize)]
struct CompleteContext {
    #[serde(default)]
    arguments: Option<HashMap<String, String>>,
}

fn parse_decl<D: serde::de::DeserializeOwned>(json: &str) -> D {
    serde_json::from_str(json).expect("the #[plugin] attribute wrote a valid declaration")
}

impl ContributionHandlers {
    /// Adds a static resource, its `ResourceDecl` given as JSON.
    pub fn resource(&mut self, decl: &str, code: Code<ResourceRequest>) {
        self.resources.push((parse_decl(decl), code));
    }

    /// Adds a resource template, its `ResourceTemplateDecl` given as JSON.
    ///
    /// # Panics
    ///
    /// If the template is not one [`UriTemplate`] understands (the attribute checks it first).
    pub fn resource_template(&mut self, decl: &str, code: Code<ResourceRequest>) {
        let decl: ResourceTemplateDecl = parse_decl(decl);
        let template = UriTemplate::parse(&decl.uri_template)
            .unwrap_or_else(|e| panic!("the #[plugin] attribute checked the template: {e}"));
        self.templates.push((decl, template, code));
    }

    /// Adds a prompt, its `PromptDecl` given as JSON.
    pub fn prompt(&mut self, decl: &str, code: Code<PromptRequest>) {
        self.prompts.push((parse_decl(decl), code));
    }

    /// Adds a completion, its `CompletionDecl` given as JSON.
    pub fn completion(&mut self, decl: &str, code: Code<CompletionRequest>) {
        self.completions.push((parse_decl(decl), code));
    }

    /// The declarations, as the manifest has them: a JSON object with `resources`,
    /// `resource_templates`, `prompts` and `completions`.
    pub(crate) fn declarations(&self) -> String {
        json!({
            "resources": self.resources.iter().map(|(d, _)| d).collect::<Vec<_>>(),
            "resource_templates": self.templates.iter().map(|(d, _, _)| d).collect::<Vec<_>>(),
            "prompts": self.prompts.iter().map(|(d, _)| d).collect::<Vec<_>>(),
            "completions": self.completions.iter().map(|(d, _)| d).collect::<Vec<_>>(),
        })
        .to_string()
    }

    /// Reads `uri`: the static resource with that URI, else the first template it fits; a
    /// not-found error when there is none.
    pub(crate) fn read(&self, uri: String, context: Context) -> JsonFuture {
        let found = self
            .resources
            .iter()
            .find(|(d, _)| d.uri == uri)
            .map(|(d, code)| (code, Vec::new(), d.mime_type.clone()))
            .or_else(|| {
                self.templates.iter().find_map(|(d, template, code)| {
                    let variables = template.matches(&uri)?;
                    Some((code, variables, d.mime_type.clone()))
                })
            });
        match found {
            Some((code, variables, mime_type)) => code.run(
                format!("resource {uri}"),
                ResourceRequest {
                    uri,
                    variables,
                    mime_type,
                },
                context,
            ),
            None => ready(Err(FfiError::new(
                ErrorKind::NotFound,
                format!("Resource not found: {uri}"),
            ))),
        }
    }

    /// Gets the prompt `name` with these arguments (a JSON object of strings).
    pub(crate) fn get_prompt(&self, name: &str, arguments: &str, context: Context) -> JsonFuture {
        let Some((decl, code)) = self.prompts.iter().find(|(d, _)| d.name == name) else {
            return ready(Err(FfiError::new(
                ErrorKind::InvalidArguments,
                format!("Unknown prompt: {name}"),
            )));
        };
        let arguments = match arguments.trim() {
            "" | "null" => Map::new(),
            text => match serde_json::from_str(text) {
                Ok(Value::Object(map)) => map,
                _ => {
                    return ready(Err(FfiError::new(
                        ErrorKind::InvalidArguments,
                        format!("the arguments of prompt {name} are not a JSON object"),
                    )));
                }
            },
        };
        if let Err(missing) = decl.check_arguments(|a| arguments.contains_key(a)) {
            return ready(Err(FfiError::new(ErrorKind::InvalidArguments, missing)));
        }
        code.run(
            format!("prompt {name}"),
            PromptRequest {
                arguments,
                description: decl.description.clone(),
            },
            context,
        )
    }

    /// Completes an argument, `request` being MCP's `completion/complete` params as JSON. An
    /// argument the plugin does not complete gets no values.
    pub(crate) fn complete(&self, request: &str) -> JsonFuture {
        let params: CompleteParams = match serde_json::from_str(request) {
            Ok(params) => params,
            Err(e) => {
                return ready(Err(FfiError::new(
                    ErrorKind::InvalidArguments,
                    format!("invalid completion request: {e}"),
                )));
            }
        };
        let found = self
            .completions
            .iter()
            .find(|(d, _)| d.reference == params.reference && d.argument == params.argument.name);
        let Some((decl, code)) = found else {
            return ready(Ok(completion_json(Vec::new())));
        };
        code.run(
            format!(
                "completion of {} argument {}",
                decl.reference, decl.argument
            ),
            CompletionRequest {
                value: params.argument.value,
                arguments: params.context.and_then(|c| c.arguments).unwrap_or_default(),
            },
            Context::detached(),
        )
    }
}

#[cfg(test)]
mod tests {
    //! The entry points in process, through the ABI object the host sees.

    use serde_json::{Value, json};

    use super::*;
    use crate::{
        ffi::PluginInstanceBox,
        plugin::{PluginDefinition, instantiate},
        prompt::PromptMessage,
        tool::Tool,
    };

    #[derive(Default)]
    struct Library;

    impl PluginDefinition for Library {
        const OWN_TOOLSET: &'static str = "library";

        fn create() -> Self {
            Self
        }

        fn tools(self: &Arc<Self>) -> Vec<Tool> {
            Vec::new()
        }

        fn contributions(self: &Arc<Self>) -> ContributionHandlers {
            let mut c = ContributionHandlers::default();
            c.resource(
                r#"{"uri": "test://text", "name": "text", "toolset": "library"}"#,
                Code::sync(|r: ResourceRequest| r.answer("hello")),
            );
            c.resource(
                r#"{"uri": "test://panics", "name": "panics", "toolset": "library"}"#,
                Code::sync(|_: ResourceRequest| -> Result<String, ToolError> { panic!("oops") }),
            );
            c.resource_template(
                r#"{"uri_template": "test://book/{id}", "name": "book", "toolset": "library",
                    "mime_type": "text/markdown"}"#,
                Code::asynchronous(|r: ResourceRequest| async move {
                    let id: u32 = r.variable("id")?;
                    r.answer(format!("book {id}"))
                }),
            );
            c.prompt(
                r#"{"name": "greet", "description": "Greet someone.", "toolset": "library",
                    "arguments": [{"name": "who", "required": true}, {"name": "how"}]}"#,
                Code::sync(|p: PromptRequest| {
                    let who: String = p.required("who")?;
                    let how: Option<String> = p.optional("how")?;
                    p.answer(PromptMessage::user(format!(
                        "{} {who}",
                        how.unwrap_or_else(|| "hello".into())
                    )))
                }),
            );
            c.completion(
                r#"{"ref": {"type": "ref/prompt", "name": "greet"}, "argument": "who"}"#,
                Code::sync(|c: CompletionRequest| {
                    let names = ["ada", "alan", "grace"].map(String::from);
                    c.answer(
                        names
                            .into_iter()
                            .filter(|n| n.starts_with(&c.value))
                            .collect(),
                    )
                }),
            );
            c
        }
    }

    fn instance() -> PluginInstanceBox {
        instantiate::<Library>().into_result().unwrap()
    }

    fn wait(future: JsonFuture) -> Result<Value, FfiError> {
        let json = runtime().block_on(future).into_result()?;
        Ok(serde_json::from_str(&json).unwrap())
    }

    fn read(uri: &str) -> Result<Value, FfiError> {
        wait(instance().read_resource(uri.into()))
    }

    fn prompt(name: &str, arguments: Value) -> Result<Value, FfiError> {
        wait(instance().get_prompt(name.into(), arguments.to_string().into()))
    }

    #[test]
    fn a_static_resource_and_a_template_are_read() {
        assert_eq!(
            read("test://text").unwrap(),
            json!({"contents": [{"uri": "test://text", "mimeType": "text/plain", "text": "hello"}]})
        );
        assert_eq!(
            read("test://book/7").unwrap(),
            json!({"contents": [{"uri": "test://book/7", "mimeType": "text/markdown", "text": "book 7"}]})
        );
    }

    #[test]
    fn an_unknown_uri_or_a_variable_that_does_not_parse_is_not_found() {
        for uri in ["test://nothing", "test://book/seven"] {
            let error = read(uri).unwrap_err();
            assert_eq!(error.kind, ErrorKind::NotFound, "{uri}: {error}");
            assert!(error.message.contains(uri), "{error}");
        }
    }

    #[test]
    fn a_panicking_resource_is_an_error_naming_it() {
        let error = read("test://panics").unwrap_err();
        assert_eq!(error.kind, ErrorKind::Panicked);
        assert_eq!(
            error.message.as_str(),
            "resource test://panics panicked: oops"
        );
    }

    #[test]
    fn a_prompt_gets_its_arguments_and_its_description() {
        assert_eq!(
            prompt("greet", json!({"who": "Ada", "how": "hi"})).unwrap(),
            json!({"description": "Greet someone.", "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi Ada"}}]})
        );
        let missing = prompt("greet", json!({"how": "hi"})).unwrap_err();
        assert_eq!(missing.kind, ErrorKind::InvalidArguments);
        assert_eq!(
            missing.message.as_str(),
            "missing required argument `who` of prompt greet"
        );
        let unknown = prompt("nope", json!({})).unwrap_err();
        assert_eq!(unknown.message.as_str(), "Unknown prompt: nope");
    }

    #[test]
    fn a_completion_answers_its_argument_and_nothing_else() {
        let complete =
            |request: Value| wait(instance().complete(request.to_string().into())).unwrap();
        assert_eq!(
            complete(json!({"ref": {"type": "ref/prompt", "name": "greet"},
                            "argument": {"name": "who", "value": "a"}})),
            json!({"values": ["ada", "alan"], "total": 2, "hasMore": false})
        );
        assert_eq!(
            complete(json!({"ref": {"type": "ref/prompt", "name": "greet"},
                            "argument": {"name": "how", "value": "a"}}))["values"],
            json!([])
        );
    }

    #[test]
    fn completions_are_cut_at_one_hundred() {
        let answer: Value =
            serde_json::from_str(&completion_json((0..150).map(|i| i.to_string()).collect()))
                .unwrap();
        assert_eq!(answer["values"].as_array().unwrap().len(), 100);
        assert_eq!(answer["total"], 150);
        assert_eq!(answer["hasMore"], true);
    }

    #[test]
    fn the_declarations_are_listed_as_the_manifest_has_them() {
        let json = instance().contributions().into_result().unwrap();
        let declared: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(declared["resources"][1]["uri"], "test://panics");
        assert_eq!(
            declared["resource_templates"][0]["uri_template"],
            "test://book/{id}"
        );
        assert_eq!(declared["prompts"][0]["arguments"][0]["required"], true);
        assert_eq!(declared["completions"][0]["argument"], "who");
    }
}
