//! Readiness (`GET /readyz`), apart from liveness (`GET /healthz`): whether a load balancer
//! should send this replica new requests. Ready once the plugins are scanned (before the
//! listener binds), while the watcher runs when files are watched, and until shutting down
//! begins: a shutdown signal turns `/readyz` to 503 first, and the server serves on for
//! `--shutdown-delay` before it drains, so a balancer stops sending before requests are
//! refused. With `--redis-url`, ready only while Redis answers and the replica hears the
//! others.

use std::sync::{
    Mutex,
    atomic::{AtomicBool, Ordering},
};

use axum::{
    Json,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde_json::json;

use crate::{serve::ServeState, util::lock::lock};

/// What readiness depends on besides the scan: the watcher, and whether the server is leaving.
#[derive(Debug, Default)]
pub(crate) struct Readiness {
    leaving: AtomicBool,
    watcher: Mutex<Watcher>,
    /// This replica's name (`--replica-id`), which `/readyz` says.
    replica: Option<String>,
}

/// The watcher's state, as `/readyz` says it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Watcher {
    /// Files are not watched (`--no-watch`, or no folder to watch): nothing to wait for.
    #[default]
    Off,
    /// Files are watched.
    Running,
    /// Watching was asked for and could not start, for this reason.
    Failed(String),
}

impl Readiness {
    /// The readiness of the replica `replica`, if it has a name.
    pub(crate) fn new(replica: Option<String>) -> Self {
        Self {
            replica,
            ..Self::default()
        }
    }

    /// Says how the watcher is.
    pub(crate) fn set_watcher(&self, watcher: Watcher) {
        *lock(&self.watcher) = watcher;
    }

    /// Shutting down begins: not ready from now on.
    pub(crate) fn leave(&self) {
        self.leaving.store(true, Ordering::Relaxed);
    }

    /// Why the server is not ready; empty when it is.
    pub(crate) fn reasons(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        if self.leaving.load(Ordering::Relaxed) {
            reasons.push("shutting down".to_owned());
        }
        if let Watcher::Failed(why) = &*lock(&self.watcher) {
            reasons.push(format!("the plugin folder is not watched: {why}"));
        }
        reasons
    }

    fn watcher_name(&self) -> &'static str {
        match &*lock(&self.watcher) {
            Watcher::Off => "off",
            Watcher::Running => "running",
            Watcher::Failed(_) => "failed",
        }
    }
}

/// `GET /readyz`: 200 `{"status": "ready", ...}` (with the replica's name, when it has one), or 503 `{"status": "not_ready", "reasons":
/// [...]}`. Open to anyone, like `/healthz`: it names no plugin.
pub(crate) async fn readyz(State(state): State<std::sync::Arc<ServeState>>) -> Response {
    let readiness = &state.readiness;
    let mut reasons = readiness.reasons();
    let redis = state
        .shared
        .as_ref()
        .map(|shared| match shared.unreachable() {
            Some(why) => {
                reasons.push(why);
                "unreachable"
            }
            None => "connected",
        });
    let body = json!({
        "status": if reasons.is_empty() { "ready" } else { "not_ready" },
        "reasons": reasons,
        "watcher": readiness.watcher_name(),
        "replica": readiness.replica,
        "redis": redis,
        "generation": state.generation().info().number,
    });
    let status = if reasons.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_until_leaving_or_a_failed_watcher() {
        let readiness = Readiness::default();
        assert!(readiness.reasons().is_empty());
        readiness.set_watcher(Watcher::Running);
        assert!(readiness.reasons().is_empty());
        readiness.set_watcher(Watcher::Failed("too many inotify watches".into()));
        assert_eq!(
            readiness.reasons(),
            ["the plugin folder is not watched: too many inotify watches"]
        );
        readiness.set_watcher(Watcher::Off);
        readiness.leave();
        assert_eq!(readiness.reasons(), ["shutting down"]);
    }
}
