//! The process a plugin may run behind (a bridged MCP server, an isolated library's child), as
//! the layers above the providers see it: its status, subscriptions to its resources, and the
//! skills it listed.
//!
//! The bridged provider implements [`Process`]; building and serving hold a `dyn Process`, so
//! they know nothing of how the process is started, talked to or restarted.

use std::{future::Future, pin::Pin, sync::Arc};

use plugin_abi::{ErrorKind, FfiError};
use rmcp::model::Skill;
use serde::Serialize;

/// A bridged server's or isolated plugin's process or connection, as `/healthz` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessStatus {
    /// The plugin (or server) name.
    pub(crate) plugin: String,
    /// `mcp_server` or `isolated_library`.
    pub(crate) kind: &'static str,
    /// The child's process id while it runs (stdio).
    pub(crate) pid: Option<u32>,
    /// Crashes or failed starts in a row.
    pub(crate) failures: u32,
    /// Whether it is parked after too many.
    pub(crate) parked: bool,
    /// Seconds until it may be started again, while it waits.
    pub(crate) retry_in_s: Option<f64>,
}

/// Where a bridged server's (or an isolated plugin's child's) `notifications/resources/updated`
/// go once a session subscribed to one of its resources: the host's subscribers, by URI.
pub type ResourceUpdates = Arc<dyn Fn(String) + Send + Sync>;

/// A future a [`Process`] answers with.
pub type ProcessFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// The future of a skill a [`Process`] is asked for.
pub(crate) type SkillFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Skill, FfiError>> + Send + 'a>>;

/// A plugin's process or connection.
pub trait Process: Send + Sync + std::fmt::Debug {
    /// Its state, as `/healthz` and `/toolsets` report it.
    fn status(&self) -> ProcessStatus;

    /// Subscribes to `uri` there (starting the process when needed); its updates then go to
    /// `updates`, with or without a call in flight.
    fn subscribe<'a>(&'a self, uri: &'a str, updates: ResourceUpdates) -> ProcessFuture<'a>;

    /// Withdraws the subscription to `uri` if `unwanted` still says nobody wants it.
    fn unsubscribe<'a>(
        &'a self,
        uri: &'a str,
        unwanted: Box<dyn Fn() -> bool + Send + 'a>,
    ) -> ProcessFuture<'a>;

    /// The skills it listed last (SEP-2640), under the URIs they are served under; `None`
    /// until it has listed.
    fn skills(&self) -> Option<Vec<Skill>> {
        None
    }

    /// Gets its skill `uri` (its own URI; `skills/get`), starting it when needed: the entry
    /// under the URIs it is served under.
    fn get_skill<'a>(&'a self, uri: &'a str) -> SkillFuture<'a> {
        Box::pin(async move {
            Err(FfiError::new(
                ErrorKind::NotFound,
                format!("no skill {uri} here"),
            ))
        })
    }
}
