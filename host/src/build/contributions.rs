//! A live plugin's resources, prompts and completions: reading, getting and completing through
//! its ABI object, and the check at activation that its code declares what its manifest does.
//!
//! Which plugin serves a URI, a prompt or a completion is the registry's answer, from manifests
//! ([`crate::registry::Registry::resource_owner`]); this module is only called once that plugin
//! is open. Answers come back as the JSON text of the MCP result, for `serve` to parse into
//! rmcp's types; errors keep their kind ([`CallError`]).

use abi_stable::std_types::RString;
use plugin_abi::{FfiError, HostContextBox, PluginInstanceBox};
use plugin_manifest::{CompletionDecl, Manifest, PromptDecl, ResourceDecl, ResourceTemplateDecl};
use serde::Deserialize;

use super::{CallError, LoadedPlugin};

impl LoadedPlugin {
    /// Reads `uri`, which the registry says this plugin serves; resolves to MCP
    /// `ReadResourceResult` JSON.
    /// `context` is the request's, which the plugin's code may use (to ask for input).
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        context: HostContextBox,
    ) -> Result<String, CallError> {
        answer(self.instance.read_resource_in(uri.into(), context)).await
    }

    /// Gets the prompt `name` with `arguments` (a JSON object of strings) for the request of
    /// `context`; resolves to MCP `GetPromptResult` JSON.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: String,
        context: HostContextBox,
    ) -> Result<String, CallError> {
        answer(
            self.instance
                .get_prompt_in(name.into(), arguments.into(), context),
        )
        .await
    }

    /// Completes an argument, `request` being MCP's `completion/complete` params as JSON;
    /// resolves to the result's `completion` JSON.
    pub(crate) async fn complete(&self, request: String) -> Result<String, CallError> {
        answer(self.instance.complete(request.into())).await
    }
}

async fn answer(
    future: async_ffi::FfiFuture<abi_stable::std_types::RResult<RString, FfiError>>,
) -> Result<String, CallError> {
    future
        .await
        .into_result()
        .map(String::from)
        .map_err(CallError::from)
}

/// What a plugin's code declares besides tools, as `PluginInstance::contributions` lists it.
#[derive(Deserialize)]
struct Declared {
    resources: Vec<ResourceDecl>,
    resource_templates: Vec<ResourceTemplateDecl>,
    prompts: Vec<PromptDecl>,
    completions: Vec<CompletionDecl>,
}

/// The code's resources, templates, prompts and completions must be the manifest's, in order.
pub(super) fn check_contributions(
    manifest: &Manifest,
    instance: &PluginInstanceBox,
) -> Result<(), String> {
    let json = instance
        .contributions()
        .into_result()
        .map_err(|e| format!("listing its resources and prompts failed: {}", e.message))?;
    let code: Declared = serde_json::from_str(&json)
        .map_err(|e| format!("its list of resources and prompts does not parse: {e}"))?;
    for (kind, same) in [
        ("resources", code.resources == manifest.resources),
        (
            "resource templates",
            code.resource_templates == manifest.resource_templates,
        ),
        ("prompts", code.prompts == manifest.prompts),
        ("completions", code.completions == manifest.completions),
    ] {
        if !same {
            return Err(format!("the {kind} in code differ from the manifest's"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The activation check against a plugin instantiated in process.

    use std::sync::Arc;

    use plugin_api::{
        __private::{Code, ContributionHandlers, PluginDefinition, ResourceRequest, instantiate},
        Tool,
    };

    use super::*;

    #[derive(Default)]
    struct OneResource;

    impl PluginDefinition for OneResource {
        const OWN_TOOLSET: &'static str = "s";

        fn create() -> Self {
            Self
        }

        fn tools(self: &Arc<Self>) -> Vec<Tool> {
            Vec::new()
        }

        fn contributions(self: &Arc<Self>) -> ContributionHandlers {
            let mut c = ContributionHandlers::default();
            c.resource(
                r#"{"uri": "test://a", "name": "a", "toolset": "s"}"#,
                Code::sync(|r: ResourceRequest| r.answer("a")),
            );
            c
        }
    }

    fn manifest(resources: &str) -> Manifest {
        Manifest::from_json(&format!(
            r#"{{"abi": "0.1.0", "name": "p", "version": "1",
                 "toolsets": [{{"name": "s"}}], "resources": {resources}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn the_codes_resources_must_be_the_manifests() {
        let instance = instantiate::<OneResource>().into_result().unwrap();
        let same = manifest(r#"[{"uri": "test://a", "name": "a", "toolset": "s"}]"#);
        assert_eq!(check_contributions(&same, &instance), Ok(()));
        let other = manifest(r#"[{"uri": "test://b", "name": "b", "toolset": "s"}]"#);
        assert_eq!(
            check_contributions(&other, &instance),
            Err("the resources in code differ from the manifest's".to_owned())
        );
        assert!(check_contributions(&manifest("[]"), &instance).is_err());
    }
}
