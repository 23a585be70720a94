//! Testing a plugin in a plain `#[test]`, with no host and no library file: [`PluginTest`]
//! builds the plugin in process and calls its tools, reads its resources, gets its prompts and
//! completes their arguments through the ABI objects the host would use.
//!
//! The plugin is built by the same constructor the library exports to the host, so a panic
//! while building it, or in a tool, comes back as the host would get it. Each tool call gets a
//! context of its own that records what the tool sends (log messages, progress, requests to the
//! client, resource updates) and answers requests to the client from canned answers, refusing
//! as the host does, once the test has set the client's capabilities, those they leave out; the
//! call's future is polled on the test's thread, as a host worker polls it, so async tools run
//! without a runtime of the test's own. A result the tool built is read as the host reads it,
//! and one the host would refuse is the error the host serves in its place.
//!
//! What only the manifest says is not checked here, since the manifest is read from the library
//! file: that the code's tools, resources and prompts are the manifest's, and what an extension
//! changes without code (description, annotations, input schema) and its `order`. The host also
//! checks a call's arguments against the tool's input schema before the plugin sees them; here
//! the plugin's own parsing of its arguments answers, which names the field at fault too.

use std::{
    collections::BTreeSet,
    future::Future,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    task::{Poll, Wake, Waker},
    thread::Thread,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, ROption, RResult, RStr, RString, RVec},
};
use async_ffi::{FfiFuture, FutureExt};
use serde_json::{Map, Value, json};

use crate::{
    context::LogLevel,
    contribution::JsonFuture,
    error::{ErrorKind, FfiError, ToolError},
    ffi::{
        FfiLogEvent, FfiOutput, HostContext, HostContextBox, OutputKind, PluginInstanceBox,
        ToolHandlerBox, share_handler,
    },
    manifest::ToolDecl,
    plugin::{PluginDefinition, ffi_handler, instantiate, no_wrap},
    result::{ToolOutput, ToolResult},
    tool::Tool,
};

/// A plugin built in process, for tests: call its tools, read its resources, get its prompts.
///
/// Every method blocks until the plugin answers. Dropping it stops the plugin (its `#[on_stop]`
/// method runs), as the host does when it shuts down.
///
/// ```
/// use plugin_api::{Context, LogLevel, json, plugin, testing::PluginTest};
///
/// #[derive(Debug, Default)]
/// pub struct Weather;
///
/// #[plugin(name = "weather")]
/// impl Weather {
///     /// Tell the forecast for a city.
///     #[tool]
///     async fn forecast(&self, city: String, ctx: Context) -> String {
///         ctx.info(format!("looking at the sky over {city}"));
///         format!("Sunny in {city}")
///     }
/// }
///
/// let weather = PluginTest::new::<Weather>();
/// let call = weather.call("forecast", json!({"city": "Paris"}));
/// assert_eq!(call.text(), "Sunny in Paris");
/// assert_eq!(call.logs()[0].level, LogLevel::Info);
///
/// let wrong = weather.call("forecast", json!({"city": 7}));
/// assert!(wrong.error().message().starts_with("invalid argument `city`"));
/// ```
pub struct PluginTest {
    name: &'static str,
    own_toolset: &'static str,
    extends: &'static [&'static str],
    instance: PluginInstanceBox,
    /// The tools served, in order: the plugin's, then those given with [`PluginTest::with_tool`].
    tools: Vec<ToolDecl>,
    /// The handler of each tool in `tools`, at the same index.
    handlers: Vec<Arc<ToolHandlerBox>>,
    client: Client,
}

impl std::fmt::Debug for PluginTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginTest")
            .field("name", &self.name)
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl PluginTest {
    /// Builds the plugin `P` (a type with `#[plugin]`) as the host would once it has opened
    /// its library, and lists its tools, dynamic ones included. The plugin's own extensions
    /// of its own tools are applied, in declaration order.
    ///
    /// # Panics
    ///
    /// When building the plugin or listing its tools fails or panics; [`PluginTest::try_new`]
    /// returns that error instead.
    #[track_caller]
    pub fn new<P: PluginDefinition>() -> Self {
        match Self::try_new::<P>() {
            Ok(test) => test,
            Err(e) => panic!("plugin {} could not be built: {}", P::NAME, e.message()),
        }
    }

    /// Like [`PluginTest::new`], but a plugin that cannot be built is an error (of kind
    /// `Panicked` when its `Default` panicked), to test that.
    pub fn try_new<P: PluginDefinition>() -> Result<Self, ToolError> {
        crate::logs::forward_from(TraceLevel::Trace);
        let instance = instantiate::<P>()
            .into_result()
            .map_err(ToolError::from_ffi)?;
        let listed = instance
            .tools()
            .into_result()
            .map_err(ToolError::from_ffi)?;
        let mut test = Self {
            name: P::NAME,
            own_toolset: P::OWN_TOOLSET,
            extends: P::EXTENDS,
            instance,
            tools: Vec::with_capacity(listed.len()),
            handlers: Vec::with_capacity(listed.len()),
            client: Client::default(),
        };
        for tool in listed {
            let decl = serde_json::from_str(&tool.spec)
                .map_err(|e| ToolError::new(format!("a tool's declaration does not parse: {e}")))?;
            test.serve(decl, tool.handler)?;
        }
        Ok(test)
    }

    /// Adds a tool as another plugin would serve it, to test this plugin's extensions on: each
    /// extension with code (`#[extend(tool = "...")]`) that targets it wraps it, in declaration
    /// order, and [`PluginTest::call`] calls the outermost wrapper.
    ///
    /// ```
    /// use plugin_api::{Original, Tool, ToolError, Value, Wrapped, json, plugin};
    /// use plugin_api::testing::PluginTest;
    ///
    /// #[derive(Debug, Default)]
    /// pub struct OnGpu;
    ///
    /// #[plugin(name = "on_gpu")]
    /// impl OnGpu {
    ///     /// Launch every sandbox on a GPU.
    ///     #[extend(tool = "launch_sandbox")]
    ///     fn on_gpu(&self, original: Original) -> Wrapped {
    ///         Wrapped::asynchronous(move |mut arguments: Value| {
    ///             let original = original.clone();
    ///             async move {
    ///                 arguments["variant"] = json!("gpu");
    ///                 original.call(arguments).await
    ///             }
    ///         })
    ///     }
    /// }
    ///
    /// // A stand-in for the sandboxes plugin's tool: it answers its arguments.
    /// let launch = Tool::new("launch_sandbox", "Launch a sandbox.")
    ///     .sync(|arguments: Value| Ok::<_, ToolError>(arguments));
    /// let on_gpu = PluginTest::new::<OnGpu>().with_tool(launch);
    /// let call = on_gpu.call("launch_sandbox", json!({"sandbox_name": "a"}));
    /// assert_eq!(call.value(), json!({"sandbox_name": "a", "variant": "gpu"}));
    /// ```
    ///
    /// # Panics
    ///
    /// When an extension's wrap fails or panics (the host would leave the tool out);
    /// [`PluginTest::try_with_tool`] returns that error instead.
    #[track_caller]
    pub fn with_tool(self, tool: Tool) -> Self {
        let name = tool.decl().name.clone();
        match self.try_with_tool(tool) {
            Ok(test) => test,
            Err(e) => panic!("tool {name} could not be wrapped: {}", e.message()),
        }
    }

    /// Like [`PluginTest::with_tool`], but an extension whose wrap fails or panics is an error,
    /// to test that.
    pub fn try_with_tool(mut self, tool: Tool) -> Result<Self, ToolError> {
        let (decl, handler) = tool.into_parts();
        let handler = ffi_handler("", Arc::from(decl.name.as_str()), handler);
        self.serve(decl, handler)?;
        Ok(self)
    }

    /// Serves `decl` with `handler` wrapped by each of this plugin's extensions of it.
    fn serve(&mut self, decl: ToolDecl, handler: ToolHandlerBox) -> Result<(), ToolError> {
        let mut handler = Arc::new(handler);
        for (index, _) in (0u32..).zip(self.extends).filter(|(_, t)| **t == decl.name) {
            let original = share_handler(&handler);
            match self.instance.wrap(index, original).into_result() {
                Ok(wrapped) => handler = Arc::new(wrapped),
                Err(e) if e.message.as_str() == no_wrap(index).message() => {}
                Err(e) => return Err(ToolError::from_ffi(e)),
            }
        }
        self.tools.push(decl);
        self.handlers.push(handler);
        Ok(())
    }

    /// Makes the client answer each request `method` (`sampling/createMessage`,
    /// `elicitation/create`, `roots/list`) with `answer`, its result as JSON; the client then
    /// declares the capability for it (`sampling`, `elicitation`, `roots`) unless
    /// [`PluginTest::with_client_capabilities`] says otherwise. A request with no answer fails
    /// with a message naming the method.
    ///
    /// ```
    /// use plugin_api::{Context, ToolError, json, plugin, testing::PluginTest};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Poet;
    ///
    /// #[plugin(name = "poet")]
    /// impl Poet {
    ///     /// Ask the client's model for a haiku.
    ///     #[tool]
    ///     async fn haiku(&self, ctx: Context) -> Result<String, ToolError> {
    ///         let answer = ctx.sample(json!({"messages": [], "maxTokens": 60})).await?;
    ///         Ok(answer["content"]["text"].as_str().unwrap_or_default().to_owned())
    ///     }
    /// }
    ///
    /// let poet = PluginTest::new::<Poet>().with_client_answer(
    ///     "sampling/createMessage",
    ///     json!({"role": "assistant", "content": {"type": "text", "text": "An old pond"}}),
    /// );
    /// let call = poet.call("haiku", json!({}));
    /// assert_eq!(call.text(), "An old pond");
    /// assert_eq!(call.requests()[0].params["maxTokens"], 60);
    /// ```
    pub fn with_client_answer(mut self, method: impl Into<String>, answer: Value) -> Self {
        self.client.answers.push((method.into(), answer));
        self
    }

    /// Sets the capabilities the client declares (`ctx.client_capabilities()`), a JSON object;
    /// by default, those of the requests given an answer.
    ///
    /// Once they are set, the client refuses a request whose capability they leave out
    /// (`sampling` for `sampling/createMessage`, `elicitation` for `elicitation/create`, `roots`
    /// for `roots/list`), answer or not, as the host does: an error of kind `Tool` naming the
    /// method and the capability, in the host's words. Until then it answers every request it
    /// has an answer for.
    ///
    /// ```
    /// use plugin_api::{Context, ToolError, error::ErrorKind, json, plugin, testing::PluginTest};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Poet;
    ///
    /// #[plugin(name = "poet")]
    /// impl Poet {
    ///     /// Ask the client's model for a haiku.
    ///     #[tool]
    ///     async fn haiku(&self, ctx: Context) -> Result<String, ToolError> {
    ///         let answer = ctx.sample(json!({"messages": [], "maxTokens": 60})).await?;
    ///         Ok(answer["content"]["text"].as_str().unwrap_or_default().to_owned())
    ///     }
    /// }
    ///
    /// let answer = json!({"role": "assistant", "content": {"type": "text", "text": "An old pond"}});
    /// let poet = PluginTest::new::<Poet>()
    ///     .with_client_answer("sampling/createMessage", answer)
    ///     .with_client_capabilities(json!({"elicitation": {}}));
    /// let refused = poet.call("haiku", json!({}));
    /// assert_eq!(refused.error().kind(), ErrorKind::Tool);
    /// assert_eq!(
    ///     refused.error().message(),
    ///     "cannot send sampling/createMessage: the client did not declare the `sampling` capability"
    /// );
    ///
    /// let poet = poet.with_client_capabilities(json!({"sampling": {}}));
    /// assert_eq!(poet.call("haiku", json!({})).text(), "An old pond");
    /// ```
    pub fn with_client_capabilities(mut self, capabilities: Value) -> Self {
        self.client.capabilities = Some(capabilities);
        self
    }

    /// Sets the toolsets active for each call (`ctx.active_toolsets()`); by default the
    /// plugin's own toolset and those of its tools. Tools are served whatever the toolsets.
    pub fn with_active_toolsets<S: Into<String>>(
        mut self,
        toolsets: impl IntoIterator<Item = S>,
    ) -> Self {
        self.client.toolsets = Some(toolsets.into_iter().map(Into::into).collect());
        self
    }

    /// Makes every call belong to the MCP session `id` (`ctx.session_id()`); by default calls
    /// belong to none, as on a `--stateless` server. Two tests of one plugin, each with its
    /// own session, show what one client sees of another's state.
    ///
    /// ```
    /// use plugin_api::{Context, json, plugin, testing::PluginTest};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct WhoAmI;
    ///
    /// #[plugin(name = "who_am_i")]
    /// impl WhoAmI {
    ///     /// The caller's session.
    ///     #[tool]
    ///     fn session(ctx: &Context) -> Option<String> {
    ///         ctx.session_id()
    ///     }
    /// }
    ///
    /// let test = PluginTest::new::<WhoAmI>();
    /// assert_eq!(test.call("session", json!({})).value(), json!(null));
    /// let test = test.with_session("session-a");
    /// assert_eq!(test.call("session", json!({})).text(), "session-a");
    /// ```
    pub fn with_session(mut self, id: impl Into<String>) -> Self {
        self.client.session = Some(id.into());
        self
    }

    /// Makes every call come from the authenticated caller `name` with these OAuth `scopes`
    /// (`ctx.caller()`); by default calls come from no one, as on a server without
    /// authentication.
    ///
    /// ```
    /// use plugin_api::{Context, json, plugin, testing::PluginTest};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Greeter;
    ///
    /// #[plugin(name = "greeter")]
    /// impl Greeter {
    ///     /// Greet the caller.
    ///     #[tool]
    ///     fn hello(ctx: &Context) -> String {
    ///         ctx.caller().map_or("hello".to_owned(), |c| format!("hello, {}", c.name))
    ///     }
    /// }
    ///
    /// let test = PluginTest::new::<Greeter>().with_caller("alice", ["tools:read"]);
    /// assert_eq!(test.call("hello", json!({})).text(), "hello, alice");
    /// ```
    pub fn with_caller<S: Into<String>>(
        mut self,
        name: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.client.caller = Some((name.into(), scopes.into_iter().map(Into::into).collect()));
        self
    }

    /// Makes every call carry this W3C `traceparent` (and `tracestate`), as a request's
    /// `params._meta` would (`ctx.trace_context()`); by default calls carry none.
    pub fn with_trace_context(
        mut self,
        traceparent: impl Into<String>,
        tracestate: Option<&str>,
    ) -> Self {
        let mut context = serde_json::Map::new();
        context.insert("traceparent".into(), Value::from(traceparent.into()));
        if let Some(state) = tracestate {
            context.insert("tracestate".into(), Value::from(state));
        }
        self.client.trace_context = Some(Value::Object(context));
        self
    }

    /// Makes the test's host say it was built with plugin-abi `version`
    /// (`ctx.host_abi()`), to see what the plugin does on an older host: the services that came
    /// after `version` answer [`crate::NotOffered`]. By default the host is of this crate's ABI.
    ///
    /// ```
    /// use plugin_api::{Context, ToolError, json, plugin, testing::PluginTest};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Traced;
    ///
    /// #[plugin(name = "traced")]
    /// impl Traced {
    ///     /// The caller's trace id.
    ///     #[tool]
    ///     fn trace_id(ctx: &Context) -> Result<Option<String>, ToolError> {
    ///         Ok(ctx.trace_context()?.map(|t| t.trace_id().to_owned()))
    ///     }
    /// }
    ///
    /// let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    /// let test = PluginTest::new::<Traced>().with_trace_context(parent, None);
    /// assert_eq!(test.call("trace_id", json!({})).text(), "4bf92f3577b34da6a3ce929d0e0e4736");
    /// let old = test.with_host_abi("0.2.0");
    /// let refused = old.call("trace_id", json!({}));
    /// assert!(refused.error().message().contains("does not offer `trace_context`"));
    /// ```
    pub fn with_host_abi(mut self, version: impl Into<String>) -> Self {
        self.client.host_abi = Some(version.into());
        self
    }

    /// The tools served, as a client lists them (name, description, input schema, ...): the
    /// plugin's in order, dynamic ones included, then those added with
    /// [`PluginTest::with_tool`].
    pub fn tools(&self) -> &[ToolDecl] {
        &self.tools
    }

    /// The tool named `name`, if it is served.
    pub fn tool(&self, name: &str) -> Option<&ToolDecl> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Calls the tool `name` with `arguments` (a JSON object), and waits for its answer.
    ///
    /// # Panics
    ///
    /// When no tool is named `name`; a tool that fails or panics is not a panic here but a
    /// [`Call`] whose [`Call::error`] says so.
    #[track_caller]
    pub fn call(&self, name: &str, arguments: Value) -> Call {
        let Some(index) = self.tools.iter().position(|t| t.name == name) else {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
            panic!(
                "plugin {} has no tool `{name}`; it has: {}",
                self.name,
                names.join(", ")
            );
        };
        let recorder = Recorder {
            record: Arc::default(),
            client: Arc::new(self.client.answering(self.default_toolsets())),
        };
        let record = Arc::clone(&recorder.record);
        let context = HostContextBox::from_ptr(RArc::new(recorder), TD_Opaque);
        let answer = wait(self.handlers[index].call(arguments.to_string().into(), context));
        let outcome = answer
            .into_result()
            .map_err(ToolError::from_ffi)
            .and_then(|output| output_of(&output, name));
        Call {
            tool: name.to_owned(),
            outcome,
            record,
        }
    }

    /// Reads the resource `uri` (a static one, else the first template it fits): MCP
    /// `ReadResourceResult` JSON, `{"contents": [...]}`. A URI the plugin does not serve is an
    /// error of kind `NotFound`.
    pub fn read_resource(&self, uri: &str) -> Result<Value, ToolError> {
        answer(self.instance.read_resource(uri.into()))
    }

    /// Gets the prompt `name` with `arguments` (a JSON object of strings): MCP
    /// `GetPromptResult` JSON, `{"description": ..., "messages": [...]}`. An unknown prompt or
    /// a missing required argument is an error of kind `InvalidArguments`.
    pub fn get_prompt(&self, name: &str, arguments: Value) -> Result<Value, ToolError> {
        answer(
            self.instance
                .get_prompt(name.into(), arguments.to_string().into()),
        )
    }

    /// The values the plugin completes `value` with, for the argument `argument` of the prompt
    /// `prompt`; none for an argument it does not complete.
    pub fn complete_prompt(
        &self,
        prompt: &str,
        argument: &str,
        value: &str,
    ) -> Result<Vec<String>, ToolError> {
        self.completed(
            json!({"type": "ref/prompt", "name": prompt}),
            argument,
            value,
        )
    }

    /// The values the plugin completes `value` with, for the variable `argument` of the
    /// resource template `uri_template`; none for a variable it does not complete.
    pub fn complete_resource(
        &self,
        uri_template: &str,
        argument: &str,
        value: &str,
    ) -> Result<Vec<String>, ToolError> {
        self.completed(
            json!({"type": "ref/resource", "uri": uri_template}),
            argument,
            value,
        )
    }

    fn completed(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
    ) -> Result<Vec<String>, ToolError> {
        let completion = self.complete(json!({
            "ref": reference,
            "argument": {"name": argument, "value": value},
        }))?;
        serde_json::from_value(completion["values"].clone())
            .map_err(|e| ToolError::new(format!("the completion's values are not strings: {e}")))
    }

    /// Completes an argument from MCP's `completion/complete` params (`ref`, `argument`, and
    /// `context.arguments` for the arguments already given): the result's `completion` JSON,
    /// `{"values": [...], "total": ..., "hasMore": ...}`.
    pub fn complete(&self, params: Value) -> Result<Value, ToolError> {
        answer(self.instance.complete(params.to_string().into()))
    }

    /// The toolsets a call sees when the test sets none: the plugin's own and its tools'.
    fn default_toolsets(&self) -> Vec<String> {
        let toolsets: BTreeSet<&str> = std::iter::once(self.own_toolset)
            .chain(self.tools.iter().map(|t| t.toolset.as_str()))
            .filter(|t| !t.is_empty())
            .collect();
        toolsets.into_iter().map(str::to_owned).collect()
    }
}

impl Drop for PluginTest {
    fn drop(&mut self) {
        self.instance.stop();
    }
}

/// What the tool `tool` answered, as the host takes it: a result it built must read as a
/// `CallToolResult`, or the host's error stands in its place.
fn output_of(output: &FfiOutput, tool: &str) -> Result<ToolOutput, ToolError> {
    if output.kind == OutputKind::Result {
        host_reading::check(tool, &output.json)?;
    }
    ToolOutput::from_ffi(output, tool)
}

/// What a read, a prompt or a completion answered, parsed.
fn answer(future: JsonFuture) -> Result<Value, ToolError> {
    let json = wait(future).into_result().map_err(ToolError::from_ffi)?;
    serde_json::from_str(&json)
        .map_err(|e| ToolError::new(format!("the plugin answered invalid JSON: {e}")))
}

/// Polls `future` to its end on this thread, parking it while the future waits: as a host
/// worker polls a plugin's future, with no tokio runtime of the caller's.
pub(crate) fn wait<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);

    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// What a tool answered, and what it sent through its context.
#[derive(Debug)]
pub struct Call {
    tool: String,
    outcome: Result<ToolOutput, ToolError>,
    /// Shared with the call's context, which a tool may keep and use after the call.
    record: Arc<Mutex<Record>>,
}

impl Call {
    /// The tool's answer: its value or the [`ToolResult`] it built; or its error, whose kind
    /// tells a tool error from invalid arguments or a panic. A [`ToolResult`] the host would
    /// not read as an MCP `CallToolResult` (built with [`ToolResult::from_json`], say) is an
    /// error of kind `Tool` whose message is the host's: the tool's name and serde's reason.
    ///
    /// ```
    /// use plugin_api::{ToolError, ToolResult, error::ErrorKind, json, plugin, testing::PluginTest};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Sloppy;
    ///
    /// #[plugin(name = "sloppy")]
    /// impl Sloppy {
    ///     /// A result whose content is not a list.
    ///     #[tool]
    ///     fn listless(&self) -> Result<ToolResult, ToolError> {
    ///         ToolResult::from_json(json!({"content": "not a list"}))
    ///     }
    /// }
    ///
    /// let call = PluginTest::new::<Sloppy>().call("listless", json!({}));
    /// assert_eq!(call.error().kind(), ErrorKind::Tool);
    /// assert_eq!(
    ///     call.error().message(),
    ///     "tool listless returned a result that is not a valid CallToolResult: \
    ///      invalid type: string \"not a list\", expected a sequence at line 1 column 23"
    /// );
    /// assert!(call.result().is_error());
    /// ```
    pub fn output(&self) -> Result<&ToolOutput, &ToolError> {
        self.outcome.as_ref()
    }

    /// The tool's value as JSON (a [`ToolResult`] it built as `CallToolResult` JSON).
    ///
    /// # Panics
    ///
    /// When the call failed, with its error.
    #[track_caller]
    pub fn value(&self) -> Value {
        self.succeeded().clone().into_json()
    }

    /// The text the client reads: a string the tool returned, other values as their JSON, the
    /// text blocks of a [`ToolResult`] it built joined by newlines.
    ///
    /// # Panics
    ///
    /// When the call failed, with its error.
    #[track_caller]
    pub fn text(&self) -> String {
        self.succeeded();
        text_of(&self.result())
    }

    /// The result as the host serves it (MCP `CallToolResult`): an object as structured
    /// content with its JSON as text, a string as text, a [`ToolResult`] as built (with
    /// `"content": []` if it has none), an error as an `isError` result holding its message.
    /// One difference is left: the host drops the fields MCP does not define from a result
    /// the tool built, where this keeps them.
    pub fn result(&self) -> ToolResult {
        match &self.outcome {
            Ok(ToolOutput::Value(object @ Value::Object(_))) => {
                ToolResult::structured(object.clone())
            }
            Ok(ToolOutput::Value(Value::String(text))) => ToolResult::text(text.clone()),
            Ok(ToolOutput::Value(other)) => ToolResult::text(other.to_string()),
            Ok(ToolOutput::Result(result)) => with_content(result),
            Err(error) => ToolResult::error(error.message()),
        }
    }

    /// The error the call failed with.
    ///
    /// # Panics
    ///
    /// When the call succeeded, with its answer.
    #[track_caller]
    pub fn error(&self) -> &ToolError {
        match &self.outcome {
            Err(error) => error,
            Ok(output) => panic!(
                "tool {} did not fail: it answered {}",
                self.tool,
                output.clone().into_json()
            ),
        }
    }

    /// The log messages the tool sent, in order, whatever their level.
    pub fn logs(&self) -> Vec<Log> {
        self.record().logs.clone()
    }

    /// The progress the tool reported, in order (the host sends it when the client asked for
    /// progress).
    pub fn progress(&self) -> Vec<Progress> {
        self.record().progress.clone()
    }

    /// The requests the tool sent to the client, in order, answered or not.
    pub fn requests(&self) -> Vec<ClientRequest> {
        self.record().requests.clone()
    }

    /// The `tracing` events and `log` records the tool made during the call, in order, whatever
    /// their level: what the host writes to its log, inside the call's span.
    ///
    /// ```
    /// use plugin_api::{json, plugin, testing::{PluginTest, TraceLevel}};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Counter;
    ///
    /// #[plugin(name = "counter")]
    /// impl Counter {
    ///     /// Count to `n`.
    ///     #[tool]
    ///     fn count(&self, n: u32) -> u32 {
    ///         tracing::info!(n, "counting");
    ///         n
    ///     }
    /// }
    ///
    /// let call = PluginTest::new::<Counter>().call("count", json!({"n": 3}));
    /// let event = &call.events()[0];
    /// assert_eq!((event.level, event.message.as_str()), (TraceLevel::Info, "counting"));
    /// assert_eq!(event.fields["n"], 3);
    /// ```
    pub fn events(&self) -> Vec<Event> {
        self.record().events.clone()
    }

    /// The URIs the tool said changed (`ctx.resource_updated(..)`), in order.
    pub fn resources_updated(&self) -> Vec<String> {
        self.record().updated.clone()
    }

    #[track_caller]
    fn succeeded(&self) -> &ToolOutput {
        match &self.outcome {
            Ok(output) => output,
            Err(error) => panic!(
                "tool {} failed ({:?}): {}",
                self.tool,
                error.kind(),
                error.message()
            ),
        }
    }

    fn record(&self) -> MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A result the tool built, with `"content": []` if it has none (or `null`), as the host reads
/// it.
fn with_content(result: &ToolResult) -> ToolResult {
    let mut json = result.to_json();
    if json["content"].is_null() {
        json["content"] = json!([]);
    }
    ToolResult::from_json(json).unwrap_or_else(|_| result.clone())
}

/// The text blocks of a `CallToolResult`, joined by newlines.
fn text_of(result: &ToolResult) -> String {
    let json = result.to_json();
    let blocks = json["content"].as_array().into_iter().flatten();
    let texts: Vec<&str> = blocks
        .filter(|block| block["type"] == "text")
        .filter_map(|block| block["text"].as_str())
        .collect();
    texts.join("\n")
}

/// A log message a tool sent (`ctx.log(..)`, `ctx.info(..)`, ...).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Log {
    /// Its level.
    pub level: LogLevel,
    /// The logger it was sent under: the plugin's name, or that of `ctx.with_logger(..)`.
    pub logger: Option<String>,
    /// Its data, as JSON.
    pub data: Value,
}

/// A `tracing` event or `log` record a tool made during its call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Event {
    /// Its level.
    pub level: TraceLevel,
    /// Its target (by default the module that made it).
    pub target: String,
    /// Its message.
    pub message: String,
    /// Its other fields (a `log` record's key-values).
    pub fields: Map<String, Value>,
}

/// The level of an [`Event`].
pub use crate::ffi::TraceLevel;

/// A progress report a tool made (`ctx.progress(..)`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// How far along.
    pub progress: f64,
    /// Out of how much, when known.
    pub total: Option<f64>,
    /// What it says.
    pub message: Option<String>,
}

/// A request a tool sent to the client (`ctx.sample(..)`, `ctx.elicit(..)`, `ctx.request(..)`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClientRequest {
    /// Its method, e.g. `sampling/createMessage`.
    pub method: String,
    /// Its params, as JSON.
    pub params: Value,
}

/// The test's client: its answers, capabilities, active toolsets, session and caller.
#[derive(Debug, Clone, Default)]
struct Client {
    /// What the client answers each method with; a later answer for a method wins.
    answers: Vec<(String, Value)>,
    capabilities: Option<Value>,
    toolsets: Option<Vec<String>>,
    session: Option<String>,
    /// The caller's name and scopes.
    caller: Option<(String, Vec<String>)>,
    /// The request's trace context, a JSON object.
    trace_context: Option<Value>,
    /// The plugin-abi version the host says it has; this crate's when `None`.
    host_abi: Option<String>,
}

impl Client {
    /// The client for one call, `default_toolsets` active unless the test set others.
    fn answering(&self, default_toolsets: Vec<String>) -> Self {
        Self {
            toolsets: Some(self.toolsets.clone().unwrap_or(default_toolsets)),
            ..self.clone()
        }
    }

    fn answer(&self, method: &str) -> Option<&Value> {
        self.answers
            .iter()
            .rev()
            .find(|(m, _)| m == method)
            .map(|(_, answer)| answer)
    }

    /// The capabilities set, or those the answers imply.
    fn capabilities(&self) -> Value {
        if let Some(capabilities) = &self.capabilities {
            return capabilities.clone();
        }
        let mut declared = Map::new();
        for (method, _) in &self.answers {
            if let Some(capability) = capability_of(method) {
                declared.insert(capability.to_owned(), json!({}));
            }
        }
        Value::Object(declared)
    }

    /// Why the client refuses to be sent `method`, as the host refuses it: capabilities the
    /// test set that leave out the method's. None when the test set none.
    fn refusal(&self, method: &str) -> Option<String> {
        let capabilities = self.capabilities.as_ref()?;
        let capability = capability_of(method)?;
        let declared = capabilities.get(capability).is_some_and(|c| !c.is_null());
        (!declared).then(|| {
            format!(
                "cannot send {method}: the client did not declare the `{capability}` capability"
            )
        })
    }
}

/// The client capability a request to the client needs, for the methods a tool may send.
fn capability_of(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// What a call's context recorded.
#[derive(Debug, Default)]
struct Record {
    logs: Vec<Log>,
    events: Vec<Event>,
    progress: Vec<Progress>,
    requests: Vec<ClientRequest>,
    updated: Vec<String>,
}

/// The host's side of a call's context, recording what the tool sends.
#[derive(Clone)]
struct Recorder {
    record: Arc<Mutex<Record>>,
    client: Arc<Client>,
}

impl Recorder {
    fn record(&self) -> MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// JSON text as a value; text that is not JSON as a string.
fn parsed(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or_else(|_| Value::from(json))
}

impl HostContext for Recorder {
    fn log(&self, level: u8, logger: ROption<RString>, data_json: RString) {
        self.record().logs.push(Log {
            level: LogLevel::from_u8(level),
            logger: logger.into_option().map(RString::into_string),
            data: parsed(&data_json),
        });
    }

    fn progress(&self, progress: f64, total: ROption<f64>, message: ROption<RString>) {
        self.record().progress.push(Progress {
            progress,
            total: total.into_option(),
            message: message.into_option().map(RString::into_string),
        });
    }

    fn request(
        &self,
        method: RStr<'_>,
        params_json: RString,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        let method = method.as_str();
        self.record().requests.push(ClientRequest {
            method: method.to_owned(),
            params: parsed(&params_json),
        });
        let answer = match (self.client.refusal(method), self.client.answer(method)) {
            (Some(refusal), _) => RResult::RErr(FfiError::new(ErrorKind::Tool, refusal)),
            (None, Some(answer)) => RResult::ROk(RString::from(answer.to_string())),
            (None, None) => RResult::RErr(FfiError::new(
                ErrorKind::Tool,
                format!(
                    "cannot send {method}: the test's client has no answer for it \
                     (give one with PluginTest::with_client_answer)"
                ),
            )),
        };
        async move { answer }.into_ffi()
    }

    fn active_toolsets(&self) -> RVec<RString> {
        let toolsets = self.client.toolsets.iter().flatten();
        toolsets.map(|t| RString::from(t.as_str())).collect()
    }

    fn client_capabilities(&self) -> RString {
        self.client.capabilities().to_string().into()
    }

    fn resource_updated(&self, uri: RString) {
        self.record().updated.push(uri.into_string());
    }

    fn session(&self) -> ROption<RString> {
        self.client.session.as_deref().map(RString::from).into()
    }

    fn caller_name(&self) -> ROption<RString> {
        self.client
            .caller
            .as_ref()
            .map(|(name, _)| RString::from(name.as_str()))
            .into()
    }

    fn caller_scopes(&self) -> RVec<RString> {
        self.client
            .caller
            .iter()
            .flat_map(|(_, scopes)| scopes.iter().map(|s| RString::from(s.as_str())))
            .collect()
    }

    fn abi_version(&self) -> RString {
        RString::from(
            self.client
                .host_abi
                .as_deref()
                .unwrap_or(plugin_abi::VERSION),
        )
    }

    fn trace_context(&self) -> ROption<RString> {
        let context = self.client.trace_context.as_ref();
        context.map(|c| RString::from(c.to_string())).into()
    }

    fn plugin_event(&self, event: FfiLogEvent<'_>) {
        self.record().events.push(Event {
            level: TraceLevel::from_u8(event.level),
            target: event.target.to_string(),
            message: event.message.to_string(),
            fields: serde_json::from_str(event.fields_json.as_str()).unwrap_or_default(),
        });
    }
}

/// How the host reads a result a tool built: as rmcp's `CallToolResult` (rmcp 3.11), which
/// plugin-api does not depend on, so its wire types are mirrored here field for field, in the
/// same order and under the same names. serde's messages name the types and the first field
/// at fault, so a result the host refuses is refused here in the same words; the parity test
/// (`tests/tests/parity.rs`) holds the two together, shape by shape.
#[expect(
    dead_code,
    reason = "the fields are read only to be checked, as the host reads them"
)]
mod host_reading {
    use serde::{Deserialize, Deserializer, de::Error};
    use serde_json::{Map, Number, Value};

    use crate::error::ToolError;

    /// Reads `json`, the result the tool `tool` built, as the host does; an invalid one is
    /// the error the host serves in its place.
    pub(super) fn check(tool: &str, json: &str) -> Result<(), ToolError> {
        serde_json::from_str::<CallToolResult>(json)
            .map(drop)
            .map_err(|e| {
                ToolError::new(format!(
                    "tool {tool} returned a result that is not a valid CallToolResult: {e}"
                ))
            })
    }

    /// `_meta`: any JSON object.
    type MetaObject = Map<String, Value>;

    /// What rmcp's `CallToolResult` checks after reading its [`Helper`].
    struct CallToolResult;

    impl<'de> Deserialize<'de> for CallToolResult {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let helper = Helper::deserialize(deserializer)?;
            if helper.result_type.is_some_and(|t| t != "complete") {
                return Err(D::Error::custom(
                    "CallToolResult requires resultType to be \"complete\" when present",
                ));
            }
            if helper.content.is_none()
                && helper.structured_content.is_none()
                && helper.is_error.is_none()
            {
                return Err(D::Error::custom(
                    "expected at least one known CallToolResult field \
                     (content, structuredContent, or isError)",
                ));
            }
            Ok(Self)
        }
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Helper {
        /// rmcp's `ResultType`, read as a string.
        #[serde(default)]
        result_type: Option<String>,
        content: Option<Vec<ContentBlock>>,
        /// Present, even as `null`.
        #[serde(default, deserialize_with = "present")]
        structured_content: Option<Value>,
        is_error: Option<bool>,
        #[serde(rename = "_meta")]
        meta: Option<MetaObject>,
    }

    fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
        Value::deserialize(deserializer).map(Some)
    }

    #[derive(Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum ContentBlock {
        Text(TextContent),
        Image(ImageContent),
        Audio(AudioContent),
        Resource(EmbeddedResource),
        ResourceLink(Resource),
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct TextContent {
        text: String,
        #[serde(rename = "_meta")]
        meta: Option<MetaObject>,
        annotations: Option<Annotations>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct ImageContent {
        data: String,
        mime_type: String,
        #[serde(rename = "_meta")]
        meta: Option<MetaObject>,
        annotations: Option<Annotations>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct AudioContent {
        data: String,
        mime_type: String,
        #[serde(rename = "_meta")]
        meta: Option<MetaObject>,
        annotations: Option<Annotations>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct EmbeddedResource {
        resource: ResourceContents,
        #[serde(rename = "_meta")]
        meta: Option<MetaObject>,
        annotations: Option<Annotations>,
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ResourceContents {
        #[serde(rename_all = "camelCase")]
        TextResourceContents {
            uri: String,
            mime_type: Option<String>,
            text: String,
            #[serde(rename = "_meta")]
            meta: Option<MetaObject>,
        },
        #[serde(rename_all = "camelCase")]
        BlobResourceContents {
            uri: String,
            mime_type: Option<String>,
            blob: String,
            #[serde(rename = "_meta")]
            meta: Option<MetaObject>,
        },
    }

    /// A resource link's fields.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Resource {
        uri: String,
        name: String,
        title: Option<String>,
        description: Option<String>,
        mime_type: Option<String>,
        size: Option<u64>,
        icons: Option<Vec<Icon>>,
        #[serde(rename = "_meta")]
        meta: Option<MetaObject>,
        annotations: Option<Annotations>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Icon {
        src: String,
        mime_type: Option<String>,
        sizes: Option<Vec<String>>,
        theme: Option<IconTheme>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum IconTheme {
        Light,
        Dark,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Annotations {
        audience: Option<Vec<Role>>,
        #[serde(default, deserialize_with = "priority")]
        priority: Option<f32>,
        #[serde(rename = "lastModified")]
        last_modified: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    enum Role {
        User,
        Assistant,
    }

    /// A priority, read as any JSON number, as rmcp reads it (also under serde_json's
    /// `arbitrary_precision`).
    fn priority<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f32>, D::Error> {
        let number = Option::<Number>::deserialize(deserializer)?;
        let wide = number
            .map(|n| {
                n.as_f64()
                    .ok_or_else(|| D::Error::custom(format_args!("number out of range: {n}")))
            })
            .transpose()?;
        // As rmcp narrows it.
        Ok(wide.map(|p| p as f32))
    }
}

#[cfg(test)]
mod tests {
    //! What a `#[plugin]` cannot be made to do: fail to build.

    use super::*;

    /// A plugin whose `Default` panics.
    struct Broken;

    impl PluginDefinition for Broken {
        const NAME: &'static str = "broken";
        const OWN_TOOLSET: &'static str = "broken";

        fn create() -> Self {
            panic!("no configuration")
        }

        fn tools(self: &Arc<Self>) -> Vec<Tool> {
            Vec::new()
        }
    }

    #[test]
    fn a_plugin_that_cannot_be_built_is_an_error() {
        let error = PluginTest::try_new::<Broken>().unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Panicked);
        assert_eq!(error.message(), "instantiate panicked: no configuration");
    }

    #[test]
    #[should_panic(
        expected = "plugin broken could not be built: instantiate panicked: no configuration"
    )]
    fn new_panics_with_the_error() {
        PluginTest::new::<Broken>();
    }
}
