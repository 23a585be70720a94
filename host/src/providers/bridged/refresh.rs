//! `list --refresh`: ask every bridged server for its tools, resources, prompts and skills once, all at once, and keep each
//! list that comes back (reviewed against its pins: the first is pinned, changes are logged); a
//! server that fails is logged with the reason and keeps its old list.

use std::sync::Arc;

use super::upstream::Upstream;
use crate::{
    discovery::{
        DiscoveredPlugin, Provider,
        servers::{cache::ToolCache, config::ServerEntry},
    },
    util::error::chain,
};

/// Lists the tools of every bridged server among `plugins` (each start bounded by its
/// `connect_timeout`), writes the lists that come back to the cache, and stops the servers.
pub(crate) async fn refresh(plugins: &[DiscoveredPlugin]) {
    let asked = plugins.iter().filter_map(|p| match &p.provider {
        Provider::Bridged { server, cache } => Some(refresh_one(Arc::clone(server), cache)),
        Provider::Library | Provider::Isolated { .. } => None,
    });
    futures::future::join_all(asked).await;
}

/// Lists `server`'s tools into `cache`.
async fn refresh_one(server: Arc<ServerEntry>, cache: &ToolCache) {
    let upstream = Upstream::new(Arc::clone(&server));
    let listed = upstream.list().await;
    upstream.stop();
    match listed {
        Ok(listing) => {
            tracing::info!(
                "{}: {} tools, {} resources, {} resource templates, {} prompts, {} skills listed",
                server.label(),
                listing.tools.len(),
                listing.resources.len(),
                listing.resource_templates.len(),
                listing.prompts.len(),
                listing.skills.len()
            );
            cache.write(&server, &listing);
            cache.reviewed(&server, &listing, true);
        }
        Err(error) => tracing::warn!("{}; its last list is kept", chain(&error)),
    }
}
