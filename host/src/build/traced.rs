//! A span for each extension's wrap of a tool, when traces are on: [`traced`] puts a handler
//! around the one a wrap returned, which runs each call in a span of its own, child of the
//! caller's (read from the call's context, since a wrap may call its original from a plugin's
//! thread), and hands the wrapped code a context whose trace context is that span's, so the
//! next wrap inward, and the tool, trace under it.

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, ROption, RResult, RStr, RString, RVec},
};
use async_ffi::{FfiFuture, FutureExt as _};
use plugin_abi::{
    FfiError, FfiLogEvent, FfiOutput, HostContext, HostContextBox, ToolHandler, ToolHandlerBox,
};
use tracing::Instrument as _;

use crate::observe::traces;

/// `handler`, which `plugin`'s wrap of `tool` returned, with a span around each call.
pub(super) fn traced(handler: ToolHandlerBox, plugin: &str, tool: &str) -> ToolHandlerBox {
    ToolHandlerBox::from_ptr(
        RArc::new(Traced {
            handler,
            name: format!("{tool} wrapped by {plugin}"),
            plugin: plugin.to_owned(),
            tool: tool.to_owned(),
        }),
        TD_Opaque,
    )
}

struct Traced {
    handler: ToolHandlerBox,
    name: String,
    plugin: String,
    tool: String,
}

impl ToolHandler for Traced {
    fn call(
        &self,
        arguments: RString,
        context: HostContextBox,
    ) -> FfiFuture<RResult<FfiOutput, FfiError>> {
        let parent = context.trace_context().into_option();
        let span = traces::child_of(parent.as_deref(), &self.name, &self.plugin);
        span.record("gen_ai.tool.name", self.tool.as_str());
        let context = match traces::context_of(&span) {
            Some(trace) => HostContextBox::from_ptr(
                RArc::new(InSpan {
                    host: context,
                    trace: serde_json::Value::Object(trace).to_string().into(),
                }),
                TD_Opaque,
            ),
            None => context,
        };
        let answer = span.in_scope(|| self.handler.call(arguments, context));
        answer.instrument(span).into_ffi()
    }
}

/// The call's context, but for its trace context: the wrap's span. It forwards every other
/// method of [`HostContext`], so a method appended to the ABI is forwarded here too.
#[derive(Clone)]
struct InSpan {
    host: HostContextBox,
    trace: RString,
}

impl HostContext for InSpan {
    fn log(&self, level: u8, logger: ROption<RString>, data_json: RString) {
        self.host.log(level, logger, data_json);
    }

    fn progress(&self, progress: f64, total: ROption<f64>, message: ROption<RString>) {
        self.host.progress(progress, total, message);
    }

    fn request(
        &self,
        method: RStr<'_>,
        params_json: RString,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        self.host.request(method, params_json)
    }

    fn active_toolsets(&self) -> RVec<RString> {
        self.host.active_toolsets()
    }

    fn client_capabilities(&self) -> RString {
        self.host.client_capabilities()
    }

    fn resource_updated(&self, uri: RString) {
        self.host.resource_updated(uri);
    }

    fn session(&self) -> ROption<RString> {
        self.host.session()
    }

    fn caller_name(&self) -> ROption<RString> {
        self.host.caller_name()
    }

    fn caller_scopes(&self) -> RVec<RString> {
        self.host.caller_scopes()
    }

    fn ask(&self, requests_json: RString) -> FfiFuture<RResult<RString, FfiError>> {
        self.host.ask(requests_json)
    }

    fn run_as_task(&self) -> FfiFuture<()> {
        self.host.run_as_task()
    }

    fn set_available(&self, kind: RStr<'_>, name: RStr<'_>, available: bool) {
        self.host.set_available(kind, name, available);
    }

    fn abi_version(&self) -> RString {
        self.host.abi_version()
    }

    fn trace_context(&self) -> ROption<RString> {
        ROption::RSome(self.trace.clone())
    }

    fn plugin_event(&self, event: FfiLogEvent<'_>) {
        self.host.plugin_event(event);
    }
}
