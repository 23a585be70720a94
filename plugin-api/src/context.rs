//! The request context a tool may take: log to the client, report progress, notice
//! cancellation, ask the client for a completion (sampling) or for input (elicitation), and read
//! the request's active toolsets, session and caller.
//!
//! A `#[tool]` method gets it by declaring a parameter of type [`Context`] (or `&Context`); it is
//! not one of the tool's arguments. Code without such a parameter (a [`crate::Tool`] built at run
//! time, a [`crate::Wrapped`] handler) finds the context of the call it serves with
//! [`Context::current`]. Underneath is the host's [`HostContextBox`], handed over with each
//! call; this module adds the cancellation token the plugin side keeps for the call
//! (`runtime.rs` cancels it when the host stops waiting) and the thread-local slot that makes
//! [`Context::current`] (and so [`crate::Original::call`]) see the call: `runtime.rs` sets it
//! around each poll of an async tool and around the whole run of a sync one.

use std::{cell::RefCell, sync::Arc};

use abi_stable::std_types::{ROption, RStr, RString};
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use plugin_abi::LogLevel;
use plugin_abi::{HostContextBox, detached_host};

use crate::{
    error::{NotOffered, ToolError},
    inputs::{Answers, Inputs},
};

/// Who calls a tool, when the server authenticates its callers ([`Context::caller`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caller {
    /// The API key's name (its tenant) or the OAuth token's subject.
    pub name: String,
    /// The OAuth token's scopes; none for an API key.
    pub scopes: Vec<String>,
}

/// Whom the state a plugin keeps per client belongs to ([`Context::client_key`]).
///
/// | the client | its key |
/// | --- | --- |
/// | 2025-11-25 over a session | [`ClientKey::Session`], the MCP session |
/// | authenticated (API key, OAuth token), any protocol era, with or without a session | [`ClientKey::Session`] over a session, else [`ClientKey::Caller`] |
/// | 2026-07-28 (no sessions), or a `--stateless` server, without authentication | none: the server cannot tell such clients apart; have the client choose an id and pass it as an argument |
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ClientKey {
    /// The MCP session's id (2025-11-25 clients over a session). A session ends when its
    /// client goes; the plugin is not told, so keep such state bounded.
    Session(String),
    /// The authenticated caller's name (an API key's name, an OAuth token's subject): the same
    /// on every request of that caller, in both protocol eras and across its sessions.
    Caller(String),
}

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Session(id) => write!(f, "session {id}"),
            Self::Caller(name) => write!(f, "caller {name}"),
        }
    }
}

/// The W3C trace context of a request ([`Context::trace_context`]): the `traceparent` and
/// `tracestate` values as the client sent them (the host checked `traceparent`'s form).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceContext {
    /// `version-traceid-parentid-flags`, e.g.
    /// `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.
    pub traceparent: String,
    /// Vendor-specific trace state, when the request had some.
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// The trace id: the 32 hex digits of `traceparent` after its version.
    pub fn trace_id(&self) -> &str {
        self.traceparent.split('-').nth(1).unwrap_or_default()
    }

    /// The caller's span id: the 16 hex digits after the trace id.
    pub fn parent_id(&self) -> &str {
        self.traceparent.split('-').nth(2).unwrap_or_default()
    }
}

/// What a tool can do with the request it serves: log, report progress, notice cancellation,
/// ask the client, read the active toolsets, the session and the caller.
///
/// A `#[tool]` method takes it by declaring a parameter of type `Context` (or `&Context`); that
/// parameter is not one of the tool's arguments. It works the same in `fn` and `async fn` tools
/// (a synchronous tool that wants the client's answer can block on it with
/// `plugin_api::runtime::runtime().block_on(...)`, since it runs on a blocking thread; not an
/// `inline` one, which must never block). Cloning
/// is cheap; a clone moved into a spawned task still belongs to the call.
///
/// ```
/// use plugin_api::{Context, ToolError, json, plugin};
///
/// #[derive(Debug, Default)]
/// pub struct Chatty;
///
/// #[plugin(name = "chatty")]
/// impl Chatty {
///     /// Count to `n`, slowly, saying so; stop when the client cancels.
///     #[tool]
///     async fn count(&self, n: u32, ctx: Context) -> Result<String, ToolError> {
///         ctx.info(format!("counting to {n}"));
///         for i in 1..=n {
///             if ctx.is_cancelled() {
///                 return Err(ToolError::new("cancelled"));
///             }
///             ctx.progress(f64::from(i), Some(f64::from(n)), None);
///         }
///         Ok(format!("counted to {n}"))
///     }
///
///     /// Ask the client's model for a haiku.
///     #[tool]
///     async fn haiku(&self, ctx: Context) -> Result<String, ToolError> {
///         let answer = ctx
///             .sample(json!({
///                 "messages": [{"role": "user", "content": {"type": "text", "text": "A haiku"}}],
///                 "maxTokens": 60
///             }))
///             .await?;
///         Ok(answer["content"]["text"].as_str().unwrap_or_default().to_owned())
///     }
/// }
/// ```
#[derive(Clone)]
pub struct Context {
    host: HostContextBox,
    cancel: CancellationToken,
    logger: Arc<str>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("logger", &self.logger)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context over the host's services for one call; `logger` names the plugin in logs.
    pub(crate) fn new(host: HostContextBox, logger: Arc<str>) -> Self {
        Self {
            host,
            cancel: CancellationToken::new(),
            logger,
        }
    }

    /// A context with no client behind it: logs and progress go nowhere, requests fail. What
    /// [`Context::current`] falls back to outside a call.
    pub fn detached() -> Self {
        Self::new(detached_host(), Arc::from(""))
    }

    /// The context of the call this code is serving: the one set on the thread while the
    /// tool's future is polled (async tools) or while it runs (sync tools). `None` outside a
    /// call, for example in a task the tool spawned with `tokio::spawn` (move a clone of the
    /// context into it instead).
    pub fn current() -> Option<Self> {
        CURRENT_THREAD.with(|c| c.borrow().clone())
    }

    /// The same context, logging under another logger name (the plugin's name by default).
    pub fn with_logger(&self, logger: impl Into<String>) -> Self {
        Self {
            logger: Arc::from(logger.into()),
            ..self.clone()
        }
    }

    /// Sends a log message (`notifications/message`) with any JSON-serialisable `data`. The
    /// host drops it if it is below the level the client asked for (`logging/setLevel`).
    pub fn log(&self, level: LogLevel, data: impl Serialize) {
        let data = serde_json::to_string(&data)
            .unwrap_or_else(|e| Value::from(format!("unserialisable log data: {e}")).to_string());
        let logger = if self.logger.is_empty() {
            ROption::RNone
        } else {
            ROption::RSome(RString::from(&*self.logger))
        };
        self.host.log(level.to_u8(), logger, data.into());
    }

    /// Logs at `debug`.
    pub fn debug(&self, data: impl Serialize) {
        self.log(LogLevel::Debug, data);
    }

    /// Logs at `info`.
    pub fn info(&self, data: impl Serialize) {
        self.log(LogLevel::Info, data);
    }

    /// Logs at `notice`.
    pub fn notice(&self, data: impl Serialize) {
        self.log(LogLevel::Notice, data);
    }

    /// Logs at `warning`.
    pub fn warning(&self, data: impl Serialize) {
        self.log(LogLevel::Warning, data);
    }

    /// Logs at `error`.
    pub fn error(&self, data: impl Serialize) {
        self.log(LogLevel::Error, data);
    }

    /// Reports progress (`notifications/progress`): `progress` should grow with each report;
    /// `total` when known. Does nothing when the client did not ask for progress (sent no
    /// `progressToken`). Reports arrive in the order they are made.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.host
            .progress(progress, total.into(), message.map(RString::from).into());
    }

    /// Whether the call was cancelled (by the client, or because the request ended). A tool
    /// that sees it should stop soon: its work is aborted after a short grace period.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when the call is cancelled; `select!` it against the work.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Asks the client's model for a completion (`sampling/createMessage`): `params` are the
    /// request's params (`messages`, `maxTokens`, ...), the answer is the client's result
    /// (`role`, `content`, `model`, ...). Fails with a message naming the reason when the client
    /// did not declare `sampling` or the transport cannot carry requests to the client.
    pub async fn sample(&self, params: Value) -> Result<Value, ToolError> {
        self.request("sampling/createMessage", params).await
    }

    /// Asks the user for input through the client (`elicitation/create`): `params` are
    /// `message` and `requestedSchema`; the answer has `action` (`accept`, `decline`,
    /// `cancel`) and, when accepted, `content`. Fails like [`Context::sample`] when the client
    /// did not declare `elicitation`.
    pub async fn elicit(&self, params: Value) -> Result<Value, ToolError> {
        self.request("elicitation/create", params).await
    }

    /// Sends a request to the client (`sampling/createMessage`, `elicitation/create` or
    /// `roots/list`) and returns its result. Under 2026-07-28 it is an input of its own round,
    /// keyed by its method and its place among the call's requests (`elicitation-1`,
    /// `sampling-2`, ...); [`Context::ask`] names the keys and asks several in one round.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ToolError> {
        let answer = self
            .host
            .request(RStr::from(method), params.to_string().into())
            .await
            .into_result()
            .map_err(ToolError::from_ffi)?;
        serde_json::from_str(&answer).map_err(|e| {
            ToolError::new(format!("the client's answer to {method} is not JSON: {e}"))
        })
    }

    /// Asks the client for several inputs at once and returns its answers under their keys.
    /// Under 2025-11-25 each input is a request on the session; under 2026-07-28 they all go
    /// out in one input-required result, and the tool runs again, from the start, with the
    /// answers (see [`Inputs`] for the rule that follows). Fails like [`Context::sample`] when
    /// the client did not declare a capability an input needs.
    ///
    /// ```
    /// use plugin_api::{Context, Inputs, ToolError, json, plugin};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Greeter;
    ///
    /// #[plugin(name = "greeter")]
    /// impl Greeter {
    ///     /// Greet the user, by the name they give.
    ///     #[tool]
    ///     async fn greet(&self, ctx: Context) -> Result<String, ToolError> {
    ///         let answers = ctx
    ///             .ask(Inputs::new().elicit(
    ///                 "user_name",
    ///                 json!({
    ///                     "message": "What is your name?",
    ///                     "requestedSchema": {
    ///                         "type": "object",
    ///                         "properties": {"name": {"type": "string"}},
    ///                         "required": ["name"]
    ///                     }
    ///                 }),
    ///             ))
    ///             .await?;
    ///         Ok(match answers.accepted("user_name") {
    ///             Some(content) => format!("Hello, {}!", content["name"].as_str().unwrap_or("you")),
    ///             None => "Hello, stranger!".to_owned(),
    ///         })
    ///     }
    /// }
    /// ```
    pub async fn ask(&self, inputs: Inputs) -> Result<Answers, ToolError> {
        let answers = self
            .host
            .ask(inputs.to_json().into())
            .await
            .into_result()
            .map_err(ToolError::from_ffi)?;
        Answers::from_json(&answers)
    }

    /// For a tool marked `input_first` (with `task = ...`): the input is gathered, the long work
    /// starts here. For a client that declared the tasks extension, the host answers the call
    /// with a task, and runs the tool again from the start as that task: every `ask` it made is
    /// answered at once from what was gathered, and this returns at once. For any other call it
    /// returns at once, and the tool goes on as a plain call.
    ///
    /// ```
    /// use plugin_api::{Context, Inputs, ToolError, json, plugin};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Deployer;
    ///
    /// #[plugin(name = "deployer")]
    /// impl Deployer {
    ///     /// Deploy, once the user confirmed.
    ///     #[tool(task = "required", input_first)]
    ///     async fn deploy(&self, ctx: Context) -> Result<String, ToolError> {
    ///         let confirm = json!({
    ///             "message": "Deploy now?",
    ///             "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    ///         });
    ///         let answers = ctx.ask(Inputs::new().elicit("confirm", confirm)).await?;
    ///         if answers.accepted("confirm").is_none() {
    ///             return Ok("not deployed".to_owned());
    ///         }
    ///         ctx.run_as_task().await;
    ///         Ok("deployed".to_owned())
    ///     }
    /// }
    /// ```
    pub async fn run_as_task(&self) {
        self.host.run_as_task().await;
    }

    /// Turns one of this plugin's tools off (`false`) or on again (`true`), for every session:
    /// an off tool is neither listed nor callable, and the sessions whose lists changed get
    /// `notifications/tools/list_changed` (2026-07-28 clients on `subscriptions/listen`).
    /// Returns at once; a name this plugin does not serve is refused in the host's log.
    pub fn set_tool_available(&self, name: &str, available: bool) {
        self.host
            .set_available(RStr::from("tool"), RStr::from(name), available);
    }

    /// Turns one of this plugin's prompts off or on again, as
    /// [`Context::set_tool_available`] does a tool (`notifications/prompts/list_changed`).
    pub fn set_prompt_available(&self, name: &str, available: bool) {
        self.host
            .set_available(RStr::from("prompt"), RStr::from(name), available);
    }

    /// Turns one of this plugin's static resources (by URI) off or on again, as
    /// [`Context::set_tool_available`] does a tool: an off resource is neither listed, read nor
    /// subscribed to (`notifications/resources/list_changed`).
    pub fn set_resource_available(&self, uri: &str, available: bool) {
        self.host
            .set_available(RStr::from("resource"), RStr::from(uri), available);
    }

    /// Turns one of this plugin's resource templates (by URI template) off or on again, as
    /// [`Context::set_tool_available`] does a tool: an off template is neither listed, read
    /// through, subscribed to nor completed (`notifications/resources/list_changed`).
    pub fn set_resource_template_available(&self, uri_template: &str, available: bool) {
        self.host.set_available(
            RStr::from("resource_template"),
            RStr::from(uri_template),
            available,
        );
    }

    /// The toolsets active for this request (the URL's selection), sorted.
    pub fn active_toolsets(&self) -> Vec<String> {
        self.host
            .active_toolsets()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// The MCP session this call belongs to (the id the server gave the client at
    /// `initialize`), or `None` for a request outside a session: on a `--stateless` server, in
    /// a [`Context::detached`] one, or on a host older than this method. A plugin that keeps
    /// state per client keys it by this, so one client never sees another's.
    ///
    /// ```
    /// use std::{collections::HashMap, sync::Mutex};
    ///
    /// use plugin_api::{Context, plugin};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Notes(Mutex<HashMap<Option<String>, Vec<String>>>);
    ///
    /// #[plugin(name = "notes")]
    /// impl Notes {
    ///     /// Keep a note for this session; answer how many it has.
    ///     #[tool]
    ///     fn note(&self, text: String, ctx: &Context) -> usize {
    ///         let mut notes = self.0.lock().unwrap();
    ///         let mine = notes.entry(ctx.session_id()).or_default();
    ///         mine.push(text);
    ///         mine.len()
    ///     }
    /// }
    /// ```
    pub fn session_id(&self) -> Option<String> {
        self.host.session().into_option().map(RString::into_string)
    }

    /// Who calls, when the server authenticates its callers (API keys, OAuth access tokens):
    /// their name and scopes. `None` without authentication (a loopback server, stdio), in a
    /// [`Context::detached`] one, or on a host older than this method. A plugin can decide per
    /// user with it; the host has already bounded the caller to its toolsets.
    ///
    /// ```
    /// use plugin_api::{Context, plugin};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Greeter;
    ///
    /// #[plugin(name = "greeter")]
    /// impl Greeter {
    ///     /// Greet the caller by name.
    ///     #[tool]
    ///     fn hello(&self, ctx: &Context) -> String {
    ///         match ctx.caller() {
    ///             Some(caller) => format!("hello, {}", caller.name),
    ///             None => "hello, whoever you are".to_owned(),
    ///         }
    ///     }
    /// }
    /// ```
    pub fn caller(&self) -> Option<Caller> {
        let name = self.host.caller_name().into_option()?.into_string();
        let scopes = self
            .host
            .caller_scopes()
            .into_iter()
            .map(String::from)
            .collect();
        Some(Caller { name, scopes })
    }

    /// The key to keep per-client state under: the MCP session when the request has one, else
    /// the authenticated caller, else `None` ([`ClientKey`] says which clients have which).
    ///
    /// A 2026-07-28 client has no session: without authentication, two such clients look the
    /// same to the server, so state keyed by [`Context::session_id`] alone would be shared
    /// between them. Where `None` is possible, take a client-chosen id as a tool argument too.
    ///
    /// ```
    /// use std::{collections::HashMap, sync::Mutex};
    ///
    /// use plugin_api::{ClientKey, Context, plugin};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Notes(Mutex<HashMap<(Option<ClientKey>, Option<String>), Vec<String>>>);
    ///
    /// #[plugin(name = "notes")]
    /// impl Notes {
    ///     /// Keep a note for this client; answer how many it has.
    ///     #[tool]
    ///     fn note(
    ///         &self,
    ///         text: String,
    ///         /// Any name of your choice, the same on every call, to keep your notes apart
    ///         /// where the server cannot tell clients apart.
    ///         space: Option<String>,
    ///         ctx: &Context,
    ///     ) -> usize {
    ///         let mut notes = self.0.lock().unwrap();
    ///         let mine = notes.entry((ctx.client_key(), space)).or_default();
    ///         mine.push(text);
    ///         mine.len()
    ///     }
    /// }
    /// ```
    pub fn client_key(&self) -> Option<ClientKey> {
        self.session_id()
            .map(ClientKey::Session)
            .or_else(|| self.caller().map(|caller| ClientKey::Caller(caller.name)))
    }

    /// The capabilities the client declared (`sampling`, `elicitation`, `roots`, ...), as a
    /// JSON object; `{}` when unknown.
    pub fn client_capabilities(&self) -> Value {
        serde_json::from_str(&self.host.client_capabilities())
            .unwrap_or_else(|_| Value::Object(Default::default()))
    }

    /// Says that the resource `uri`, one this plugin serves, changed: every session subscribed
    /// to it (`resources/subscribe`) gets `notifications/resources/updated` and can read it
    /// again, whatever URL it connected with. Returns at once; works in a clone kept after the
    /// call, and does nothing in a [`Context::detached`] one.
    ///
    /// ```
    /// use std::sync::Mutex;
    ///
    /// use plugin_api::{Context, plugin};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Notes(Mutex<String>);
    ///
    /// #[plugin(name = "notes")]
    /// impl Notes {
    ///     /// The note.
    ///     #[resource(uri = "notes://note")]
    ///     fn note(&self) -> String {
    ///         self.0.lock().unwrap().clone()
    ///     }
    ///
    ///     /// Replace the note.
    ///     #[tool]
    ///     fn write(&self, text: String, ctx: Context) {
    ///         *self.0.lock().unwrap() = text;
    ///         ctx.resource_updated("notes://note");
    ///     }
    /// }
    /// ```
    pub fn resource_updated(&self, uri: impl Into<String>) {
        self.host.resource_updated(RString::from(uri.into()));
    }

    /// The version of `plugin-abi` the host serving this call was built with; `0.2.0` for a
    /// host too old to say (the first of its line). A newer host may offer more than this
    /// plugin knows of; an older one lacks the services added after its version, which
    /// answer [`NotOffered`].
    pub fn host_abi(&self) -> String {
        self.host.abi_version().into_string()
    }

    /// Whether the host offers a service that came with plugin-abi `since`, named `service`
    /// in the error when it does not.
    fn offers(&self, service: &'static str, since: &'static str) -> Result<(), NotOffered> {
        let host = self.host_abi();
        let known = |v: &str| plugin_abi::load::parse_version(v).unwrap_or_default();
        if known(&host) >= known(since) {
            Ok(())
        } else {
            Err(NotOffered {
                service,
                since,
                host,
            })
        }
    }

    /// The W3C trace context the request came with (its `params._meta`, else its HTTP
    /// headers), so the plugin can trace its own work under the caller's trace: `Ok(None)`
    /// when the request carried none, [`NotOffered`] from a host older than plugin-abi 0.2.1.
    ///
    /// ```
    /// use plugin_api::{Context, ToolError, plugin};
    ///
    /// #[derive(Debug, Default)]
    /// pub struct Traced;
    ///
    /// #[plugin(name = "traced")]
    /// impl Traced {
    ///     /// The trace this call belongs to.
    ///     #[tool]
    ///     fn trace_id(&self, ctx: &Context) -> Result<Option<String>, ToolError> {
    ///         Ok(ctx.trace_context()?.map(|t| t.trace_id().to_owned()))
    ///     }
    /// }
    /// ```
    pub fn trace_context(&self) -> Result<Option<TraceContext>, NotOffered> {
        self.offers("trace_context", "0.2.1")?;
        let Some(json) = self.host.trace_context().into_option() else {
            return Ok(None);
        };
        let fields: serde_json::Map<String, Value> =
            serde_json::from_str(&json).unwrap_or_default();
        let text = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(text("traceparent").map(|traceparent| TraceContext {
            traceparent,
            tracestate: text("tracestate"),
        }))
    }

    /// The host's side, to hand on to another tool (what [`crate::Original`] does).
    pub(crate) fn host(&self) -> &HostContextBox {
        &self.host
    }

    /// The token `runtime.rs` cancels when the host stops waiting for the call.
    pub(crate) fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Makes this context [`Context::current`] on this thread (for a sync tool's run, or one
    /// poll of an async tool) until the guard is dropped.
    pub(crate) fn enter(self) -> Entered {
        Entered(CURRENT_THREAD.with(|c| c.replace(Some(self))))
    }
}

thread_local! {
    static CURRENT_THREAD: RefCell<Option<Context>> = const { RefCell::new(None) };
}

/// Restores the thread's previous context when dropped.
pub(crate) struct Entered(Option<Context>);

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT_THREAD.with(|c| *c.borrow_mut() = previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::runtime;

    #[test]
    fn levels_keep_mcps_order_and_names() {
        for (n, level) in LogLevel::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(level.to_u8()), n);
            assert_eq!(LogLevel::from_u8(level.to_u8()), level);
            assert_eq!(LogLevel::from_name(level.as_str()), Some(level));
        }
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Alert < LogLevel::Emergency);
        assert_eq!(LogLevel::from_u8(200), LogLevel::Emergency);
        assert_eq!(LogLevel::from_name("verbose"), None);
    }

    #[test]
    fn a_detached_context_refuses_requests_by_name() {
        let ctx = Context::detached();
        ctx.info("goes nowhere");
        ctx.progress(1.0, None, None);
        ctx.resource_updated("library://note");
        let error = runtime().block_on(ctx.sample(Value::Null)).unwrap_err();
        assert_eq!(
            error.message(),
            "cannot send sampling/createMessage: this call has no client behind it"
        );
        assert!(ctx.active_toolsets().is_empty());
        assert_eq!(ctx.client_capabilities(), serde_json::json!({}));
        assert_eq!(ctx.session_id(), None);
        assert_eq!(ctx.caller(), None);
    }

    #[test]
    fn current_is_the_entered_context() {
        assert!(Context::current().is_none());
        let ctx = Context::detached().with_logger("outer");
        {
            let _entered = ctx.clone().enter();
            assert_eq!(&*Context::current().unwrap().logger, "outer");
            {
                let _inner = ctx.with_logger("inner").enter();
                assert_eq!(&*Context::current().unwrap().logger, "inner");
            }
            assert_eq!(&*Context::current().unwrap().logger, "outer");
        }
        assert!(Context::current().is_none());
    }

    #[test]
    fn cancelling_the_token_is_seen_by_every_clone() {
        let ctx = Context::detached();
        let clone = ctx.clone();
        assert!(!clone.is_cancelled());
        ctx.cancellation().cancel();
        assert!(clone.is_cancelled());
        runtime().block_on(clone.cancelled());
    }
}
