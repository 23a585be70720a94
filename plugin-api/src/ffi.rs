//! The types that cross the library boundary, all `StableAbi`.
//!
//! A plugin library exports one root module, [`PluginMod`]: its manifest and a constructor. The
//! constructor returns a [`PluginInstance`] object, which lists the plugin's tools, each with a
//! [`ToolHandler`] object. JSON crosses as `RString`; futures as `async_ffi::FfiFuture`, so the
//! plugin's own async runtime never meets the host's. Handlers are `#[sabi_trait]` objects, so a
//! handler from one plugin can be passed to another. Everything here is produced by the
//! `#[plugin]` attribute; authors never touch it.

// `#[sabi_trait]` expands to impls inside generated modules, and to undocumented items.
#![allow(non_local_definitions, missing_docs)]

use abi_stable::{
    StableAbi, declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RArc, RResult, RStr, RString, RVec},
};
use async_ffi::FfiFuture;

use crate::error::FfiError;

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
    #[sabi(last_prefix_field)]
    fn wrap(&self, extension: u32, original: ToolHandlerBox) -> RResult<ToolHandlerBox, FfiError>;
}

/// A plugin instance behind the ABI.
pub type PluginInstanceBox = PluginInstance_TO<'static, RArc<()>>;

/// Something that answers a tool call.
#[sabi_trait]
pub trait ToolHandler: Send + Sync {
    /// Calls the tool with its arguments as a JSON object; resolves to the result as JSON.
    #[sabi(last_prefix_field)]
    fn call(&self, arguments: RString) -> FfiFuture<RResult<RString, FfiError>>;
}

/// A tool handler behind the ABI; cloning shares it.
pub type ToolHandlerBox = ToolHandler_TO<'static, RArc<()>>;

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
