//! Sessions being taken over from another replica, and the requests that wait for them.
//!
//! rmcp takes a session over in steps: it asks the session manager for a worker, then replays
//! the session's `initialize` and `notifications/initialized` through it. A request for the
//! same session that arrives between those steps must not reach the worker before the replayed
//! `initialize` (the worker would fail the handshake and answer 500), so while a take-over is
//! under way, asking whether the session exists waits until its handshake is replayed.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use rmcp::transport::common::server_side_http::SessionId;
use tokio::sync::watch;

use crate::util::lock::lock;

/// The longest a request waits for a take-over of its session (a replay opens the session's
/// plugins, which a slow disk can make take seconds).
const PATIENCE: Duration = Duration::from_secs(30);

/// The take-overs under way; each says, once it ended, whether the session is served.
#[derive(Debug, Default)]
pub(crate) struct Takeovers(Mutex<HashMap<SessionId, watch::Sender<Option<bool>>>>);

impl Takeovers {
    /// Starts the take-over of `id`.
    pub(crate) fn begin(&self, id: &SessionId) {
        lock(&self.0).insert(SessionId::clone(id), watch::Sender::new(None));
    }

    /// Ends the take-over of `id`, if one is under way: `served` says whether it succeeded.
    pub(crate) fn end(&self, id: &SessionId, served: bool) {
        if let Some(done) = lock(&self.0).remove(id) {
            done.send_replace(Some(served));
        }
    }

    /// None if `id` is not being taken over; else, once the take-over ended, whether the
    /// session is served (false if it took longer than [`PATIENCE`]).
    pub(crate) async fn wait(&self, id: &SessionId) -> Option<bool> {
        let mut done = lock(&self.0).get(id)?.subscribe();
        let ended = tokio::time::timeout(PATIENCE, done.wait_for(Option::is_some)).await;
        Some(matches!(ended, Ok(Ok(served)) if *served == Some(true)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> SessionId {
        SessionId::from("s-1")
    }

    #[tokio::test]
    async fn a_session_not_taken_over_is_not_waited_for() {
        assert_eq!(Takeovers::default().wait(&id()).await, None);
    }

    #[tokio::test]
    async fn a_waiter_hears_how_the_take_over_ended() {
        for served in [true, false] {
            let takeovers = std::sync::Arc::new(Takeovers::default());
            takeovers.begin(&id());
            let waiter = tokio::spawn({
                let takeovers = std::sync::Arc::clone(&takeovers);
                async move { takeovers.wait(&id()).await }
            });
            tokio::task::yield_now().await;
            takeovers.end(&id(), served);
            assert_eq!(waiter.await.unwrap(), Some(served));
            assert_eq!(takeovers.wait(&id()).await, None, "ended");
        }
    }
}
