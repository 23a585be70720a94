//! Resources, resource templates, prompts and completions over MCP, for the active set of the
//! request's URL: `resources/list`, `resources/templates/list`, `resources/read`,
//! `resources/subscribe` and `resources/unsubscribe`, `prompts/list`, `prompts/get` and
//! `completion/complete`.
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
//! server-wide [`super::subscriptions`], which sends `notifications/resources/updated` when a
//! plugin says the resource changed.

use std::sync::{Arc, Weak};

use rmcp::{
    ErrorData,
    model::{
        CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams,
        GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
        Prompt, PromptArgument, PromptMessage, PromptsCapability, ReadResourceResult, Resource,
        ResourceContents, ResourceTemplate, ResourcesCapability, ServerCapabilities,
    },
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::{
    availability::Hidden,
    context::{Call, Finished},
    generation::Generation,
    subscriptions::{Refused, ServerHub, Session, Updates},
};
use crate::{
    build::LoadedPlugin,
    call::CallError,
    call::{Process, ResourceUpdates},
    discovery::Provider,
    registry::{CompletionOwner, Registry},
    selection::ActiveSet,
};

/// Declares `resources`, `prompts` and `completions` in `capabilities` for what `active` has.
pub(super) fn declare_capabilities(
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

/// What the server says of resources: they may be subscribed to, and their list may change
/// (when the plugins do).
pub(super) fn resources_capability() -> ResourcesCapability {
    let mut capability = ResourcesCapability::default();
    capability.subscribe = Some(true);
    capability.list_changed = Some(true);
    capability
}

/// What the server says of prompts: their list may change (when the plugins do).
pub(super) fn prompts_capability() -> PromptsCapability {
    let mut capability = PromptsCapability::default();
    capability.list_changed = Some(true);
    capability
}

/// `resources/list`: the static resources of the active set, but those their plugins turned off.
pub(super) fn list_resources(
    registry: &Registry,
    active: &ActiveSet,
    hidden: &Hidden,
) -> ListResourcesResult {
    let served = registry.served_resources(active).into_iter();
    let resources = served
        .filter(|r| !hidden.resources.contains(&r.decl.uri))
        .map(|r| {
            let d = &r.decl;
            let mut resource = Resource::new(d.uri.clone(), d.name.clone());
            resource.title.clone_from(&d.title);
            resource.description = non_empty(&d.description);
            resource.mime_type.clone_from(&d.mime_type);
            resource.size = d.size;
            resource
        });
    ListResourcesResult::with_all_items(resources.collect())
}

/// `resources/templates/list`: the templates of the active set, but those their plugins turned
/// off.
pub(super) fn list_resource_templates(
    registry: &Registry,
    active: &ActiveSet,
    hidden: &Hidden,
) -> ListResourceTemplatesResult {
    let templates = registry
        .served_resource_templates(active)
        .into_iter()
        .filter(|t| !hidden.resource_templates.contains(&t.decl.uri_template))
        .map(|t| {
            let d = &t.decl;
            let mut template = ResourceTemplate::new(d.uri_template.clone(), d.name.clone());
            template.title.clone_from(&d.title);
            template.description = non_empty(&d.description);
            template.mime_type.clone_from(&d.mime_type);
            template
        });
    ListResourceTemplatesResult::with_all_items(templates.collect())
}

/// `prompts/list`: the prompts of the active set, but those their plugins turned off.
pub(super) fn list_prompts(
    registry: &Registry,
    active: &ActiveSet,
    hidden: &Hidden,
) -> ListPromptsResult {
    let served = registry.served_prompts(active).into_iter();
    let prompts = served
        .filter(|p| !hidden.prompts.contains(&p.decl.name))
        .map(|p| {
            let d = &p.decl;
            let arguments = d
                .arguments
                .iter()
                .map(|a| {
                    let mut argument =
                        PromptArgument::new(a.name.clone()).with_required(a.required);
                    argument.description = non_empty(&a.description);
                    argument
                })
                .collect::<Vec<_>>();
            let mut prompt = Prompt::new(
                d.name.clone(),
                non_empty(&d.description),
                (!arguments.is_empty()).then_some(arguments),
            );
            prompt.title.clone_from(&d.title);
            prompt
        });
    ListPromptsResult::with_all_items(prompts.collect())
}

/// `resources/read`: the plugin serving `uri` reads it, as `call`.
pub(super) async fn read_resource(
    generation: &Generation,
    uri: &str,
    call: Call<'_>,
) -> Result<Option<Finished<Result<ReadResourceResult, ErrorData>>>, ErrorData> {
    let registry = generation.registry();
    let hidden = generation.hidden();
    let owner = registry
        .resource_owner(&call.resolution.active, uri, |o| hidden.shows(o))
        .ok_or_else(|| not_found(uri))?;
    let plugin = open(generation, owner.plugin()).await?;
    let owner = owner.plugin().to_owned();
    let mut call = call;
    call.plugin = Some(Arc::from(owner.as_str()));
    let finished = call
        .run(|host| async {
            let json = plugin
                .read_resource(uri, host)
                .await
                .map_err(|e| plugin_error(e, Some(uri)))?;
            #[derive(Deserialize)]
            struct Read {
                contents: Vec<ResourceContents>,
            }
            let read: Read = parse(&json, &owner)?;
            Ok(ReadResourceResult::new(read.contents))
        })
        .await;
    Ok(finished)
}

/// `resources/subscribe`: a URI served here is recorded for `session`, reached through `peer`.
/// Only a URI the session's active set serves is, so a session hears only of resources it can
/// read; and only within the session's bounds (URI length first, then the count), else
/// `-32602` naming the bound; not a resource its plugin turned off (`hidden`). Answers the
/// plugin serving `uri` when it runs in a process of its own, which [`subscribe_upstream`]
/// then tells. (`resources/unsubscribe` needs no check: it forgets the URI if it was recorded.)
pub(super) fn subscribe<'r, P: Clone>(
    registry: &'r Registry,
    active: &ActiveSet,
    hidden: &Hidden,
    session: &Session<P>,
    uri: &str,
    peer: P,
) -> Result<Option<&'r str>, ErrorData> {
    let refused = |refused: Refused| {
        let data = match refused {
            Refused::TooMany { limit } => json!({"max_subscriptions": limit}),
            Refused::UriTooLong { length, limit } => {
                json!({"uri_length": length, "max_uri_length": limit})
            }
        };
        ErrorData::invalid_params(refused.to_string(), Some(data))
    };
    session.bounds().check_uri(uri).map_err(refused)?;
    let owner = registry
        .resource_owner(active, uri, |o| hidden.shows(o))
        .ok_or_else(|| not_found(uri))?
        .plugin();
    session.subscribe(uri, peer).map_err(refused)?;
    let out_of_process = registry
        .plugin(owner)
        .is_some_and(|p| !matches!(p.provider, Provider::Library));
    Ok(out_of_process.then_some(owner))
}

/// Carries a subscription to `uri` to `plugin`'s process (a bridged MCP server, an isolated
/// plugin's child; started when needed), so that what it says changed reaches the host's
/// subscribers (`hub`) through `updates`, with or without a call in flight. In-process plugins
/// reach `updates` themselves. A process that cannot be reached leaves the host's subscription
/// standing, and says why in the log. When the process tells of a URI no subscriber of `hub`
/// holds any more (they unsubscribed, or their sessions ended), the subscription there is
/// withdrawn.
pub(super) async fn subscribe_upstream(
    generation: &Generation,
    plugin: &str,
    uri: &str,
    hub: &Arc<ServerHub>,
    updates: &Updates,
) {
    match open(generation, plugin).await {
        Ok(plugin) => {
            if let Some(upstream) = plugin.process() {
                let sink = upstream_updates(Arc::downgrade(upstream), hub, updates);
                upstream.subscribe(uri, sink).await;
            }
        }
        Err(error) => {
            tracing::warn!("not subscribed to {uri} on its server: {}", error.message);
        }
    }
}

/// Where `upstream`'s updates go: to `updates` while a subscriber of `hub` holds the URI;
/// otherwise the subscription there is withdrawn (unless one comes back meanwhile).
fn upstream_updates(
    upstream: Weak<dyn Process>,
    hub: &Arc<ServerHub>,
    updates: &Updates,
) -> ResourceUpdates {
    let (hub, updates) = (Arc::clone(hub), updates.clone());
    Arc::new(move |uri: String| {
        if hub.holds(&uri) {
            updates.send(uri);
            return;
        }
        let (Some(upstream), Ok(runtime)) = (upstream.upgrade(), Handle::try_current()) else {
            return;
        };
        let hub = Arc::clone(&hub);
        runtime.spawn(async move {
            upstream
                .unsubscribe(&uri, Box::new(|| !hub.holds(&uri)))
                .await;
        });
    })
}

/// `prompts/get`: checks the arguments, then the plugin serving the prompt answers, as `call`.
pub(super) async fn get_prompt(
    generation: &Generation,
    request: GetPromptRequestParams,
    call: Call<'_>,
) -> Result<Option<Finished<Result<GetPromptResult, ErrorData>>>, ErrorData> {
    let name = request.name.as_str();
    let prompt = generation
        .registry()
        .served_prompt(&call.resolution.active, name)
        .filter(|_| !generation.hidden().prompts.contains(name))
        .ok_or_else(|| {
            ErrorData::invalid_params(
                format!("Unknown prompt: {name}"),
                Some(json!({"name": name})),
            )
        })?;
    let arguments = request.arguments.unwrap_or_default();
    prompt
        .decl
        .check_arguments(|a| arguments.contains_key(a))
        .map_err(|missing| ErrorData::invalid_params(missing, None))?;
    let plugin = open(generation, &prompt.plugin).await?;
    let arguments = Value::Object(arguments).to_string();
    let mut call = call;
    call.plugin = Some(Arc::from(prompt.plugin.as_str()));
    let finished = call
        .run(|host| async {
            let json = plugin
                .get_prompt(name, arguments, host)
                .await
                .map_err(|e| plugin_error(e, None))?;
            #[derive(Deserialize)]
            struct Got {
                description: Option<String>,
                messages: Vec<PromptMessage>,
            }
            let got: Got = parse(&json, &prompt.plugin)?;
            let mut result = GetPromptResult::new(got.messages);
            result.description = got.description;
            Ok(result)
        })
        .await;
    Ok(finished)
}

/// `completion/complete`: the plugin of the prompt or template completes the argument (one its
/// plugin turned off is unknown).
pub(super) async fn complete(
    generation: &Generation,
    active: &ActiveSet,
    request: CompleteRequestParams,
    cancel: &CancellationToken,
) -> Result<CompleteResult, ErrorData> {
    let reference = serde_json::to_value(&request.r#ref)
        .and_then(serde_json::from_value)
        .map_err(|e| ErrorData::invalid_params(format!("invalid reference: {e}"), None))?;
    let owner = if generation.hidden().hides(&reference) {
        CompletionOwner::Unknown
    } else {
        generation
            .registry()
            .completion_owner(active, &reference, &request.argument.name)
    };
    let plugin = match owner {
        CompletionOwner::Unknown => {
            return Err(ErrorData::invalid_params(
                format!("Unknown {reference}: nothing here to complete"),
                None,
            ));
        }
        CompletionOwner::Nobody => return Ok(CompleteResult::default()),
        CompletionOwner::Plugin(plugin) => plugin,
    };
    let loaded = open(generation, plugin).await?;
    let request = serde_json::to_string(&request).unwrap_or_default();
    let json = until_cancelled(cancel, loaded.complete(request))
        .await
        .map_err(|e| plugin_error(e, None))?;
    let completion: CompletionInfo = parse(&json, plugin)?;
    Ok(CompleteResult::new(completion))
}

/// The live plugin `name`, opened on a blocking thread if it is not yet.
async fn open(generation: &Generation, name: &str) -> Result<Arc<LoadedPlugin>, ErrorData> {
    let builder = Arc::clone(generation.builder());
    let name = name.to_owned();
    tokio::task::spawn_blocking(move || builder.plugin(&name))
        .await
        .map_err(|e| ErrorData::internal_error(format!("opening a plugin failed: {e}"), None))?
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// `work`, unless the client cancels first.
async fn until_cancelled<T>(
    cancel: &CancellationToken,
    work: impl Future<Output = Result<T, CallError>>,
) -> Result<T, CallError> {
    tokio::select! {
        outcome = work => outcome,
        () = cancel.cancelled() => Err(CallError::Cancelled("the request was cancelled".to_owned())),
    }
}

/// A plugin's error as MCP's: not found, invalid params, or internal.
fn plugin_error(error: CallError, uri: Option<&str>) -> ErrorData {
    match error {
        CallError::NotFound(message) => {
            ErrorData::resource_not_found(message, uri.map(|uri| json!({"uri": uri})))
        }
        CallError::InvalidArguments(message) => ErrorData::invalid_params(message, None),
        other => ErrorData::internal_error(other.to_string(), None),
    }
}

fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found("Resource not found", Some(json!({"uri": uri})))
}

fn parse<T: serde::de::DeserializeOwned>(json: &str, plugin: &str) -> Result<T, ErrorData> {
    serde_json::from_str(json).map_err(|e| {
        ErrorData::internal_error(
            format!("plugin `{plugin}` answered invalid JSON: {e}"),
            None,
        )
    })
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Manifest;

    use super::*;
    use crate::{
        discovery::DiscoveredPlugin,
        serve::subscriptions::{Bounds, Hub},
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
