//! Applying tool extensions while a tool table is built.
//!
//! The registry says which extensions a tool has and in which order ([`crate::registry`]);
//! this module applies them to the tool's declaration and handler, one after the other, so the
//! last applied is the outermost. What an extension changes statically (title, description,
//! annotations and input schema replace; meta merges key by key; a field not given keeps the
//! tool's) comes from the manifest alone. Only an extension with a `wrap` needs its plugin's
//! code, so only then is the extending plugin opened ([`Builder::plugin`]).

use plugin_manifest::{ExtensionDecl, ToolDecl};

use super::{Builder, ExtensionError, LoadedTool};

/// `tool` with every extension of it applied, in order; an error if any wrap fails (the
/// extending plugin does not open, or its wrap returns an error or panics).
pub(super) fn apply(builder: &Builder, mut tool: LoadedTool) -> Result<LoadedTool, ExtensionError> {
    for extension in builder.registry().extensions_of(&tool.decl.name) {
        let failed = |reason: String| ExtensionError {
            tool: tool.decl.name.clone(),
            target: tool.plugin.clone(),
            plugin: extension.plugin.clone(),
            index: extension.index,
            reason,
        };
        if extension.decl.wrap {
            let plugin = builder
                .plugin(&extension.plugin)
                .map_err(|e| failed(e.to_string()))?;
            tool = plugin
                .wrap(extension.index, &tool)
                .map_err(|e| failed(e.message.into()))?;
        }
        apply_metadata(&mut tool.decl, &extension.decl);
    }
    Ok(tool)
}

/// Applies what `extension` changes statically to `tool`: title, description, annotations and
/// input schema replace the tool's; meta is merged over the tool's, key by key; a field the
/// extension leaves out keeps the tool's.
pub(super) fn apply_metadata(tool: &mut ToolDecl, extension: &ExtensionDecl) {
    if let Some(title) = &extension.title {
        tool.title = Some(title.clone());
    }
    if let Some(description) = &extension.description {
        tool.description.clone_from(description);
    }
    if let Some(annotations) = extension.annotations {
        tool.annotations = annotations;
    }
    if let Some(meta) = &extension.meta {
        let merged = tool.meta.get_or_insert_with(Default::default);
        for (key, value) in meta {
            merged.insert(key.clone(), value.clone());
        }
    }
    if let Some(schema) = &extension.input_schema {
        tool.input_schema = Some(schema.clone());
    }
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Annotations;
    use serde_json::{Value, json};

    use super::*;

    fn tool() -> ToolDecl {
        serde_json::from_value(json!({
            "name": "t",
            "title": "T",
            "description": "The tool.",
            "toolset": "s",
            "annotations": {"readOnlyHint": true},
            "meta": {"keep": 1, "over": "tool"},
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}
        }))
        .unwrap()
    }

    fn extension(json: Value) -> ExtensionDecl {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_field_left_out_keeps_the_tools() {
        let mut decl = tool();
        apply_metadata(&mut decl, &extension(json!({"tool": "t", "wrap": true})));
        assert_eq!(decl, tool());
    }

    #[test]
    fn meta_is_merged_key_by_key_and_the_rest_replaces() {
        let mut decl = tool();
        apply_metadata(
            &mut decl,
            &extension(json!({
                "tool": "t",
                "title": "New",
                "description": "Narrowed.",
                "annotations": {"destructiveHint": false},
                "meta": {"over": "extension", "added": true},
                "input_schema": {"type": "object"}
            })),
        );
        assert_eq!(decl.title.as_deref(), Some("New"));
        assert_eq!(decl.description, "Narrowed.");
        assert_eq!(
            decl.annotations,
            Annotations {
                destructive: Some(false),
                ..Default::default()
            },
            "annotations replace, they do not merge"
        );
        assert_eq!(
            Value::Object(decl.meta.unwrap()),
            json!({"keep": 1, "over": "extension", "added": true})
        );
        assert_eq!(
            Value::Object(decl.input_schema.unwrap()),
            json!({"type": "object"})
        );
    }

    #[test]
    fn meta_merges_into_a_tool_without_meta() {
        let mut decl = tool();
        decl.meta = None;
        apply_metadata(
            &mut decl,
            &extension(json!({"tool": "t", "meta": {"policy": "x"}})),
        );
        assert_eq!(Value::Object(decl.meta.unwrap()), json!({"policy": "x"}));
    }

    #[test]
    fn later_extensions_apply_over_earlier_ones() {
        let mut decl = tool();
        for e in [
            json!({"tool": "t", "description": "first", "meta": {"a": 1}}),
            json!({"tool": "t", "description": "second", "meta": {"a": 2, "b": 2}}),
        ] {
            apply_metadata(&mut decl, &extension(e));
        }
        assert_eq!(decl.description, "second");
        assert_eq!(
            Value::Object(decl.meta.unwrap()),
            json!({"keep": 1, "over": "tool", "a": 2, "b": 2})
        );
    }
}
