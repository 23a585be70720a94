//! A session's logging level (`logging/setLevel`), and the level a request's messages are
//! sent at under 2026-07-28 (its own `logLevel`).

use std::sync::{
    Arc,
    atomic::{AtomicU8, Ordering},
};

use rmcp::model::ProtocolVersion;
use rmcp::{RoleServer, model::LoggingLevel, service::RequestContext};

use super::*;
use crate::call::level::level_number;

/// A session's logging level, shared by its handler and every call's context.
#[derive(Debug, Clone)]
pub(crate) struct SessionLevel(Arc<AtomicU8>);

impl Default for SessionLevel {
    fn default() -> Self {
        Self(Arc::new(AtomicU8::new(DEFAULT_LOG_LEVEL.to_u8())))
    }
}

impl SessionLevel {
    /// Sets the level (`logging/setLevel`).
    pub(crate) fn set(&self, level: LoggingLevel) {
        self.0.store(level_number(level), Ordering::Relaxed);
    }

    /// The level that applies to `request`: the session's, or, for a request of 2026-07-28 or
    /// later, the request's own `logLevel`, with nothing sent when it names none.
    pub(super) fn for_request(&self, request: &RequestContext<RoleServer>) -> Self {
        self.for_version(request.protocol_version(), request.meta.log_level())
    }
}

impl SessionLevel {
    /// The level for a request of `version` that asks for `asked`.
    pub(super) fn for_version(
        &self,
        version: Option<ProtocolVersion>,
        asked: Option<LoggingLevel>,
    ) -> Self {
        if !is_2026(version.as_ref()) {
            return self.clone();
        }
        let level = asked.map_or(SILENT, level_number);
        Self(Arc::new(AtomicU8::new(level)))
    }

    /// Whether a message at `level` (0 = debug ... 7 = emergency) is sent.
    pub(super) fn lets_through(&self, level: u8) -> bool {
        level >= self.0.load(Ordering::Relaxed)
    }
}

/// A level above every message's: nothing is sent.
pub(super) const SILENT: u8 = 8;
