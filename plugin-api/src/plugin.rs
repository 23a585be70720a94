//! The plugin side of the ABI: a type with `#[plugin]` becomes a [`PluginInstance`] object.
//!
//! [`PluginDefinition`] is what the attribute implements; [`instantiate`] and the two wrappers
//! below turn it into ABI objects, each entry point under `catch_unwind`.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    sync::Arc,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, RResult, RString, RVec},
};

use crate::{
    error::{ErrorKind, FfiError, panic_message},
    ffi::{FfiTool, PluginInstance, PluginInstanceBox, ToolHandler, ToolHandlerBox},
    runtime::CallFuture,
    section,
    tool::{Handler, Tool},
};

/// What `#[plugin]` implements for a plugin type. Not written by hand.
#[doc(hidden)]
pub trait PluginDefinition: Send + Sync + Sized + 'static {
    /// The plugin's own toolset, given to tools that name none.
    const OWN_TOOLSET: &'static str;

    /// Builds the plugin's state.
    fn create() -> Self;

    /// The tools declared with `#[tool]`, in order, then those of `#[dynamic_tools]`.
    fn tools(self: &Arc<Self>) -> Vec<Tool>;

    /// Runs the `#[on_stop]` method, if any.
    fn stop(&self) {}

    /// Applies extension number `extension` of the manifest's `extends` to `original`.
    fn wrap(&self, extension: u32, original: ToolHandlerBox) -> Result<ToolHandlerBox, FfiError> {
        drop(original);
        Err(FfiError::new(
            ErrorKind::Plugin,
            format!("this plugin has no wrapping extension number {extension}"),
        ))
    }
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
        let instance = Instance(Arc::new(P::create()));
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

struct Instance<P>(Arc<P>);

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

    fn wrap(&self, extension: u32, original: ToolHandlerBox) -> RResult<ToolHandlerBox, FfiError> {
        guard("wrap", || self.0.wrap(extension, original))
    }
}

fn ffi_tool<P: PluginDefinition>(tool: Tool) -> Result<FfiTool, FfiError> {
    let (mut decl, handler) = tool.into_parts();
    if decl.toolset.is_empty() {
        decl.toolset = P::OWN_TOOLSET.to_owned();
    }
    let spec = serde_json::to_string(&decl)
        .map_err(|e| FfiError::new(ErrorKind::Plugin, format!("tool {}: {e}", decl.name)))?;
    let handler = ToolImpl {
        name: decl.name.into(),
        handler,
    };
    Ok(FfiTool {
        spec: spec.into(),
        handler: ToolHandlerBox::from_ptr(RArc::new(handler), TD_Opaque),
    })
}

struct ToolImpl {
    name: Arc<str>,
    handler: Handler,
}

impl ToolHandler for ToolImpl {
    fn call(&self, arguments: RString) -> CallFuture {
        let name = Arc::clone(&self.name);
        match catch_unwind(AssertUnwindSafe(|| {
            self.handler.call(Arc::clone(&name), arguments.into())
        })) {
            Ok(future) => future,
            Err(payload) => {
                let error = FfiError::new(
                    ErrorKind::Panicked,
                    format!("tool {name} panicked: {}", panic_message(&*payload)),
                );
                async_ffi::FutureExt::into_ffi(async move { RResult::RErr(error) })
            }
        }
    }
}
