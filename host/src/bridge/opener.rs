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

use plugin_manifest::Manifest;

use super::{
    cache::{Listing, ToolCache},
    config::ServerEntry,
    instance::instance,
    upstream::Upstream,
};
use crate::build::{ActivationError, Opened};

/// Starts `server` and lists its tools (unless its cached list is fresh), blocking the calling
/// thread (a blocking thread of the host's runtime: the connection lives on that runtime).
pub fn open(
    server: &Arc<ServerEntry>,
    cache: &ToolCache,
    manifest: &Manifest,
    manifest_json: String,
) -> Result<Opened, ActivationError> {
    let failed = |reason: String| ActivationError::Upstream {
        plugin: server.name.clone(),
        reason,
    };
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
        failed(
            "bridged servers are started from the host's async runtime, and there is none here"
                .to_owned(),
        )
    })?;
    let upstream = Arc::new(Upstream::new(Arc::clone(server)));
    runtime.spawn(keep_listed(Arc::downgrade(&upstream), cache.clone()));
    let cached = cache.read(server);
    let opened = |listing: &Listing| Opened {
        instance: instance(Arc::clone(&upstream), listing, manifest),
        manifest_json: manifest_json.clone(),
    };
    if let Some(fresh) = cached.as_ref().filter(|c| c.is_fresh(server.cache_ttl)) {
        return Ok(opened(&fresh.listing));
    }
    let listing = Arc::clone(&upstream);
    let listed = futures::executor::block_on(runtime.spawn(async move { listing.list().await }))
        .map_err(|e| failed(format!("starting it failed: {e}")))?;
    match listed {
        Ok(listing) => {
            cache.write(server, &listing);
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
