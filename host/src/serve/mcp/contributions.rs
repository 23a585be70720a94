//! What resources, prompts and completion share ([`super::resources`], [`super::prompts`],
//! [`super::completion`]): the capabilities a URL declares, opening the plugin that serves a
//! read, a get or a completion, and mapping its errors.
//!
//! Lists come from the registry (manifests) and open no library. A read, a get or a completion
//! opens the plugin that serves it (once, on a blocking thread) and awaits its answer, giving up
//! when the client cancels. Errors are the specification's: a URI nothing serves here is
//! `-32002` "Resource not found" with the URI in `data` (rmcp makes it `-32602` for protocol
//! 2026-07-28); an unknown prompt, a missing required argument, or a completion of a prompt or
//! template not served here is `-32602`; a plugin that fails is `-32603` with its message. An
//! argument its plugin does not complete gets no values, without opening anything.
//!
//! Capabilities are per URL, like the lists: `initialize` declares `resources` (with
//! `subscribe`) when the active set has a resource or a template, `prompts` when it has a
//! prompt, and `completions` when it has a prompt or a template (something to complete), so a
//! client is never told of lists that are empty for it. A subscription is recorded in the
//! server-wide [`crate::serve::mcp::subscriptions`], which sends `notifications/resources/updated` when a
//! plugin says the resource changed.

use std::sync::Arc;

use rmcp::{ErrorData, model::ServerCapabilities};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{prompts::prompts_capability, resources::resources_capability};
use crate::serve::generation::Generation;
use crate::{build::LoadedPlugin, call::CallError, registry::Registry, selection::ActiveSet};

/// Declares `resources`, `prompts` and `completions` in `capabilities` for what `active` has.
pub(crate) fn declare_capabilities(
    registry: &Registry,
    active: &ActiveSet,
    capabilities: &mut ServerCapabilities,
) {
    let templates = !registry.served_resource_templates(active).is_empty();
    let prompts = !registry.served_prompts(active).is_empty();
    if templates || !registry.served_resources(active).is_empty() {
        capabilities.resources = Some(resources_capability());
    }
    if prompts {
        capabilities.prompts = Some(prompts_capability());
    }
    if prompts || templates {
        capabilities.completions = Some(Default::default());
    }
}

/// The live plugin `name`, opened on a blocking thread if it is not yet.
pub(super) async fn open(
    generation: &Generation,
    name: &str,
) -> Result<Arc<LoadedPlugin>, ErrorData> {
    let builder = Arc::clone(generation.builder());
    let name = name.to_owned();
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(|| builder.plugin(&name)))
        .await
        .map_err(|e| ErrorData::internal_error(format!("opening a plugin failed: {e}"), None))?
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// `work`, unless the client cancels first.
pub(super) async fn until_cancelled<T>(
    cancel: &CancellationToken,
    work: impl Future<Output = Result<T, CallError>>,
) -> Result<T, CallError> {
    tokio::select! {
        outcome = work => outcome,
        () = cancel.cancelled() => Err(CallError::Cancelled("the request was cancelled".to_owned())),
    }
}

/// A plugin's error as MCP's: not found, invalid params, or internal.
pub(super) fn plugin_error(error: CallError, uri: Option<&str>) -> ErrorData {
    match error {
        CallError::NotFound(message) => {
            ErrorData::resource_not_found(message, uri.map(|uri| json!({"uri": uri})))
        }
        CallError::InvalidArguments(message) => ErrorData::invalid_params(message, None),
        other => ErrorData::internal_error(other.to_string(), None),
    }
}

pub(super) fn parse<T: serde::de::DeserializeOwned>(
    json: &str,
    plugin: &str,
) -> Result<T, ErrorData> {
    serde_json::from_str(json).map_err(|e| {
        ErrorData::internal_error(
            format!("plugin `{plugin}` answered invalid JSON: {e}"),
            None,
        )
    })
}

pub(super) fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Manifest;

    use serde_json::{Value, json};

    use super::*;
    use crate::serve::generation::availability::Hidden;
    use crate::serve::mcp::{prompts::*, resources::*};
    use crate::{
        discovery::DiscoveredPlugin,
        serve::mcp::subscriptions::{Bounds, Hub},
    };

    fn registry() -> Registry {
        let manifest = Manifest::from_json(
            r#"{"abi": "0.1.0", "name": "library", "version": "1",
                "toolsets": [{"name": "library", "default": false}],
                "resources": [{"uri": "test://a", "name": "a", "description": "A.",
                               "mime_type": "text/plain", "toolset": "library", "size": 3}],
                "resource_templates": [{"uri_template": "test://t/{id}", "name": "t",
                                        "toolset": "library"}],
                "prompts": [{"name": "greet", "title": "Greet", "description": "Say hello.",
                             "toolset": "library",
                             "arguments": [{"name": "who", "description": "Whom.", "required": true},
                                           {"name": "how"}]}]}"#,
        )
        .unwrap();
        Registry::new(vec![DiscoveredPlugin::library("liblibrary.so", manifest)])
    }

    fn wire(value: impl serde::Serialize) -> Value {
        serde_json::to_value(value).unwrap()
    }

    #[test]
    fn lists_have_the_mcp_shape() {
        let active = ActiveSet::from_names(["library"]);
        let registry = registry();
        assert_eq!(
            wire(list_resources(&registry, &active, &Hidden::default()))["resources"],
            json!([{"uri": "test://a", "name": "a", "description": "A.",
                    "mimeType": "text/plain", "size": 3}])
        );
        assert_eq!(
            wire(list_resource_templates(
                &registry,
                &active,
                &Hidden::default()
            ))["resourceTemplates"],
            json!([{"uriTemplate": "test://t/{id}", "name": "t"}])
        );
        assert_eq!(
            wire(list_prompts(&registry, &active, &Hidden::default()))["prompts"],
            json!([{"name": "greet", "title": "Greet", "description": "Say hello.",
                    "arguments": [{"name": "who", "description": "Whom.", "required": true},
                                  {"name": "how", "required": false}]}])
        );
        // A prompt its plugin turned off is not listed.
        let off = Hidden {
            prompts: ["greet".to_owned()].into(),
            ..Hidden::default()
        };
        let hidden = list_prompts(&registry, &active, &off);
        assert_eq!(wire(hidden)["prompts"], json!([]));
    }

    #[test]
    fn nothing_is_listed_or_declared_for_a_set_without_the_toolset() {
        let registry = registry();
        let none = ActiveSet::default();
        assert!(
            list_resources(&registry, &none, &Hidden::default())
                .resources
                .is_empty()
        );
        assert!(
            list_prompts(&registry, &none, &Hidden::default())
                .prompts
                .is_empty()
        );

        let mut capabilities = ServerCapabilities::default();
        declare_capabilities(&registry, &none, &mut capabilities);
        assert_eq!(capabilities, ServerCapabilities::default());
        declare_capabilities(
            &registry,
            &ActiveSet::from_names(["library"]),
            &mut capabilities,
        );
        assert_eq!(
            wire(&capabilities),
            json!({"completions": {}, "prompts": {"listChanged": true},
                   "resources": {"subscribe": true, "listChanged": true}})
        );
    }

    #[test]
    fn a_subscription_to_a_uri_served_here_is_recorded_until_unsubscribed() {
        let registry = registry();
        let active = ActiveSet::from_names(["library"]);
        let hub = Hub::new(Bounds {
            per_session: 2,
            uri_bytes: 12,
        });
        let session = hub.session();
        subscribe(
            &registry,
            &active,
            &Hidden::default(),
            &session,
            "test://t/7",
            "peer",
        )
        .unwrap();
        subscribe(
            &registry,
            &active,
            &Hidden::default(),
            &session,
            "test://a",
            "peer",
        )
        .unwrap();
        assert_eq!(
            session.uris().into_iter().collect::<Vec<_>>(),
            ["test://a", "test://t/7"]
        );
        session.unsubscribe("test://t/7");
        assert_eq!(session.uris().into_iter().collect::<Vec<_>>(), ["test://a"]);
        // Not served to a set without the toolset: not recorded.
        let other = hub.session();
        let error = subscribe(
            &registry,
            &ActiveSet::default(),
            &Hidden::default(),
            &other,
            "test://a",
            "x",
        )
        .unwrap_err();
        assert_eq!(error.code.0, -32002);
        assert!(other.uris().is_empty());
        let error = subscribe(
            &registry,
            &active,
            &Hidden::default(),
            &session,
            "test://nope",
            "peer",
        )
        .unwrap_err();
        assert_eq!(error.code.0, -32002);
        assert_eq!(error.data, Some(json!({"uri": "test://nope"})));
    }

    #[test]
    fn a_subscription_past_a_bound_is_invalid_params_naming_it() {
        let registry = registry();
        let active = ActiveSet::from_names(["library"]);
        let hub = Hub::new(Bounds {
            per_session: 1,
            uri_bytes: 12,
        });
        let session = hub.session();
        // Too long is said before "not found": the URI is not looked at.
        let error = subscribe(
            &registry,
            &active,
            &Hidden::default(),
            &session,
            "test://t/123456",
            "p",
        )
        .unwrap_err();
        assert_eq!(error.code.0, -32602);
        assert!(
            error.message.contains("--max-uri-length"),
            "{}",
            error.message
        );
        assert_eq!(
            error.data,
            Some(json!({"uri_length": 15, "max_uri_length": 12}))
        );
        subscribe(
            &registry,
            &active,
            &Hidden::default(),
            &session,
            "test://a",
            "p",
        )
        .unwrap();
        let error = subscribe(
            &registry,
            &active,
            &Hidden::default(),
            &session,
            "test://t/7",
            "p",
        )
        .unwrap_err();
        assert_eq!(error.code.0, -32602);
        assert!(
            error.message.contains("--max-subscriptions"),
            "{}",
            error.message
        );
        assert_eq!(error.data, Some(json!({"max_subscriptions": 1})));
    }
}
