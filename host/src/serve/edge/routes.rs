//! The plain HTTP routes beside the MCP endpoint: `GET /healthz`, `GET /toolsets` and
//! `GET /contributions`, each answered from the current generation.

use std::sync::Arc;

use axum::{
    Extension, Json,
    extract::{RawQuery, State},
    http::HeaderMap,
};
use serde_json::{Value, json};

use crate::{
    auth::RequestIdentity,
    reports::{ContributionsReport, ToolsetsReport},
    serve::ServeState,
};

/// `GET /healthz`: the server is up, with a few counts, the generation it serves and, when
/// `detailed`, the state of the processes of opened bridged servers and isolated plugins and
/// the plugins that failed to open and the files the last scan skipped (a second file of one
/// plugin among them), each with why, and the bridged servers' tools whose definitions differ
/// from their pins, and the policy's circuit breakers. Status `degraded` (still HTTP 200:
/// everything else is served) when a plugin failed to open, while a process is parked, while
/// a changed tool is not accepted, or while a circuit breaker is not closed.
/// The probe needs no credentials, so with authentication on it is not `detailed`: it names no
/// plugin, and a caller finds both lists in `/toolsets`, within its bound.
pub(crate) async fn healthz(State(state): State<Arc<ServeState>>, detailed: bool) -> Json<Value> {
    let generation = state.generation();
    let registry = generation.registry();
    let builder = generation.builder();
    let processes = builder.processes();
    let failed = crate::serve::generation::failed_plugins(&generation);
    let changed_tools = crate::reports::toolsets::changed_tools(registry);
    let breakers = state.breakers();
    let degraded = !failed.is_empty()
        || processes.iter().any(|p| p.parked)
        || !changed_tools.is_empty()
        || breakers.iter().any(|b| b.state != "closed");
    let mut health = json!({
        "status": if degraded { "degraded" } else { "ok" },
        "version": env!("CARGO_PKG_VERSION"),
        "plugins": registry.plugins().len(),
        "opened": builder.opened().len(),
        "toolsets": registry.toolsets().count(),
        "generation": generation.info(),
    });
    if detailed {
        health["processes"] = json!(processes);
        health["failed"] = json!(failed);
        health["changed_tools"] = json!(changed_tools);
        health["breakers"] = json!(breakers);
        health["skipped"] = json!(
            state
                .skipped
                .load()
                .iter()
                .map(|s| json!({"file": s.file, "reason": s.reason}))
                .collect::<Vec<_>>()
        );
    }
    Json(health)
}

/// `GET /toolsets[?query]`: what the URL with this query, and a request with these selection
/// headers, would be served, from manifests alone. Opens nothing, changes nothing.
/// To a caller, only what it may use.
pub(crate) async fn toolsets(
    State(state): State<Arc<ServeState>>,
    RawQuery(query): RawQuery,
    caller: Option<Extension<RequestIdentity>>,
    headers: HeaderMap,
) -> Json<ToolsetsReport> {
    let caller = caller.and_then(|Extension(RequestIdentity(identity))| identity);
    let generation = state.generation();
    let resolved = state.resolve(
        &generation,
        query.as_deref().unwrap_or(""),
        &headers,
        caller.as_ref().map(|c| &c.bound),
    );
    Json(state.toolsets_report(&generation, &resolved.resolution, caller.as_deref()))
}

/// `GET /contributions`: every declared tool with the extensions applied to it, in order, and
/// the pending extensions; from manifests alone. Opens nothing, changes nothing.
/// To a caller, only what it may use.
pub(crate) async fn contributions(
    State(state): State<Arc<ServeState>>,
    caller: Option<Extension<RequestIdentity>>,
) -> Json<ContributionsReport> {
    let caller = caller.and_then(|Extension(RequestIdentity(identity))| identity);
    Json(ServeState::contributions_report(
        &state.generation(),
        caller.as_deref(),
    ))
}
