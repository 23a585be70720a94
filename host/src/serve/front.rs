//! The front door: what every request goes through before the router, in one step (one future,
//! no per-layer service clones): the drain ([`super::drain`]: while draining, 503; a POST is
//! counted until its answer is sent) and, for a POST to the MCP endpoint, the body check
//! ([`super::jsonrpc`]: read once, bounded in size and stall time; a body that is not a
//! JSON-RPC message gets the error that says why).

use std::{convert::Infallible, sync::Arc};

use axum::{Router, body::Body, extract::Request, http::Method, response::Response};
use hyper::body::Incoming;
use tower::ServiceExt as _;

use super::{
    drain::{self, Drain},
    jsonrpc::{self, BodyLimits},
};

/// What the front door holds; cloned per request (a few reference counts).
#[derive(Debug, Clone)]
pub(crate) struct Front {
    router: Router,
    drain: Arc<Drain>,
    mcp_path: Arc<str>,
    body: BodyLimits,
}

impl Front {
    pub(crate) fn new(router: Router, drain: Arc<Drain>, mcp_path: &str, body: BodyLimits) -> Self {
        Self {
            router,
            drain,
            mcp_path: mcp_path.into(),
            body,
        }
    }

    /// Answers one request.
    pub(crate) async fn handle(
        self,
        request: hyper::Request<Incoming>,
    ) -> Result<Response, Infallible> {
        let request = request.map(Body::new);
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
            let router = self.router;
            jsonrpc::check_body(self.body, request, |request: Request| async move {
                router
                    .oneshot(request)
                    .await
                    .unwrap_or_else(|never| match never {})
            })
            .await
        } else {
            self.router.oneshot(request).await?
        };
        Ok(drain::hold(response, in_flight))
    }
}
