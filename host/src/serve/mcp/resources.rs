//! Resources over MCP for the active set of the request's URL: `resources/list`,
//! `resources/templates/list` and `resources/read`, and subscribing to a resource (recorded in
//! [`super::subscriptions`], and carried to the process serving it when it runs out of
//! process). A URI nothing serves here is `-32002` "Resource not found" with the URI in `data`.

use std::sync::{Arc, Weak};

use rmcp::{
    ErrorData,
    model::{
        ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
        ResourceContents, ResourceTemplate, ResourcesCapability,
    },
};
use serde::Deserialize;
use serde_json::json;
use tokio::runtime::Handle;

use super::contributions::{non_empty, open, parse, plugin_error};
use crate::serve::{
    generation::Generation,
    generation::availability::Hidden,
    host_context::{Call, Finished},
    mcp::subscriptions::{Refused, ServerHub, Session, Updates},
};
use crate::{
    call::{Process, ResourceUpdates},
    discovery::Provider,
    registry::Registry,
    selection::ActiveSet,
};

/// What the server says of resources: they may be subscribed to, and their list may change
/// (when the plugins do).
pub(crate) fn resources_capability() -> ResourcesCapability {
    let mut capability = ResourcesCapability::default();
    capability.subscribe = Some(true);
    capability.list_changed = Some(true);
    capability
}

/// `resources/list`: the static resources of the active set, but those their plugins turned off.
pub(crate) fn list_resources(
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
pub(crate) fn list_resource_templates(
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

/// `resources/read`: the plugin serving `uri` reads it, as `call`.
pub(crate) async fn read_resource(
    generation: &Generation,
    uri: &str,
    call: Call<'_>,
) -> Result<Option<Finished<Result<ReadResourceResult, ErrorData>>>, ErrorData> {
    let registry = generation.registry();
    let hidden = generation.hidden();
    let owner = registry
        .resource_owner(&call.resolution.active, uri, |o| hidden.shows(o))
        .ok_or_else(|| not_found(uri))?;
    read_from(generation, owner.plugin(), uri, call, |uri| uri).await
}

/// `resources/read` of `uri` from the plugin `owner`, as `call`; each contents' URI as
/// `served` names it.
pub(crate) async fn read_from(
    generation: &Generation,
    owner: &str,
    uri: &str,
    call: Call<'_>,
    served: impl Fn(String) -> String + Send,
) -> Result<Option<Finished<Result<ReadResourceResult, ErrorData>>>, ErrorData> {
    let plugin = open(generation, owner).await?;
    let owner = owner.to_owned();
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
            let mut contents = read.contents;
            for each in &mut contents {
                if let ResourceContents::TextResourceContents { uri, .. }
                | ResourceContents::BlobResourceContents { uri, .. } = each
                {
                    *uri = served(std::mem::take(uri));
                }
            }
            Ok(ReadResourceResult::new(contents))
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
pub(crate) fn subscribe<'r, P: Clone>(
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
pub(crate) async fn subscribe_upstream(
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
pub(super) fn upstream_updates(
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

pub(super) fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found("Resource not found", Some(json!({"uri": uri})))
}
