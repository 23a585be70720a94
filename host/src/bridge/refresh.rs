//! `list --refresh`: ask every bridged server for its tools once, all at once, and keep each
//! list that comes back; a server that fails is logged with the reason and keeps its old list.

use std::sync::Arc;

use super::{cache::ToolCache, config::ServerEntry, upstream::Upstream};
use crate::discovery::{DiscoveredPlugin, Provider};

/// Lists the tools of every bridged server among `plugins` (each start bounded by its
/// `connect_timeout`), writes the lists that come back to the cache, and stops the servers.
pub async fn refresh(plugins: &[DiscoveredPlugin]) {
    let asked = plugins.iter().filter_map(|p| match &p.provider {
        Provider::Bridged { server, cache } => Some(refresh_one(Arc::clone(server), cache)),
        Provider::Library => None,
    });
    futures::future::join_all(asked).await;
}

/// Lists `server`'s tools into `cache`.
async fn refresh_one(server: Arc<ServerEntry>, cache: &ToolCache) {
    let upstream = Upstream::new(Arc::clone(&server));
    let listed = upstream.list_tools().await;
    upstream.stop();
    match listed {
        Ok(tools) => {
            tracing::info!("server `{}`: {} tools listed", server.name, tools.len());
            cache.write(&server, &tools);
        }
        Err(reason) => tracing::warn!("{reason}; its last list is kept"),
    }
}
