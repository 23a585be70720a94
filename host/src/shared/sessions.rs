//! 2025-11-25 sessions in Redis, so a session outlives its replica: rmcp's [`SessionStore`]
//! keeps each session's `initialize` parameters, and another replica that is sent a request
//! naming the session replays the handshake from them (rmcp does that). Beside them, the
//! caller that opened the session, so no one else may take it over on another replica.
//!
//! A record lives [`SESSION_TTL`] past its last write and is deleted when the session ends.

use std::{sync::Arc, time::Duration};

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};

use super::{Shared, SharedError};

/// How long a session's record lives without being written again.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The sessions of a deployment, in Redis.
#[derive(Debug, Clone)]
pub(crate) struct SharedSessions {
    shared: Arc<Shared>,
}

impl SharedSessions {
    /// The sessions kept through `shared`.
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    fn state_key(&self, id: &str) -> String {
        self.shared.key(&format!("session:{id}"))
    }

    fn owner_key(&self, id: &str) -> String {
        self.shared.key(&format!("session:{id}:owner"))
    }

    /// Records that `owner` opened the session `id`.
    pub(crate) fn bind(&self, id: &str, owner: &str) {
        self.shared.put(self.owner_key(id), &owner, SESSION_TTL);
    }

    /// The caller that opened the session `id`, if it was bound to one.
    pub(crate) async fn owner(&self, id: &str) -> Result<Option<String>, SharedError> {
        self.shared.get(&self.owner_key(id)).await
    }

    /// Forgets the session `id` (it ended).
    pub(crate) fn forget(&self, id: &str) {
        self.shared.delete(self.state_key(id));
        self.shared.delete(self.owner_key(id));
    }
}

#[async_trait::async_trait]
impl SessionStore for SharedSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        Ok(self.shared.get(&self.state_key(session_id)).await?)
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        self.shared
            .put(self.state_key(session_id), state, SESSION_TTL);
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.forget(session_id);
        Ok(())
    }
}
