//! What crosses the boundary between the host and a plugin library, all `StableAbi`.
//!
//! A plugin library exports one root module, [`PluginMod`]: its manifest and a constructor. The
//! constructor returns a [`PluginInstance`] object, which lists the plugin's tools, each with a
//! [`ToolHandler`] object, and reads its resources, gets its prompts and completes their
//! arguments. JSON crosses as `RString`; futures as `async_ffi::FfiFuture`, so the
//! plugin's own async runtime never meets the host's. Handlers are `#[sabi_trait]` objects, so a
//! handler from one plugin can be passed to another. Each call carries a [`HostContext`]: the
//! host's services for that one request (log, progress, requests to the client, resource
//! updates), which the plugin calls from its own threads, so the host implements them without
//! its reactor (channels only). Errors cross as [`FfiError`], a kind and a message. The
//! plugin's own `tracing` events and `log` records cross as [`FfiLogEvent`]s: during a call
//! through its context ([`HostContext::plugin_event`]), otherwise through the [`LogSink`] the
//! host hands the library before instantiating it ([`PluginMod::log_to`]).
//!
//! This crate's version is the ABI's version ([`VERSION`]): a plugin's manifest records it, and
//! a host opens a library of the same ABI line (`plugin_manifest::abi_compatible`: `0.2.x` for
//! a host of `0.2.y`, older or newer), checking its layout in the direction its version calls for
//! ([`root_module`]). Authors never use this crate directly: `plugin-api`'s `#[plugin]`
//! attribute produces these objects and `plugin_api::Context` wraps the host's.
//!
//! # How the ABI grows
//!
//! Every object that crosses is a prefix type: the root module, and the vtables of
//! [`PluginInstance`], [`ToolHandler`], [`HostContext`] and [`LogSink`]. A release of the line
//! adds to them only at the end, each addition a method with a default body (in the root
//! module, a field the host reads as optional), and names the version that added it; nothing
//! is removed, reordered or retyped. Then either side may be the newer:
//!
//! - a host newer than a plugin calls the plugin's new methods through abi_stable's accessors,
//!   which find them absent in an older vtable and run the default body; the plugin never
//!   looks at the host's methods it does not know;
//! - a plugin newer than its host finds the host's table shorter, and each service the host
//!   lacks answers its documented default. [`HostContext::abi_version`] says which services
//!   are there, and `plugin_api::Context` answers "this host does not offer X" for those that
//!   are not.
//!
//! abi_stable's own check at load takes the host for the older side, so [`root_module`]
//! checks the older side against the newer instead (see [`load`]).
//!
//! Host services are typed methods appended to [`HostContext`], rather than one generic call
//! keyed by name with JSON in and out: a typed method is checked by abi_stable at load (its
//! argument types are part of the layout), costs one indirect call and a length check (no
//! encoding), and its absence is known from the host's version rather than from a failed call.
//! A name-keyed call would let a host add services without a new release of this crate, but
//! every call would pay for a JSON round trip and a string lookup, and a typo in a name would
//! surface only when called.

// `#[sabi_trait]` expands to impls inside generated modules, and to undocumented items.
#![allow(non_local_definitions, missing_docs)]

use abi_stable::{
    StableAbi, declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_trait::TD_Opaque,
    sabi_types::VersionStrings,
    std_types::{RArc, ROption, RResult, RStr, RString, RVec},
};
use async_ffi::{FfiFuture, FutureExt};

pub mod load;

pub use load::{OpenError, line_name, root_module};

/// The version of this crate, the ABI's: written into every manifest, compared by the host
/// before it opens a library.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The root module every plugin library exports.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginModRef)))]
#[sabi(missing_field(panic))]
pub struct PluginMod {
    /// The manifest JSON the library carries in its link section.
    pub manifest: extern "C" fn() -> RStr<'static>,
    /// Builds the plugin's state. Called once per process; panics come back as errors.
    #[sabi(last_prefix_field)]
    pub instantiate: extern "C" fn() -> RResult<PluginInstanceBox, FfiError>,
    /// Hands the library the host's [`LogSink`], before `instantiate`: the plugin's `tracing`
    /// events and `log` records from outside any call go there, those of a call through its
    /// [`HostContext::plugin_event`], and none below the sink's [`LogSink::max_level`] is even
    /// formatted. Added in 0.2.1: `None` in an older library, which the host then does not
    /// hand one.
    #[sabi(missing_field(option))]
    pub log_to: extern "C" fn(sink: LogSinkBox),
}

impl RootModule for PluginModRef {
    declare_root_module_statics! {PluginModRef}
    const BASE_NAME: &'static str = "reactor_mcp_plugin";
    const NAME: &'static str = "reactor_mcp_plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// A live plugin.
#[sabi_trait]
pub trait PluginInstance: Send + Sync {
    /// Every tool the plugin serves: those of its manifest in order, then dynamic ones.
    fn tools(&self) -> RResult<RVec<FfiTool>, FfiError>;

    /// Tells the plugin that the host is shutting down.
    fn stop(&self);

    /// Applies the plugin's extension number `extension` (its index in the manifest's
    /// `extends`) to `original`, the handler of the tool it targets; returns the new handler.
    fn wrap(&self, extension: u32, original: ToolHandlerBox) -> RResult<ToolHandlerBox, FfiError>;

    /// The resources, resource templates, prompts and completions the code serves, as a JSON
    /// object with those four lists (`resources`, `resource_templates`, `prompts`,
    /// `completions`), each as the manifest writes it. The host compares them with the
    /// manifest at activation.
    fn contributions(&self) -> RResult<RString, FfiError>;

    /// Reads `uri`: one of the plugin's static resources, else the first of its templates
    /// `uri` fits. Resolves to MCP `ReadResourceResult` JSON; an error of kind `NotFound`
    /// when the plugin has no such resource.
    fn read_resource(&self, uri: RString) -> FfiFuture<RResult<RString, FfiError>>;

    /// Gets the prompt `name` with `arguments_json` (a JSON object of strings). Resolves to MCP
    /// `GetPromptResult` JSON; an `InvalidArguments` error when the prompt is unknown or a
    /// required argument is missing.
    fn get_prompt(
        &self,
        name: RString,
        arguments_json: RString,
    ) -> FfiFuture<RResult<RString, FfiError>>;

    /// Completes an argument: `request_json` is MCP's `completion/complete` params (`ref`,
    /// `argument`, `context`). Resolves to the result's `completion` JSON (`values`, `total`,
    /// `hasMore`); no values when the plugin does not complete that argument.
    #[sabi(last_prefix_field)]
    fn complete(&self, request_json: RString) -> FfiFuture<RResult<RString, FfiError>>;

    /// [`PluginInstance::get_prompt`] for a request whose `context` the prompt's code may use
    /// (to ask the client for input, to log). Appended after `complete`: on a library without
    /// it, the default gets the prompt without the context.
    fn get_prompt_in(
        &self,
        name: RString,
        arguments_json: RString,
        context: HostContextBox,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        drop(context);
        self.get_prompt(name, arguments_json)
    }

    /// [`PluginInstance::read_resource`] for a request whose `context` the resource's code may
    /// use. Appended after `get_prompt_in`: on a library without it, the default reads the
    /// resource without the context.
    fn read_resource_in(
        &self,
        uri: RString,
        context: HostContextBox,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        drop(context);
        self.read_resource(uri)
    }

    /// Tells the plugin the host will never call this library again (hot reload replaced or
    /// removed it, and its last call ended): it ends its threads. Called after `stop`.
    /// Appended after `read_resource_in`: on a library without it, the default does nothing.
    fn retire(&self) {}
}

/// A plugin instance behind the ABI.
pub type PluginInstanceBox = PluginInstance_TO<'static, RArc<()>>;

/// Something that answers a tool call.
#[sabi_trait]
pub trait ToolHandler: Send + Sync {
    /// Calls the tool with its arguments as a JSON object and the context of the request it
    /// serves; resolves to the tool's output.
    ///
    /// Dropping the future cancels the call: the plugin's `plugin_api::Context` reports the
    /// cancellation at once, and the work is aborted after a short grace period.
    #[sabi(last_prefix_field)]
    fn call(
        &self,
        arguments: RString,
        context: HostContextBox,
    ) -> FfiFuture<RResult<FfiOutput, FfiError>>;
}

/// A tool handler behind the ABI; cloning shares it.
pub type ToolHandlerBox = ToolHandler_TO<'static, RArc<()>>;

/// A new ABI object answering with `handler`, which stays shared: what is handed to an
/// extension's wrap, since a `ToolHandlerBox` cannot be cloned and the original stays where it
/// is. A call passes the caller's context on, so the wrapped tool talks to the same client.
pub fn share_handler(handler: &std::sync::Arc<ToolHandlerBox>) -> ToolHandlerBox {
    ToolHandlerBox::from_ptr(RArc::new(Shared(std::sync::Arc::clone(handler))), TD_Opaque)
}

struct Shared(std::sync::Arc<ToolHandlerBox>);

impl ToolHandler for Shared {
    fn call(
        &self,
        arguments: RString,
        context: HostContextBox,
    ) -> FfiFuture<RResult<FfiOutput, FfiError>> {
        self.0.call(arguments, context)
    }
}

/// What a tool answered.
#[repr(C)]
#[derive(Debug, Clone, PartialEq, Eq, StableAbi)]
pub struct FfiOutput {
    /// How to read `json`.
    pub kind: OutputKind,
    /// The answer, as JSON text.
    pub json: RString,
}

/// How the host reads a tool's [`FfiOutput`].
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, StableAbi)]
pub enum OutputKind {
    /// The tool's value (any JSON): the host makes the MCP result (an object as structured
    /// content, a string as text, anything else as its JSON text).
    Value,
    /// A complete MCP `CallToolResult` the plugin built (`plugin_api::ToolResult`); the host
    /// checks it and serves it as it is.
    Result,
}

/// The host's services for one tool call, handed to the plugin with the call.
///
/// The plugin calls these from its own threads: the host implements them with reactor-free
/// primitives (channels), and `request`'s future is one the plugin can poll anywhere. Every
/// method returns at once; none may panic.
#[sabi_trait]
pub trait HostContext: Clone + Send + Sync {
    /// Sends a log message (`notifications/message`) if the client's level lets it through.
    /// `level` is the RFC 5424 severity in MCP's order, 0 = debug ... 7 = emergency;
    /// `data_json` is any JSON value.
    fn log(&self, level: u8, logger: ROption<RString>, data_json: RString);

    /// Reports progress (`notifications/progress`) if the client asked for it (sent a
    /// `progressToken`); otherwise does nothing.
    fn progress(&self, progress: f64, total: ROption<f64>, message: ROption<RString>);

    /// Sends a request to the client (`sampling/createMessage`, `elicitation/create`,
    /// `roots/list`) with these params (a JSON object) and resolves to its result as JSON.
    /// Fails at once, with a message naming the reason, when the client did not declare the
    /// capability or the transport cannot carry requests to the client.
    fn request(
        &self,
        method: RStr<'_>,
        params_json: RString,
    ) -> FfiFuture<RResult<RString, FfiError>>;

    /// The toolsets active for this request, sorted.
    fn active_toolsets(&self) -> RVec<RString>;

    /// The capabilities the client declared, as a JSON object (`{}` if unknown).
    fn client_capabilities(&self) -> RString;

    /// Says that the resource `uri` changed: the host sends `notifications/resources/updated`
    /// to every session subscribed to it (`resources/subscribe`), whichever request this
    /// context came with. Returns at once; the sending happens on the host's side. Added
    /// after the first release: on a host without it, the default does nothing.
    // `last_prefix_field` stays here for good: methods appended below are optional in the
    // vtable (abi_stable calls their default body when the other side's vtable lacks them),
    // while moving the attribute changes the prefix's length, which abi_stable's layout check
    // refuses (`MismatchedPrefixSize`) for every library built before the move.
    #[sabi(last_prefix_field)]
    fn resource_updated(&self, uri: RString) {
        drop(uri);
    }

    /// The MCP session the call belongs to (the `mcp-session-id` of its request), or none for
    /// a request outside a session (a `--stateless` server). Appended after
    /// `resource_updated`: on a host without it, the default answers none.
    fn session(&self) -> ROption<RString> {
        ROption::RNone
    }

    /// The name of the authenticated caller (an API key's name, an OAuth token's subject), or
    /// none when the server does not authenticate (loopback, stdio). Appended after `session`:
    /// on a host without it, the default answers none.
    fn caller_name(&self) -> ROption<RString> {
        ROption::RNone
    }

    /// The authenticated caller's OAuth scopes (none for an API key, or without
    /// authentication). Appended after `caller_name`: on a host without it, none.
    fn caller_scopes(&self) -> RVec<RString> {
        RVec::new()
    }

    /// Asks the client for several inputs at once: `requests_json` is a JSON object of keyed
    /// requests, each `{"method": ..., "params": ...}` (`sampling/createMessage`,
    /// `elicitation/create`, `roots/list`); resolves to a JSON object of the client's results
    /// under the same keys. Under 2026-07-28 the keys are those of the input-required result,
    /// and all the requests go out in one round. Appended after `caller_scopes`: on a host
    /// without it, the default sends each request through `request`.
    fn ask(&self, requests_json: RString) -> FfiFuture<RResult<RString, FfiError>> {
        let requests = match keyed_requests(&requests_json) {
            Ok(requests) => requests,
            Err(message) => {
                let error = FfiError::new(ErrorKind::Tool, message);
                return async move { RResult::RErr(error) }.into_ffi();
            }
        };
        let sent: Vec<_> = requests
            .into_iter()
            .map(|(key, method, params)| {
                let answer = self.request(RStr::from(method.as_str()), params.into());
                (key, answer)
            })
            .collect();
        async move {
            let mut answers = serde_json::Map::new();
            for (key, answer) in sent {
                match answer.await {
                    RResult::ROk(answer) => {
                        answers.insert(key, serde_json::from_str(&answer).unwrap_or_default());
                    }
                    RResult::RErr(error) => return RResult::RErr(error),
                }
            }
            RResult::ROk(serde_json::Value::Object(answers).to_string().into())
        }
        .into_ffi()
    }

    /// For a call of an `input_first` task tool that has gathered its input: from here on the
    /// call is a task. The host answers the client with the task and runs the tool again, from
    /// the start, as that task (with the answers gathered so far); this call's future is
    /// dropped. Resolves at once when the call is not such a call (already a task, a client
    /// without the extension). Appended after `ask`: on a host without it, the default
    /// resolves at once.
    fn run_as_task(&self) -> FfiFuture<()> {
        async {}.into_ffi()
    }

    /// Turns the calling plugin's own tool or prompt (`kind` is `tool` or `prompt`) `name` on
    /// or off, for every session: the host lists and serves it, or not, and tells the sessions
    /// whose lists changed. Returns at once. Appended after `run_as_task`: on a host without
    /// it, the default does nothing.
    fn set_available(&self, kind: RStr<'_>, name: RStr<'_>, available: bool) {
        let _ = (kind, name, available);
    }

    /// The version of `plugin-abi` the host was built with, which says what else this table
    /// offers (each method below names the version that added it). Appended in 0.2.1: a host
    /// without it is of 0.2.0, what the default answers.
    fn abi_version(&self) -> RString {
        RString::from(FIRST_VERSION)
    }

    /// The W3C trace context the request came with, as a JSON object of strings
    /// (`traceparent`, and `tracestate` when there is one): from the request's
    /// `params._meta`, else from its HTTP headers. None when it came without one. Appended in
    /// 0.2.1: on a host without it, the default answers none.
    fn trace_context(&self) -> ROption<RString> {
        ROption::RNone
    }

    /// Writes one of the plugin's `tracing` events (or `log` records) made during this call to
    /// the host's log, inside the call's span. Appended in 0.2.1: on a host without it, the
    /// default drops it (such a host hands no [`LogSink`], so the plugin makes none).
    fn plugin_event(&self, event: FfiLogEvent<'_>) {
        let _ = event;
    }
}

/// One `tracing` event or `log` record of a plugin, as it crosses to the host's log.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, StableAbi)]
pub struct FfiLogEvent<'a> {
    /// The name of the plugin that made it.
    pub plugin: RStr<'a>,
    /// Its level, numbered as [`TraceLevel`] (1 = error ... 5 = trace).
    pub level: u8,
    /// Its target in the plugin (by default the module that made it).
    pub target: RStr<'a>,
    /// Its message, formatted.
    pub message: RStr<'a>,
    /// Its other fields, as a JSON object.
    pub fields_json: RStr<'a>,
}

/// Where a plugin's `tracing` events and `log` records from outside any call go (those of
/// `instantiate`, of its background threads): the host's log, under the plugin's name, which
/// the host knows. The host hands one to the library once, through [`PluginMod::log_to`].
/// Added in 0.2.1; methods are appended below `event`, each with a default body.
#[sabi_trait]
pub trait LogSink: Send + Sync {
    /// The most verbose level the host's log keeps, numbered as [`TraceLevel`] (0 when it
    /// keeps none): the plugin drops what is below it before formatting anything.
    fn max_level(&self) -> u8;

    /// Writes `event` to the host's log (its `plugin` is ignored: the sink knows whose it is).
    #[sabi(last_prefix_field)]
    fn event(&self, event: FfiLogEvent<'_>);
}

/// A log sink behind the ABI.
pub type LogSinkBox = LogSink_TO<'static, RArc<()>>;

/// The levels of `tracing` (and `log`) as [`FfiLogEvent::level`] and [`LogSink::max_level`]
/// number them, the `log` crate's numbers; 0 is off.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TraceLevel {
    /// Nothing is kept.
    Off = 0,
    /// Errors.
    Error = 1,
    /// Warnings.
    Warn = 2,
    /// Information.
    Info = 3,
    /// Debugging.
    Debug = 4,
    /// Tracing, the most verbose.
    Trace = 5,
}

impl TraceLevel {
    /// The level numbered `n`; above 5 is `Trace`.
    pub fn from_u8(n: u8) -> Self {
        match n {
            0 => Self::Off,
            1 => Self::Error,
            2 => Self::Warn,
            3 => Self::Info,
            4 => Self::Debug,
            _ => Self::Trace,
        }
    }
}

/// The first version of this ABI line: what a host that cannot say its version is.
pub const FIRST_VERSION: &str = "0.2.0";

/// The keyed requests of [`HostContext::ask`]'s JSON (`{key: {"method": ..., "params": ...}}`)
/// as (key, method, params JSON), or why they do not read.
pub fn keyed_requests(json: &str) -> Result<Vec<(String, String, String)>, String> {
    let requests: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json)
        .map_err(|e| format!("the requests to ask are not a JSON object: {e}"))?;
    Ok(requests
        .into_iter()
        .map(|(key, request)| {
            let method = request["method"].as_str().unwrap_or_default().to_owned();
            let params = request.get("params").cloned().unwrap_or_default();
            (key, method, params.to_string())
        })
        .collect())
}

/// A host context behind the ABI; cloning shares it.
pub type HostContextBox = HostContext_TO<'static, RArc<()>>;

/// One tool: its full description as JSON (a `ToolDecl` with `input_schema`) and its handler.
#[repr(C)]
#[derive(StableAbi)]
pub struct FfiTool {
    /// The tool's `ToolDecl`, as JSON.
    pub spec: RString,
    /// What answers its calls.
    pub handler: ToolHandlerBox,
}

impl std::fmt::Debug for PluginMod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginMod").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for FfiTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FfiTool")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

/// What kind of failure an [`FfiError`] reports.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, StableAbi)]
pub enum ErrorKind {
    /// The arguments do not fit the tool's input.
    InvalidArguments,
    /// The tool ran and reported an error.
    Tool,
    /// Plugin code panicked; the panic was caught on the plugin side.
    Panicked,
    /// The call was cancelled before it finished.
    Cancelled,
    /// The plugin could not do what the host asked (instantiate, list its tools).
    Plugin,
    /// What was asked for does not exist (a resource's URI).
    NotFound,
}

/// An error crossing the ABI: a kind and a message.
#[repr(C)]
#[derive(Debug, Clone, PartialEq, Eq, StableAbi)]
pub struct FfiError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// A message naming what went wrong.
    pub message: RString,
}

impl FfiError {
    /// An error of this kind with this message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: RString::from(message.into()),
        }
    }
}

impl std::fmt::Display for FfiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

// No `std::error::Error` impl on purpose: it would route `FfiError` through `ToolError`'s
// blanket `From<E: Error>`, which cannot keep the kind, instead of the impl above.

/// The text of a caught panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}

/// The severity of a log message, in MCP's (RFC 5424's) order: `Debug` is the least severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// Its MCP name: `debug`, `info`, ..., `emergency`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    /// The level with this MCP name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// Its number on the ABI: 0 (debug) to 7 (emergency).
    pub fn to_u8(self) -> u8 {
        self as u8
    }

    /// The level numbered `n` on the ABI; above 7 is `Emergency`.
    pub fn from_u8(n: u8) -> Self {
        Self::ALL[usize::from(n.min(7))]
    }
}

/// A host context with no client: what calls made outside an MCP request get (tests, the
/// host's own checks), and what `plugin_api::Context::detached` wraps.
pub fn detached_host() -> HostContextBox {
    HostContextBox::from_ptr(RArc::new(Detached), TD_Opaque)
}

#[derive(Clone)]
struct Detached;

impl HostContext for Detached {
    fn log(&self, _level: u8, _logger: ROption<RString>, _data_json: RString) {}

    fn progress(&self, _progress: f64, _total: ROption<f64>, _message: ROption<RString>) {}

    fn request(
        &self,
        method: RStr<'_>,
        _params_json: RString,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        let error = FfiError::new(
            ErrorKind::Tool,
            format!("cannot send {method}: this call has no client behind it"),
        );
        async move { RResult::RErr(error) }.into_ffi()
    }

    fn active_toolsets(&self) -> RVec<RString> {
        RVec::new()
    }

    fn client_capabilities(&self) -> RString {
        RString::from("{}")
    }
}
