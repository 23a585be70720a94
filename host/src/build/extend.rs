//! Applying tool extensions while a tool table is built.
//!
//! The registry says which extensions a tool has and in which order ([`crate::registry`]);
//! this module applies them to the tool's declaration and handler, one after the other, so the
//! last applied is the outermost. What an extension changes statically comes from the manifest
//! alone ([`apply_metadata`], which reports use too). Only an extension with a `wrap` needs its
//! plugin's code, so only then is the extending plugin opened ([`Builder::plugin`]). An
//! isolated plugin's extensions of its own tools are applied in its child, so not here.

use std::{error::Error, sync::Arc};

use super::{Builder, ExtensionError, LoadedTool};
use crate::call::CallError;
use crate::discovery::Provider;
use crate::registry::apply_metadata;

/// `tool` with every extension of it applied, in order; an error if any wrap fails (the
/// extending plugin does not open, or its wrap returns an error or panics).
pub(super) fn apply(builder: &Builder, mut tool: LoadedTool) -> Result<LoadedTool, ExtensionError> {
    let isolated = builder
        .registry()
        .plugin(&tool.plugin)
        .is_some_and(|p| matches!(p.provider, Provider::Isolated { .. }));
    for extension in builder.registry().extensions_of(&tool.decl.name) {
        if isolated && extension.plugin == tool.plugin {
            // Applied in the isolated plugin's child, whose listing the tool comes from.
            continue;
        }
        let failed = |source: Arc<dyn Error + Send + Sync>| ExtensionError {
            tool: tool.decl.name.clone(),
            target: tool.plugin.clone(),
            plugin: extension.plugin.clone(),
            index: extension.index,
            source,
        };
        if extension.decl.wrap {
            let plugin = builder
                .plugin(&extension.plugin)
                .map_err(|e| failed(Arc::new(e.into_error())))?;
            tool = plugin
                .wrap(extension.index, &tool)
                .map_err(|e| failed(Arc::new(CallError::from(e))))?;
        }
        apply_metadata(&mut tool.decl, &extension.decl);
    }
    Ok(tool)
}
