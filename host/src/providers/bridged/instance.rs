//! A bridged server as a live plugin: the host-side implementation of the plugin instance and
//! tool handler ABI objects, forwarding to the server's [`Upstream`].
//!
//! So the build stage treats it as any plugin: its tools go through the same activation
//! check, tool tables and extensions. A call sends the upstream tool its original name and
//! the arguments as given, and passes the result (content, structured content, `isError`,
//! `_meta`) back unchanged. A call times out when the server neither answers nor reports
//! progress for the entry's `call_timeout`; what the server sends during it reaches the calling
//! request.
//!
//! Resources, resource templates, prompts and completions are those of the manifest (the
//! server's cached listing when the host started: the registry routes by it); reading, getting
//! and completing go to the server, a prompt under its own name.

use std::{collections::HashMap, sync::Arc};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, RResult, RString, RVec},
};
use async_ffi::{FfiFuture, FutureExt as _};
use plugin_abi::{
    ErrorKind, FfiError, FfiOutput, FfiTool, HostContextBox, OutputKind, PluginInstance,
    PluginInstanceBox, ToolHandler, ToolHandlerBox, detached_host,
};
use plugin_manifest::{Manifest, ToolDecl};
use rmcp::model::{CompleteRequestParams, JsonObject, Reference};
use serde::Serialize;

use super::upstream::{CallError, Upstream};
use crate::discovery::servers::{cache::Listing, manifest::tool_decl, names::served_name};

/// The instance of a bridged server that listed `listing`, served as `manifest` declares.
pub(super) fn instance(
    upstream: Arc<Upstream>,
    listing: &Listing,
    manifest: &Manifest,
) -> PluginInstanceBox {
    let server = upstream.server();
    let tools = listing
        .tools
        .iter()
        .map(|tool| {
            let mut decl = tool_decl(server, tool);
            let declared = manifest.tools.iter().find(|t| t.name == decl.name);
            decl.toolset = toolset_of(manifest, declared, &server.name);
            // An isolated plugin's tool may run as a task as its manifest says (the child runs
            // it plainly; this host runs the task, and makes the call one when the child's tool
            // says so).
            if let Some(declared) = declared {
                decl.task = declared.task;
                decl.input_first = declared.input_first;
            }
            Forwarded {
                upstream: Arc::clone(&upstream),
                decl,
                original: tool.name.to_string(),
            }
        })
        .collect();
    let prompts = listing
        .prompts
        .iter()
        .map(|p| {
            (
                served_name(&server.name, &p.name, server.namespace),
                p.name.clone(),
            )
        })
        .collect();
    let contributions = serde_json::to_string(&Contributions {
        resources: &manifest.resources,
        resource_templates: &manifest.resource_templates,
        prompts: &manifest.prompts,
        completions: &manifest.completions,
    })
    .unwrap_or_default();
    PluginInstanceBox::from_ptr(
        RArc::new(Bridged {
            upstream,
            tools,
            prompts,
            contributions,
        }),
        TD_Opaque,
    )
}

/// The toolset of a tool the manifest declares as `declared` (an isolated library's), else
/// the toolset named after the server (a bridged one's), else the first.
fn toolset_of(manifest: &Manifest, declared: Option<&ToolDecl>, server: &str) -> String {
    declared
        .map(|t| t.toolset.as_str())
        .or_else(|| manifest.toolset(server).map(|t| t.name.as_str()))
        .or_else(|| manifest.toolsets.first().map(|t| t.name.as_str()))
        .unwrap_or(server)
        .to_owned()
}

/// What `PluginInstance::contributions` answers.
#[derive(Serialize)]
struct Contributions<'a> {
    resources: &'a [plugin_manifest::ResourceDecl],
    resource_templates: &'a [plugin_manifest::ResourceTemplateDecl],
    prompts: &'a [plugin_manifest::PromptDecl],
    completions: &'a [plugin_manifest::CompletionDecl],
}

struct Bridged {
    upstream: Arc<Upstream>,
    tools: Vec<Forwarded>,
    /// The server's own name of each prompt, by served name.
    prompts: HashMap<String, String>,
    contributions: String,
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
        RResult::ROk(self.contributions.as_str().into())
    }

    fn read_resource(&self, uri: RString) -> FfiFuture<RResult<RString, FfiError>> {
        self.read_resource_in(uri, detached_host())
    }

    fn get_prompt(
        &self,
        name: RString,
        arguments: RString,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        self.get_prompt_in(name, arguments, detached_host())
    }

    fn read_resource_in(
        &self,
        uri: RString,
        context: HostContextBox,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        let upstream = Arc::clone(&self.upstream);
        async move { answer(upstream.read_resource(&uri, context).await) }.into_ffi()
    }

    fn get_prompt_in(
        &self,
        name: RString,
        arguments: RString,
        context: HostContextBox,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        let upstream = Arc::clone(&self.upstream);
        let original = self.original_prompt(&name);
        async move {
            let arguments: Option<JsonObject> = match serde_json::from_str(&arguments) {
                Ok(arguments) => arguments,
                Err(e) => {
                    return RResult::RErr(FfiError::new(
                        ErrorKind::InvalidArguments,
                        e.to_string(),
                    ));
                }
            };
            answer(upstream.get_prompt(&original, arguments, context).await)
        }
        .into_ffi()
    }

    fn complete(&self, request: RString) -> FfiFuture<RResult<RString, FfiError>> {
        let upstream = Arc::clone(&self.upstream);
        let request = serde_json::from_str::<CompleteRequestParams>(&request).map(|mut r| {
            if let Reference::Prompt(prompt) = &mut r.r#ref {
                prompt.name = self.original_prompt(&prompt.name);
            }
            r
        });
        async move {
            let request = match request {
                Ok(request) => request,
                Err(e) => {
                    return RResult::RErr(FfiError::new(
                        ErrorKind::InvalidArguments,
                        e.to_string(),
                    ));
                }
            };
            answer(upstream.complete(request).await.map(|r| r.completion))
        }
        .into_ffi()
    }
}

/// A server's answer as the JSON text the ABI carries, or its error.
fn answer<T: Serialize>(answer: Result<T, FfiError>) -> RResult<RString, FfiError> {
    answer
        .and_then(|a| {
            serde_json::to_string(&a).map_err(|e| FfiError::new(ErrorKind::Tool, e.to_string()))
        })
        .map(RString::from)
        .into()
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

    /// The server's own name of the prompt served as `served`: as it listed it, else `served`
    /// less the server's prefix.
    fn original_prompt(&self, served: &str) -> String {
        if let Some(original) = self.prompts.get(served) {
            return original.clone();
        }
        let server = &self.upstream.server().name;
        served
            .strip_prefix(&format!("{server}__"))
            .filter(|_| self.upstream.server().namespace)
            .unwrap_or(served)
            .to_owned()
    }
}

/// One upstream tool, under its served name.
#[derive(Clone)]
struct Forwarded {
    upstream: Arc<Upstream>,
    decl: ToolDecl,
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
        if self.upstream.server().isolated
            && let Some(output) = crate::call::wire::output_of(&result)
        {
            return output;
        }
        let json = serde_json::to_string(&result)
            .map_err(|e| FfiError::new(ErrorKind::Tool, e.to_string()))?;
        Ok(FfiOutput {
            kind: OutputKind::Result,
            json: json.into(),
        })
    }
}
