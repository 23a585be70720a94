//! The app: the MCP endpoint (rmcp's streamable-HTTP service), `/healthz`, `/readyz`,
//! `/toolsets`, `/contributions` and the page at `/ui`, behind the front door; and the MCP path it is served at,
//! checked.

use std::sync::Arc;

use axum::{Router, extract::DefaultBodyLimit, routing::get};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::{
    auth::Authenticator,
    serve::{
        MAX_REQUEST_BODY_BYTES, Options, ServeError, ServeState,
        edge::{body, drain, front, guard, hot, readiness, routes, sessions, ui},
        mcp,
    },
};

/// The app: the MCP endpoint, `/healthz`, `/toolsets`, `/contributions` and (unless
/// `--no-ui`) the page at `/ui`, behind the front door ([`front`]).
pub(crate) fn front_door(
    state: Arc<ServeState>,
    args: &Options,
    path: &str,
    cancel: CancellationToken,
    drain: Arc<drain::Drain>,
    auth: Option<Arc<Authenticator>>,
) -> front::Front {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(cancel.clone())
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES)
        // The front door checks Host and Origin on every route, this one included.
        .disable_allowed_hosts()
        .disable_allowed_origins();
    if args.stateless {
        config = config
            .with_legacy_session_mode(false)
            .with_json_response(true);
    }
    // With shared state, 2025-11-25 sessions are kept in Redis too, so another replica can
    // take one over when this one is gone.
    let shared_sessions = state
        .shared
        .clone()
        .filter(|_| !args.stateless)
        .map(crate::shared::sessions::SharedSessions::new);
    if let Some(store) = &shared_sessions {
        config.session_store = Some(Arc::new(store.clone()));
    }
    let direct = Arc::new(mcp::direct::DirectSessions::default());
    let recorded = args.hot_path.then(|| Arc::clone(&direct));
    let sessions = sessions::Sessions::new(&args.sessions, shared_sessions, recorded);
    tokio::spawn(sessions::Sessions::expire_idle(
        Arc::downgrade(&sessions),
        cancel,
    ));
    let factory_state = Arc::clone(&state);
    let hot = args.hot_path.then(|| {
        let sessions = (!args.stateless).then(|| (Arc::clone(&sessions), direct));
        Arc::new(hot::Hot::new(&state, sessions))
    });
    let mcp = StreamableHttpService::new(
        move || Ok(mcp::Handler::new(Arc::clone(&factory_state))),
        Arc::clone(&sessions),
        config,
    );
    let mut router = Router::new()
        .route("/healthz", {
            // Open to anyone: with authentication on, it names no plugin.
            let detailed = auth.is_none();
            get(move |state| routes::healthz(state, detailed))
        })
        .route("/readyz", get(readiness::readyz))
        .route("/toolsets", get(routes::toolsets))
        .route("/contributions", get(routes::contributions))
        .route_service(path, mcp);
    if args.ui {
        router = ui::routes(router);
    }
    let router = router
        .with_state(Arc::clone(&state))
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY_BYTES));
    front::Front {
        router,
        policy: Arc::new(guard::AccessPolicy::new(
            &args.host,
            &args.allowed_hosts,
            &args.allowed_origins,
        )),
        drain,
        sessions: (!args.stateless).then_some(sessions),
        mcp_path: path.into(),
        auth,
        state: Arc::clone(&state),
        body: body::BodyLimits {
            max_bytes: MAX_REQUEST_BODY_BYTES,
            idle: args.connections.idle_timeout,
        },
        ui: args.ui,
        hot,
    }
}

/// The MCP path, checked: it starts with `/` and is not one of the other routes.
pub(crate) fn check_path(path: &str) -> Result<String, ServeError> {
    let path = path.trim();
    if !path.starts_with('/') || path.contains(['?', '#', '{', '}', '*']) {
        return Err(ServeError::Path {
            path: path.to_owned(),
            reason: "must be a plain URL path starting with `/`",
        });
    }
    if [
        "/",
        "/healthz",
        "/readyz",
        "/toolsets",
        "/contributions",
        ui::PATH,
    ]
    .contains(&path)
        || path.starts_with("/.well-known/")
        || path.starts_with("/ui/")
    {
        return Err(ServeError::Path {
            path: path.to_owned(),
            reason: "is taken by the server's own route",
        });
    }
    Ok(path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_must_be_a_plain_path_of_its_own() {
        assert_eq!(check_path("/mcp").unwrap(), "/mcp");
        assert_eq!(check_path("/a/b").unwrap(), "/a/b");
        assert!(check_path("mcp").is_err());
        assert!(check_path("/mcp?x").is_err());
        assert!(check_path("/{x}").is_err());
        assert!(check_path("/toolsets").is_err());
    }
}
