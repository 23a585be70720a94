//! A bridged server as a live plugin: the host-side implementation of the plugin instance and
//! tool handler ABI objects, forwarding to the server's [`Upstream`].
//!
//! So the build stage treats it as any plugin: its tools go through the same activation
//! check, tool tables and extensions. A call sends the upstream tool its original name and
//! the arguments as given, and passes the result (content, structured content, `isError`,
//! `_meta`) back unchanged. A call times out when the server neither answers nor reports
//! progress for the entry's `call_timeout`; what the server sends during it reaches the calling
//! request.

use std::sync::Arc;

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, RResult, RString, RVec},
};
use async_ffi::{FfiFuture, FutureExt as _};
use plugin_abi::{
    ErrorKind, FfiError, FfiOutput, FfiTool, HostContextBox, OutputKind, PluginInstance,
    PluginInstanceBox, ToolHandler, ToolHandlerBox,
};
use rmcp::model::{JsonObject, Tool};

use super::{
    manifest::tool_decl,
    upstream::{CallError, Upstream},
};

/// The instance of a bridged server whose tools were listed as `tools`.
pub(super) fn instance(upstream: Arc<Upstream>, tools: &[Tool]) -> PluginInstanceBox {
    let tools = tools
        .iter()
        .map(|tool| Forwarded {
            upstream: Arc::clone(&upstream),
            decl: tool_decl(upstream.server(), tool),
            original: tool.name.to_string(),
        })
        .collect();
    PluginInstanceBox::from_ptr(RArc::new(Bridged { upstream, tools }), TD_Opaque)
}

struct Bridged {
    upstream: Arc<Upstream>,
    tools: Vec<Forwarded>,
}

impl PluginInstance for Bridged {
    fn tools(&self) -> RResult<RVec<FfiTool>, FfiError> {
        self.tools
            .iter()
            .map(|tool| {
                let spec = serde_json::to_string(&tool.decl)
                    .map_err(|e| FfiError::new(ErrorKind::Plugin, e.to_string()))?;
                Ok(FfiTool {
                    spec: spec.into(),
                    handler: ToolHandlerBox::from_ptr(RArc::new(tool.clone()), TD_Opaque),
                })
            })
            .collect::<Result<RVec<_>, _>>()
            .into()
    }

    fn stop(&self) {
        self.upstream.stop();
    }

    fn wrap(&self, _: u32, _: ToolHandlerBox) -> RResult<ToolHandlerBox, FfiError> {
        RResult::RErr(self.not_offered("extensions"))
    }

    fn contributions(&self) -> RResult<RString, FfiError> {
        RResult::ROk(
            r#"{"resources":[],"resource_templates":[],"prompts":[],"completions":[]}"#.into(),
        )
    }

    fn read_resource(&self, _: RString) -> FfiFuture<RResult<RString, FfiError>> {
        let error = self.not_offered("resources");
        async move { RResult::RErr(error) }.into_ffi()
    }

    fn get_prompt(&self, _: RString, _: RString) -> FfiFuture<RResult<RString, FfiError>> {
        let error = self.not_offered("prompts");
        async move { RResult::RErr(error) }.into_ffi()
    }

    fn complete(&self, _: RString) -> FfiFuture<RResult<RString, FfiError>> {
        let error = self.not_offered("completions");
        async move { RResult::RErr(error) }.into_ffi()
    }
}

impl Bridged {
    fn not_offered(&self, what: &str) -> FfiError {
        FfiError::new(
            ErrorKind::NotFound,
            format!(
                "server `{}`: bridged servers' {what} are not served",
                self.upstream.server().name
            ),
        )
    }
}

/// One upstream tool, under its served name.
#[derive(Clone)]
struct Forwarded {
    upstream: Arc<Upstream>,
    decl: plugin_manifest::ToolDecl,
    original: String,
}

impl ToolHandler for Forwarded {
    fn call(
        &self,
        arguments: RString,
        context: HostContextBox,
    ) -> FfiFuture<RResult<FfiOutput, FfiError>> {
        let tool = self.clone();
        async move { tool.forward(&arguments, context).await.into() }.into_ffi()
    }
}

impl Forwarded {
    async fn forward(
        &self,
        arguments: &str,
        context: HostContextBox,
    ) -> Result<FfiOutput, FfiError> {
        let arguments: Option<JsonObject> = serde_json::from_str(arguments)
            .map_err(|e| FfiError::new(ErrorKind::InvalidArguments, e.to_string()))?;
        let result = self
            .upstream
            .call(&self.original, arguments, context)
            .await
            .map_err(|e| {
                let message = match e {
                    CallError::Silent(timeout) => format!(
                        "tool `{}` timed out after {} s",
                        self.decl.name,
                        timeout.as_secs_f64()
                    ),
                    CallError::Failed(message) => message,
                };
                FfiError::new(ErrorKind::Tool, message)
            })?;
        let json = serde_json::to_string(&result)
            .map_err(|e| FfiError::new(ErrorKind::Tool, e.to_string()))?;
        Ok(FfiOutput {
            kind: OutputKind::Result,
            json: json.into(),
        })
    }
}
