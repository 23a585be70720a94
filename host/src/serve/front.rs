//! The front door: what every request goes through before the router, in one step (one future,
//! no per-layer service clones), in this order:
//!
//! 1. the Host/Origin guard ([`super::http::guard`]);
//! 2. the drain ([`super::drain`]: while draining, 503; a POST is counted until its answer is
//!    sent);
//! 3. for a POST to the MCP endpoint, the session cap ([`super::sessions::refuse_when_full`],
//!    sessions on) and the body check ([`super::jsonrpc`]: read once, bounded in size and stall
//!    time; a body that is not a JSON-RPC message gets the error that says why).

use std::{convert::Infallible, sync::Arc};

use axum::{
    Router,
    body::Body,
    extract::Request,
    http::Method,
    response::{IntoResponse as _, Response},
};
use hyper::body::Incoming;
use tower::ServiceExt as _;

use super::{
    drain::{self, Drain},
    http::{self, AccessPolicy},
    jsonrpc::{self, BodyLimits},
    sessions::{self, Sessions},
};

/// What the front door holds; cloned per request (a few reference counts).
#[derive(Debug, Clone)]
pub(crate) struct Front {
    /// The routes behind the door.
    pub(crate) router: Router,
    /// Which `Host` and `Origin` headers are accepted.
    pub(crate) policy: Arc<AccessPolicy>,
    /// The drain state.
    pub(crate) drain: Arc<Drain>,
    /// The session manager, when sessions are on.
    pub(crate) sessions: Option<Arc<Sessions>>,
    /// The MCP endpoint's path.
    pub(crate) mcp_path: Arc<str>,
    /// The bounds on an MCP request's body.
    pub(crate) body: BodyLimits,
}

impl Front {
    /// Answers one request.
    pub(crate) async fn handle(
        self,
        request: hyper::Request<Incoming>,
    ) -> Result<Response, Infallible> {
        let request = request.map(Body::new);
        if let Err(refusal) = http::guard(&self.policy, &request) {
            return Ok(refusal.into_response());
        }
        let request = if self.drain.is_draining() {
            match drain::admit_while_draining(request).await {
                Ok(request) => request,
                Err(refusal) => return Ok(refusal),
            }
        } else {
            request
        };
        if request.method() != Method::POST {
            return self.router.oneshot(request).await;
        }
        let in_flight = self.drain.enter();
        let response = if request.uri().path() == &*self.mcp_path {
            let (router, body) = (self.router, self.body);
            let checked = |request: Request| {
                jsonrpc::check_body(body, request, |request: Request| async move {
                    router
                        .oneshot(request)
                        .await
                        .unwrap_or_else(|never| match never {})
                })
            };
            match &self.sessions {
                Some(sessions) => sessions::refuse_when_full(sessions, request, checked).await,
                None => checked(request).await,
            }
        } else {
            self.router.oneshot(request).await?
        };
        Ok(drain::hold(response, in_flight))
    }
}
