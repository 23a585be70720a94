//! The plugin side of the ABI: a type with `#[plugin]` becomes a [`PluginInstance`] object.
//!
//! [`PluginDefinition`] is what the attribute implements; [`instantiate`] and the two wrappers
//! below turn it into ABI objects, each entry point under `catch_unwind`: building the plugin,
//! listing its tools, each call, and each wrap of another plugin's tool by an extension.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, RResult, RString, RVec},
};
use async_ffi::{FfiFuture, FutureExt};
use plugin_manifest::section;

use crate::{
    context::Context,
    contribution::{ContributionHandlers, JsonFuture},
    error::{ErrorKind, FfiError, ToolError, panic_message},
    extension::{Original, Wrapped},
    ffi::{
        FfiTool, HostContextBox, PluginInstance, PluginInstanceBox, ToolHandler, ToolHandlerBox,
        detached_host,
    },
    runtime::{self, CallFuture},
    tool::{Handler, Tool},
};

/// What `#[plugin]` implements for a plugin type. Not written by hand.
#[doc(hidden)]
pub trait PluginDefinition: Send + Sync + Sized + 'static {
    /// The plugin's name: the logger of its tools' log messages.
    const NAME: &'static str = "";

    /// The plugin's own toolset, given to tools that name none.
    const OWN_TOOLSET: &'static str;

    /// The tool each entry of the manifest's `extends` targets, in the same order.
    const EXTENDS: &'static [&'static str] = &[];

    /// Builds the plugin's state.
    fn create() -> Self;

    /// The record the attribute wrote into the library's manifest link section: the manifest's
    /// JSON, framed as `plugin_manifest::section` frames it. Empty for a definition written by
    /// hand.
    fn manifest_record() -> &'static [u8] {
        &[]
    }

    /// The tools declared with `#[tool]`, in order, then those of `#[dynamic_tools]`.
    fn tools(self: &Arc<Self>) -> Vec<Tool>;

    /// Runs the `#[on_stop]` method, if any.
    fn stop(&self) {}

    /// The `#[resource]`, `#[resource_template]`, `#[prompt]` and `#[complete]` methods, with
    /// their declarations. Called once, when the plugin is instantiated.
    fn contributions(self: &Arc<Self>) -> ContributionHandlers {
        ContributionHandlers::default()
    }

    /// Runs the `#[extend]` method of entry number `extension` of the manifest's `extends`.
    fn wrap(&self, extension: u32, original: Original) -> Result<Wrapped, ToolError> {
        drop(original);
        Err(no_wrap(extension))
    }
}

/// The error for a wrap of an entry of `extends` that has no `#[extend]` method.
#[doc(hidden)]
pub fn no_wrap(extension: u32) -> ToolError {
    ToolError::new(format!(
        "this plugin has no wrapping extension number {extension}"
    ))
}

/// The manifest JSON inside a framed link-section record.
#[doc(hidden)]
pub fn manifest_json(record: &'static [u8]) -> abi_stable::std_types::RStr<'static> {
    section::decode(record).unwrap_or_default().into()
}

/// The root module's constructor: builds the plugin under `catch_unwind`.
#[doc(hidden)]
pub fn instantiate<P: PluginDefinition>() -> RResult<PluginInstanceBox, FfiError> {
    guard("instantiate", || {
        runtime::name_plugin(P::NAME);
        let plugin = Arc::new(P::create());
        let contributions = P::contributions(&plugin);
        runtime::join();
        let instance = Instance(plugin, contributions, AtomicBool::new(false));
        Ok(PluginInstanceBox::from_ptr(RArc::new(instance), TD_Opaque))
    })
}

fn guard<T>(what: &str, f: impl FnOnce() -> Result<T, FfiError>) -> RResult<T, FfiError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result.into(),
        Err(payload) => RResult::RErr(FfiError::new(
            ErrorKind::Panicked,
            format!("{what} panicked: {}", panic_message(&*payload)),
        )),
    }
}

/// A live plugin: its state, its resources, prompts and completions, and whether it retired.
struct Instance<P>(Arc<P>, ContributionHandlers, AtomicBool);

/// Starts `start` (a call, a read, a prompt or a completion) under `catch_unwind`; a panic
/// comes back as an error naming `what`.
fn guard_future<T: Send + 'static>(
    what: impl FnOnce() -> String,
    start: impl FnOnce() -> FfiFuture<RResult<T, FfiError>>,
) -> FfiFuture<RResult<T, FfiError>> {
    catch_unwind(AssertUnwindSafe(start)).unwrap_or_else(|payload| {
        let error = FfiError::new(
            ErrorKind::Panicked,
            format!("{} panicked: {}", what(), panic_message(&*payload)),
        );
        async move { RResult::RErr(error) }.into_ffi()
    })
}

impl<P: PluginDefinition> PluginInstance for Instance<P> {
    fn tools(&self) -> RResult<RVec<FfiTool>, FfiError> {
        guard("listing the plugin's tools", || {
            P::tools(&self.0)
                .into_iter()
                .map(|tool| ffi_tool::<P>(tool))
                .collect()
        })
    }

    fn stop(&self) {
        let _ = guard("stop", || {
            self.0.stop();
            Ok(())
        });
    }

    fn retire(&self) {
        if self.2.swap(true, Ordering::AcqRel) {
            return;
        }
        let _ = guard("retire", || {
            runtime::leave();
            Ok(())
        });
    }

    fn wrap(&self, extension: u32, original: ToolHandlerBox) -> RResult<ToolHandlerBox, FfiError> {
        let index = usize::try_from(extension).unwrap_or(usize::MAX);
        let tool: Arc<str> = P::EXTENDS.get(index).copied().unwrap_or("?").into();
        guard(&format!("wrapping tool {tool}"), || {
            let Wrapped(handler) = self
                .0
                .wrap(extension, Original::new(Arc::clone(&tool), original))?;
            Ok(ffi_handler(P::NAME, tool, handler))
        })
    }

    fn contributions(&self) -> RResult<RString, FfiError> {
        guard("listing the plugin's resources and prompts", || {
            Ok(self.1.declarations().into())
        })
    }

    fn read_resource(&self, uri: RString) -> JsonFuture {
        self.read_resource_in(uri, detached_host())
    }

    fn get_prompt(&self, name: RString, arguments_json: RString) -> JsonFuture {
        self.get_prompt_in(name, arguments_json, detached_host())
    }

    fn read_resource_in(&self, uri: RString, context: HostContextBox) -> JsonFuture {
        let uri = String::from(uri);
        let context = Context::new(context, Arc::from(P::NAME));
        guard_future(
            || format!("reading {uri}"),
            || self.1.read(uri.clone(), context),
        )
    }

    fn get_prompt_in(
        &self,
        name: RString,
        arguments_json: RString,
        context: HostContextBox,
    ) -> JsonFuture {
        let context = Context::new(context, Arc::from(P::NAME));
        guard_future(
            || format!("prompt {name}"),
            || self.1.get_prompt(&name, &arguments_json, context),
        )
    }

    fn complete(&self, request_json: RString) -> JsonFuture {
        guard_future(
            || "completion".to_owned(),
            || self.1.complete(&request_json),
        )
    }
}

fn ffi_tool<P: PluginDefinition>(tool: Tool) -> Result<FfiTool, FfiError> {
    let (mut decl, handler) = tool.into_parts();
    if decl.toolset.is_empty() {
        decl.toolset = P::OWN_TOOLSET.to_owned();
    }
    let spec = serde_json::to_string(&decl)
        .map_err(|e| FfiError::new(ErrorKind::Plugin, format!("tool {}: {e}", decl.name)))?;
    Ok(FfiTool {
        spec: spec.into(),
        handler: ffi_handler(P::NAME, decl.name.into(), handler),
    })
}

/// A handler as an ABI object; `name` is the tool it answers, for panic messages, and
/// `plugin` the logger of its log messages.
pub(crate) fn ffi_handler(
    plugin: &'static str,
    name: Arc<str>,
    handler: Handler,
) -> ToolHandlerBox {
    ToolHandlerBox::from_ptr(
        RArc::new(ToolImpl {
            plugin: Arc::from(plugin),
            name,
            handler,
        }),
        TD_Opaque,
    )
}

struct ToolImpl {
    plugin: Arc<str>,
    name: Arc<str>,
    handler: Handler,
}

impl ToolHandler for ToolImpl {
    fn call(&self, arguments: RString, context: HostContextBox) -> CallFuture {
        let context = Context::new(context, Arc::clone(&self.plugin));
        guard_future(
            || format!("tool {}", self.name),
            || {
                self.handler
                    .call(Arc::clone(&self.name), arguments.into(), context)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    //! The wrap entry point in process: the plugin side as the host sees it through the ABI.

    use serde_json::{Value, json};

    use super::*;
    use crate::{ffi::detached_host, runtime::runtime};

    /// A plugin with three extensions of `t`: one that appends to the result, one whose wrap
    /// fails, one whose wrap panics.
    #[derive(Default)]
    struct Extending;

    impl PluginDefinition for Extending {
        const OWN_TOOLSET: &'static str = "";
        const EXTENDS: &'static [&'static str] = &["t", "t", "t"];

        fn create() -> Self {
            Self
        }

        fn tools(self: &Arc<Self>) -> Vec<Tool> {
            Vec::new()
        }

        fn wrap(&self, extension: u32, original: Original) -> Result<Wrapped, ToolError> {
            match extension {
                0 => Ok(Wrapped::asynchronous(move |args: Value| {
                    let original = original.clone();
                    async move {
                        let mut out = original.call(args).await?;
                        out["wrapped_by"] = json!(original.tool());
                        Ok(out)
                    }
                })),
                1 => Err(ToolError::new("not configured")),
                2 => panic!("no way"),
                _ => Err(no_wrap(extension)),
            }
        }
    }

    /// The handler of a tool that echoes its arguments, or rejects `{"bad": ..}`.
    fn echo() -> ToolHandlerBox {
        let tool = Tool::new("t", "").sync(|args: Value| {
            if args.get("bad").is_some() {
                Err(ToolError::invalid_arguments("bad is bad"))
            } else {
                Ok(args)
            }
        });
        let (_, handler) = tool.into_parts();
        ffi_handler("p", "t".into(), handler)
    }

    fn call(handler: &ToolHandlerBox, args: Value) -> Result<Value, FfiError> {
        let output = runtime()
            .block_on(handler.call(args.to_string().into(), detached_host()))
            .into_result()?;
        Ok(serde_json::from_str(&output.json).unwrap())
    }

    fn instance() -> PluginInstanceBox {
        instantiate::<Extending>().into_result().unwrap()
    }

    fn wrap_error(extension: u32) -> FfiError {
        match instance().wrap(extension, echo()).into_result() {
            Ok(_) => panic!("wrap {extension} succeeded"),
            Err(error) => error,
        }
    }

    #[test]
    fn a_wrapped_handler_calls_the_original_through_the_abi() {
        let wrapped = instance().wrap(0, echo()).into_result().unwrap();
        assert_eq!(
            call(&wrapped, json!({"x": 1})).unwrap(),
            json!({"x": 1, "wrapped_by": "t"})
        );
    }

    #[test]
    fn the_originals_errors_keep_their_kind() {
        let wrapped = instance().wrap(0, echo()).into_result().unwrap();
        let error = call(&wrapped, json!({"bad": 1})).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidArguments);
        assert_eq!(error.message.as_str(), "bad is bad");
    }

    #[test]
    fn a_wrap_that_fails_or_panics_is_an_error_naming_the_tool() {
        let failed = wrap_error(1);
        assert_eq!(failed.kind, ErrorKind::Tool);
        assert_eq!(failed.message.as_str(), "not configured");
        let panicked = wrap_error(2);
        assert_eq!(panicked.kind, ErrorKind::Panicked);
        assert_eq!(
            panicked.message.as_str(),
            "wrapping tool t panicked: no way"
        );
        let missing = wrap_error(7);
        assert!(
            missing.message.contains("no wrapping extension number 7"),
            "{}",
            missing.message
        );
    }
}
