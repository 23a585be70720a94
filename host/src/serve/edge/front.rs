//! The front door: what every request goes through before the router, in one step (one future,
//! no per-layer service clones), in this order:
//!
//! 1. the Host/Origin guard ([`crate::serve::edge::guard::guard`]); `GET /`, and a browser's
//!    `GET` of the MCP endpoint, then get the index page ([`index`]), which needs no credentials;
//! 2. the drain ([`crate::serve::edge::drain`]: while draining, 503; a POST is counted until its answer is
//!    sent);
//! 3. the caller's credentials, when authentication is on ([`crate::auth`]: every route but
//!    `/healthz`, `/readyz` and the page's files ([`ui`]), which hold no data, needs them; a
//!    missing or bad one gets 401), handed down as a [`RequestIdentity`] in the request's
//!    extensions; a session belongs to the caller that opened it, and another caller naming its
//!    id is told it does not exist (404);
//! 4. for a POST to the MCP endpoint, the session cap ([`crate::serve::edge::sessions::refuse_when_full`],
//!    sessions on) and the body check ([`crate::serve::edge::body`]: read once, bounded in size and stall
//!    time; a body that is not a JSON-RPC message gets the error that says why), then the
//!    policy's rate limits and session quota ([`crate::serve::edge::policy_gate`]).

use std::{convert::Infallible, sync::Arc};

use axum::{
    Router,
    body::Body,
    extract::Request,
    http::{Method, StatusCode},
    response::{IntoResponse as _, Response},
};
use tower::ServiceExt as _;

use crate::auth::{Authenticator, Identity, RequestIdentity, oauth, oauth::OAuth};

use crate::serve::{
    ServeState,
    edge::body::{self, BodyLimits},
    edge::drain::{self, Drain},
    edge::guard::{self, AccessPolicy},
    edge::hot,
    edge::index,
    edge::policy_gate,
    edge::sessions::{self, SESSION_ID, Sessions},
    edge::ui,
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
    /// Who may call, when authentication is on.
    pub(crate) auth: Option<Arc<Authenticator>>,
    /// What the handlers share (the registry, for the toolset of a called tool).
    pub(crate) state: Arc<ServeState>,
    /// The bounds on an MCP request's body.
    pub(crate) body: BodyLimits,
    /// Whether the page at `/ui` is served, for the index page to link to it.
    pub(crate) ui: bool,
    /// What answers the hot methods itself, unless `--no-hot-path`.
    pub(crate) hot: Option<Arc<hot::Hot>>,
}

impl Front {
    /// The page of `GET /`, naming the endpoint as `request` reached the server.
    fn index_page(&self, request: &Request) -> Response {
        let info = &self.state.info.server_info;
        let host = request
            .headers()
            .get(axum::http::header::HOST)
            .and_then(|h| h.to_str().ok());
        index::page(&info.name, &info.version, &self.mcp_path, host, self.ui)
    }

    /// Answers one request.
    pub(crate) async fn handle(self, request: Request) -> Result<Response, Infallible> {
        if let Err(refusal) = guard::guard(&self.policy, &request) {
            return Ok(refusal.into_response());
        }
        let mut request = if self.drain.is_draining() {
            match drain::admit_while_draining(request).await {
                Ok(request) => request,
                Err(refusal) => return Ok(refusal),
            }
        } else {
            request
        };
        if request.method() == Method::GET
            && (request.uri().path() == "/"
                || (request.uri().path() == &*self.mcp_path
                    && index::wants_page(request.headers())))
        {
            return Ok(self.index_page(&request));
        }
        if let Some(oauth) = self.auth.as_ref().filter(|a| a.oauth().is_some())
            && request.uri().path().starts_with(oauth::WELL_KNOWN)
        {
            return Ok(resource_metadata(oauth, &request));
        }
        let caller = match &self.auth {
            Some(auth) if needs_credentials(request.uri().path()) => {
                match auth.authenticate(request.headers()).await {
                    Ok(identity) => Some(identity),
                    Err(challenge) => return Ok(challenge.into_response()),
                }
            }
            _ => None,
        };
        if let (Some(identity), Some(sessions)) = (&caller, &self.sessions)
            && let Some(refusal) = foreign_session(
                sessions,
                request.headers().get(SESSION_ID).cloned(),
                identity,
            )
            .await
        {
            return Ok(refusal);
        }
        if caller.is_some() {
            request
                .extensions_mut()
                .insert(RequestIdentity(caller.clone()));
        }
        if request.method() == Method::DELETE
            && request.uri().path() == &*self.mcp_path
            && let Some(sessions) = &self.sessions
        {
            let router = self.router;
            return Ok(sessions::end(sessions, request, |request| async move {
                router
                    .oneshot(request)
                    .await
                    .unwrap_or_else(|never| match never {})
            })
            .await);
        }
        if request.method() != Method::POST {
            return self.router.oneshot(request).await;
        }
        let opens_session = !request.headers().contains_key(SESSION_ID);
        let in_flight = self.drain.enter();
        let response = if request.uri().path() == &*self.mcp_path {
            let (router, body) = (self.router, self.body);
            let (auth, state, identity) = (self.auth, self.state, caller.clone());
            let sessions = self.sessions.clone();
            let hot = self.hot;
            let checked =
                |request: Request| {
                    body::check_body(body, request, |request: Request| async move {
                        let request =
                            match step_up(auth.as_deref(), &state, identity.as_deref(), request)
                                .await
                            {
                                Ok(request) => request,
                                Err(challenge) => return challenge,
                            };
                        let request = match policy_gate::gate(
                            &state,
                            sessions.as_deref(),
                            identity.as_ref(),
                            request,
                        )
                        .await
                        {
                            Ok(request) => request,
                            Err(refusal) => return refusal,
                        };
                        let request = match &hot {
                            Some(hot) => match hot.answer(request).await {
                                Ok(answer) => return answer,
                                Err(request) => request,
                            },
                            None => request,
                        };
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
        if let (Some(identity), Some(sessions), true) = (&caller, &self.sessions, opens_session)
            && let Some(id) = response.headers().get(SESSION_ID)
        {
            sessions.bind(id.as_bytes(), identity.owner());
        }
        Ok(drain::hold(response, in_flight))
    }
}

/// `GET /.well-known/oauth-protected-resource[/PATH]`: the protected resource metadata
/// (RFC 9728), open to all.
fn resource_metadata(auth: &Authenticator, request: &Request) -> Response {
    let Some(oauth) = auth.oauth() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let resource = auth.resource(request.headers());
    axum::Json(oauth.metadata(&resource)).into_response()
}

/// A `tools/call` by an OAuth caller of a tool in a toolset its scopes do not open, when a
/// scope would: the 403 `insufficient_scope` challenge naming it, so the client can ask for it.
/// Anything else goes on as it came.
async fn step_up(
    auth: Option<&Authenticator>,
    state: &ServeState,
    caller: Option<&Identity>,
    request: Request,
) -> Result<Request, Response> {
    let (Some(auth), Some(caller)) = (auth, caller) else {
        return Ok(request);
    };
    // Only a bounded OAuth caller, with scopes mapped to toolsets, can be asked to step up.
    let mapped = auth.oauth().is_some_and(OAuth::maps_scopes);
    if !mapped || caller.proof != crate::auth::Proof::OAuth || caller.bound.toolsets.is_none() {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    // The body was read whole by the body check: this takes it back without waiting.
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let toolset = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .filter(|message| message["method"] == "tools/call")
        .and_then(|message| message["params"]["name"].as_str().map(str::to_owned))
        .and_then(|tool| state.toolset_of(&tool));
    if let Some(challenge) = toolset.and_then(|t| auth.step_up(&parts.headers, caller, &t)) {
        tracing::info!(
            caller = caller.name,
            "asked for a scope the token lacks: {}",
            challenge.header()
        );
        return Err(challenge.into_response());
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// Whether a request to `path` needs credentials: all but the probes and the OAuth metadata.
fn needs_credentials(path: &str) -> bool {
    !["/healthz", "/readyz"].contains(&path)
        && !path.starts_with("/.well-known/")
        && !ui::is_file(path)
}

/// The 404 rmcp gives an unknown session, for a request naming a session another caller opened:
/// to this caller, it does not exist.
async fn foreign_session(
    sessions: &Sessions,
    id: Option<axum::http::HeaderValue>,
    identity: &Identity,
) -> Option<Response> {
    let id = id?;
    if sessions.may_use(id.as_bytes(), &identity.owner()).await {
        return None;
    }
    tracing::warn!(
        caller = identity.name,
        "refused a request naming a session another caller opened"
    );
    Some((StatusCode::NOT_FOUND, "Not Found: Session not found").into_response())
}
