//! Opening a bridged server: start it (or connect), list its tools, resources and prompts, keep
//! the listing on disk, and hand the build stage a live instance forwarding to it.
//!
//! A cached list younger than the entry's `cache_ttl` is served as it is, and the server is
//! started by the first call instead. Each `notifications/tools/list_changed` from the server
//! lists its tools again into the cache, which the next start of the host serves (the tools
//! served now stay as they were opened).
//!
//! A server that does not start but has a cached list is still opened with that list: its
//! tools are served, and each call tries to start it again, failing with the reason while it
//! does not. Without a cached list there is nothing to serve, and the failure is the
//! activation's.

use std::sync::{Arc, Weak};

use super::{
    cache::{Listing, ToolCache},
    config::ServerEntry,
    instance::instance,
    upstream::Upstream,
};
use crate::{
    build::{ActivationError, Opened},
    discovery::DiscoveredPlugin,
};

/// Starts `server` (the process or connection `plugin` stands for) and lists its tools, unless
/// `cache` (a bridged server's) holds a fresh list; blocks the calling thread (a blocking thread
/// of the host's runtime: the connection lives on that runtime). An isolated plugin has no
/// cache: its child is started and listed each time it is opened.
pub fn open(
    server: &Arc<ServerEntry>,
    cache: Option<&ToolCache>,
    plugin: &DiscoveredPlugin,
) -> Result<Opened, ActivationError> {
    let failed = |reason: String| ActivationError::Upstream {
        plugin: server.name.clone(),
        reason,
    };
    let manifest = &plugin.manifest;
    let manifest_json = serde_json::to_string(manifest).map_err(|e| failed(e.to_string()))?;
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
        failed(
            "bridged servers and isolated plugins are started from the host's async runtime, and there is none here"
                .to_owned(),
        )
    })?;
    let upstream = Arc::new(Upstream::new(Arc::clone(server)));
    if let Some(cache) = cache {
        runtime.spawn(keep_listed(Arc::downgrade(&upstream), cache.clone()));
    }
    let cached = cache.and_then(|c| c.read(server));
    let opened = |listing: &Listing| Opened {
        instance: instance(Arc::clone(&upstream), listing, manifest),
        manifest_json: manifest_json.clone(),
        process: Some(Arc::clone(&upstream)),
    };
    if let Some(fresh) = cached.as_ref().filter(|c| c.is_fresh(server.cache_ttl)) {
        return Ok(opened(&fresh.listing));
    }
    let listing = Arc::clone(&upstream);
    let listed = futures::executor::block_on(runtime.spawn(async move { listing.list().await }))
        .map_err(|e| failed(format!("starting it failed: {e}")))?;
    match listed {
        Ok(listing) => {
            if let Some(cache) = cache {
                cache.write(server, &listing);
            }
            Ok(opened(&listing))
        }
        Err(reason) => match cached {
            Some(cached) => {
                tracing::warn!("{reason}; serving its cached tools, each call starts it again");
                Ok(opened(&cached.listing))
            }
            None => Err(failed(reason)),
        },
    }
}

/// Lists the tools of `upstream`'s server into `cache` each time it says they changed, while
/// the upstream lives.
async fn keep_listed(upstream: Weak<Upstream>, cache: ToolCache) {
    let Some(changed) = upstream.upgrade().map(|u| u.tools_changed()) else {
        return;
    };
    loop {
        changed.notified().await;
        let Some(upstream) = upstream.upgrade() else {
            return;
        };
        match upstream.list().await {
            Ok(listing) => cache.write(upstream.server(), &listing),
            Err(reason) => tracing::warn!("{reason}; its last list is kept"),
        }
    }
}
