//! What a request is served: its selection (its URL's query and selection headers, within its
//! caller's bound), the generation it took, its view of the served set, and what `initialize`
//! and `server/discover` say of its URL.

use std::sync::Arc;

use rmcp::{ErrorData, RoleServer, model::ServerConfig, service::RequestContext};

use crate::serve::{
    generation::Generation,
    generation::served::{Resolved, ServedView},
    mcp::contributions::{self as contributed},
    mcp::notifications::Selection,
    mcp::subscriptions::{Session, Subscriber},
    state::selection_headers,
};

use super::{Handler, caller, parts, resources};
use crate::selection::ActiveSet;

impl Handler {
    /// The request's selection as a listener keeps it: its URL's query and selection headers.
    pub(super) fn selection(context: &RequestContext<RoleServer>) -> Selection {
        let parts = parts(context);
        Selection {
            query: parts
                .and_then(|p| p.uri.query())
                .unwrap_or_default()
                .to_owned(),
            headers: parts
                .map(|p| selection_headers(&p.headers))
                .unwrap_or_default(),
            bound: caller(context).map(|c| c.bound.clone()),
        }
    }

    /// The current generation, and the request's selection (its URL and selection headers,
    /// within its caller's bound) in it, from manifests alone. The request is served from that generation to its end.
    pub(super) fn resolved(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> (Arc<Generation>, Arc<Resolved>) {
        let parts = parts(context);
        let query = parts.and_then(|p| p.uri.query()).unwrap_or_default();
        let no_headers = axum::http::HeaderMap::new();
        let caller = caller(context);
        let generation = self.state.generation();
        let resolved = self.state.resolve(
            &generation,
            query,
            parts.map_or(&no_headers, |p| &p.headers),
            caller.as_ref().map(|c| &c.bound),
        );
        (generation, resolved)
    }

    /// The current generation, and the request's selection's active set in it.
    /// Subscribes `session`, reached through `subscriber`, to `uri` as `active` serves it on
    /// `generation`, and the process serving it there, if one does.
    pub(super) async fn subscribe_to(
        &self,
        generation: &Generation,
        active: &ActiveSet,
        session: &Session<Subscriber>,
        uri: &str,
        subscriber: Subscriber,
    ) -> Result<(), ErrorData> {
        let hidden = generation.hidden();
        let registry = generation.registry();
        let process = resources::subscribe(registry, active, hidden, session, uri, subscriber)?;
        if let Some(plugin) = process {
            let state = &self.state;
            resources::subscribe_upstream(
                generation,
                plugin,
                uri,
                &state.subscriptions,
                &state.updates,
            )
            .await;
        }
        Ok(())
    }

    pub(super) fn active(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> (Arc<Generation>, ActiveSet) {
        let (generation, resolved) = self.resolved(context);
        (generation, resolved.resolution.active.clone())
    }

    /// The view of `resolved` on `generation`, opening the plugins of its set on first use.
    pub(super) async fn view_of(
        &self,
        generation: &Generation,
        resolved: &Resolved,
    ) -> Result<Arc<ServedView>, ErrorData> {
        generation.sets.view(resolved).await.map_err(|e| {
            tracing::error!("{e}");
            ErrorData::internal_error(e, None)
        })
    }

    /// Fills in what `initialize` and `server/discover` say per URL: the instructions of the
    /// served set, and the capabilities of what its active set has.
    pub(super) async fn describe_url(
        &self,
        context: &RequestContext<RoleServer>,
        info: &mut ServerConfig,
    ) -> Result<(), ErrorData> {
        let (generation, resolved) = self.resolved(context);
        let resolution = &resolved.resolution;
        // Discovery mode opens nothing before a call: its instructions come from the manifests.
        info.instructions = if resolution.mode.discover {
            Some(crate::build::instructions(
                generation.registry(),
                &resolution.active,
            ))
            .filter(|i| !i.is_empty())
        } else {
            self.view_of(&generation, &resolved)
                .await?
                .set()
                .instructions()
        };
        // What `get_info` says of resources and prompts is the whole server's; this URL says
        // its own.
        info.capabilities.resources = None;
        info.capabilities.prompts = None;
        contributed::declare_capabilities(
            generation.registry(),
            &resolution.active,
            &mut info.capabilities,
        );
        super::skills::declare(&generation, &resolution.active, &mut info.capabilities);
        Ok(())
    }
}
