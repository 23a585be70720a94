//! Opening a bridged server: start it (or connect), list its tools, resources and prompts, keep
//! the listing on disk, and hand the build stage a live instance forwarding to it.
//!
//! A cached list younger than the entry's `cache_ttl` is served as it is, and the server is
//! started by the first call instead. Every list is reviewed against the server's pins
//! (`crate::discovery::servers::pinning`) before it is served: the first is pinned, and a tool
//! that differs from its pin is reported, and held back with `--pin-tools block`. Each
//! `notifications/tools/list_changed` from the server lists it again into the cache (reviewed
//! likewise) and, when the host reloads, triggers a scan: the next
//! generation opens the server anew with that list, and the sessions serving it hear that
//! their tools changed.
//!
//! One connection per bridged server entry is shared across generations ([`Upstreams`]):
//! opening a server again (its tools changed, or the plugin folder did) keeps its running
//! process and whatever state it holds. An isolated plugin gets a new child each time it is
//! opened: its library may have been replaced.
//!
//! A server that does not start but has a cached list is still opened with that list: its
//! tools are served, and each call tries to start it again, failing with the reason while it
//! does not. Without a cached list there is nothing to serve, and the failure is the
//! activation's.

use std::sync::{Arc, Mutex, Weak};

use super::{
    instance::instance,
    upstream::{ListError, Upstream},
};
use crate::{
    build::{ActivationError, Opened},
    discovery::{
        DiscoveredPlugin,
        servers::{
            cache::{Listing, ToolCache},
            config::ServerEntry,
        },
    },
    reload::{Trigger, Triggers},
    util::{error::chain, lock::lock},
};

/// Why a bridged server (or an isolated library's child) could not be opened; each names it.
#[derive(Debug, thiserror::Error)]
enum OpenError {
    /// Its manifest cannot be written as JSON.
    #[error("{server}: its manifest cannot be written as JSON")]
    Manifest {
        /// The server's label.
        server: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// There is no async runtime to start it from.
    #[error("{server} is started from the host's async runtime, and there is none here")]
    NoRuntime {
        /// The server's label.
        server: String,
    },
    /// The task starting it panicked or was cancelled.
    #[error("{server}: starting it failed")]
    Join {
        /// The server's label.
        server: String,
        /// The cause.
        source: tokio::task::JoinError,
    },
    /// It did not start or list its tools.
    #[error(transparent)]
    List(#[from] ListError),
}

/// Starts `server` (the process or connection `plugin` stands for) and lists its tools, unless
/// `cache` (a bridged server's) holds a fresh list; blocks the calling thread (a blocking thread
/// of the host's runtime: the connection lives on that runtime). An isolated plugin has no
/// cache: its child is started and listed each time it is opened. A bridged server takes its
/// live connection from `upstreams` when it has one.
pub(crate) fn open(
    server: &Arc<ServerEntry>,
    cache: Option<&ToolCache>,
    plugin: &DiscoveredPlugin,
    upstreams: &Upstreams,
) -> Result<Opened, ActivationError> {
    let failed = |error: OpenError| ActivationError::Upstream(Arc::new(error));
    let label = || server.label();
    let manifest = &plugin.manifest;
    let manifest_json = serde_json::to_string(manifest).map_err(|source| {
        failed(OpenError::Manifest {
            server: label(),
            source,
        })
    })?;
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| failed(OpenError::NoRuntime { server: label() }))?;
    let upstream = match cache {
        Some(cache) => upstreams.get_or_make(server, || {
            let upstream = Arc::new(Upstream::new(Arc::clone(server)));
            runtime.spawn(keep_listed(
                Arc::downgrade(&upstream),
                cache.clone(),
                upstreams.relisted.clone(),
            ));
            upstream
        }),
        None => Arc::new(Upstream::new(Arc::clone(server))),
    };
    let cached = cache.and_then(|c| c.read(server));
    // What is served of a list: with a cache, as its pins allow.
    let opened = |listing: &Listing| {
        let served = cache.map(|c| c.reviewed(server, listing, true));
        Opened {
            instance: instance(
                Arc::clone(&upstream),
                served.as_ref().unwrap_or(listing),
                manifest,
            ),
            manifest_json: manifest_json.clone(),
            process: Some(Arc::clone(&upstream) as Arc<dyn crate::call::Process>),
        }
    };
    if let Some(fresh) = cached.as_ref().filter(|c| c.is_fresh(server.cache_ttl)) {
        return Ok(opened(&fresh.listing));
    }
    let listing = Arc::clone(&upstream);
    let listed = futures::executor::block_on(runtime.spawn(async move { listing.list().await }))
        .map_err(|source| {
            failed(OpenError::Join {
                server: label(),
                source,
            })
        })?;
    match listed {
        Ok(listing) => {
            if let Some(cache) = cache {
                cache.write(server, &listing);
            }
            Ok(opened(&listing))
        }
        Err(error) => match cached {
            Some(cached) => {
                tracing::warn!(
                    "{}; serving its cached tools, each call starts it again",
                    chain(&error)
                );
                Ok(opened(&cached.listing))
            }
            None => Err(failed(OpenError::List(error))),
        },
    }
}

/// The connections to bridged servers that something still uses, one per server entry, and
/// where to say a server's tools changed.
#[derive(Debug, Default)]
pub(crate) struct Upstreams {
    live: Mutex<Vec<Weak<Upstream>>>,
    relisted: Option<Triggers>,
}

impl Upstreams {
    /// No connection yet; a server saying its tools changed triggers a scan through `relisted`.
    pub(crate) fn new(relisted: Option<Triggers>) -> Self {
        Self {
            live: Mutex::default(),
            relisted,
        }
    }

    /// The live connection to a server with the same entry as `server`, else the one `make`
    /// makes.
    fn get_or_make(
        &self,
        server: &ServerEntry,
        make: impl FnOnce() -> Arc<Upstream>,
    ) -> Arc<Upstream> {
        let mut live = lock(&self.live);
        live.retain(|upstream| upstream.strong_count() > 0);
        if let Some(upstream) = live
            .iter()
            .filter_map(Weak::upgrade)
            .find(|upstream| upstream.server() == server)
        {
            return upstream;
        }
        let upstream = make();
        live.push(Arc::downgrade(&upstream));
        upstream
    }
}

/// Lists `upstream`'s server into `cache` each time it says its tools changed, while the
/// upstream lives, and sends `relisted` a trigger when it did.
async fn keep_listed(upstream: Weak<Upstream>, cache: ToolCache, relisted: Option<Triggers>) {
    let Some(changed) = upstream.upgrade().map(|u| u.tools_changed()) else {
        return;
    };
    loop {
        changed.notified().await;
        let Some(upstream) = upstream.upgrade() else {
            return;
        };
        match upstream.list().await {
            Ok(listing) => {
                let name = &upstream.server().name;
                tracing::info!(
                    "server `{name}` says its tools changed: {} listed",
                    listing.tools.len()
                );
                cache.write(upstream.server(), &listing);
                cache.reviewed(upstream.server(), &listing, true);
                if let Some(relisted) = &relisted {
                    relisted.send(Trigger::Relisted(name.clone()));
                }
            }
            Err(error) => tracing::warn!("{}; its last list is kept", chain(&error)),
        }
    }
}
