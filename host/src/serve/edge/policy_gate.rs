//! The policy at the front door, for a POST to the MCP endpoint whose body was read: a
//! `tools/call` over a rate limit or quota gets HTTP 429 with `Retry-After` before rmcp sees
//! it (a call let through is marked [`Counted`], so the handler does not count it again); an
//! `initialize` by a caller holding all the sessions it may gets HTTP 429 too. Each answer's
//! body is the JSON-RPC error the handler would give, with `retryAfterSeconds` in its data.

use std::sync::Arc;

use axum::{
    body::Body,
    extract::Request,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse as _, Response},
};
use serde::Deserialize;
use serde_json::json;

use crate::{
    auth::Identity,
    policy::{Denial, Policy, ToolFacts},
    serve::{
        ServeState,
        edge::sessions::{SESSION_ID, Sessions},
        mcp::{
            audit,
            policed::{Counted, TOO_MANY, Who},
        },
    },
};

/// What the gate reads of a JSON-RPC message.
#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    id: serde_json::Value,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Debug, Deserialize)]
struct Params {
    #[serde(default)]
    name: Option<String>,
}

/// `request` on its way to rmcp, counted against the policy, or the 429 refusing it.
pub(crate) async fn gate(
    state: &ServeState,
    sessions: Option<&Sessions>,
    identity: Option<&Arc<Identity>>,
    request: Request,
) -> Result<Request, Response> {
    let policy = state.policy();
    let opens = sessions.is_some()
        && identity.is_some()
        && policy.sessions_per_identity.is_some()
        && !request.headers().contains_key(SESSION_ID);
    if !policy.counts_calls() && !opens {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    // The body was read whole by the body check: this takes it back without waiting.
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let mut request = Request::from_parts(parts, Body::from(bytes.clone()));
    let Ok(message) = serde_json::from_slice::<Message>(&bytes) else {
        return Ok(request);
    };
    let who = Who::new(identity.cloned());
    match message.method.as_deref() {
        Some("initialize") if opens => {
            let (Some(sessions), Some(identity)) = (sessions, identity) else {
                return Ok(request);
            };
            let held = sessions.owned_by(&identity.owner());
            if let Some(denial) = policy.refuses_session(&who.caller(), held) {
                tracing::warn!(
                    caller = identity.name,
                    "refused a new session: {}",
                    denial.message
                );
                crate::observe::metrics::policy_denial(denial.kind.as_str());
                return Err(too_many(&denial, message.id));
            }
        }
        Some("tools/call") if policy.counts_calls() => {
            let Some(tool) = message.params.and_then(|p| p.name) else {
                return Ok(request);
            };
            if let Err(denial) = count(state, &policy, &who, &tool).await {
                audit::denied(identity.map(Arc::as_ref), &tool, &denial);
                crate::observe::metrics::policy_denial(denial.kind.as_str());
                return Err(too_many(&denial, message.id));
            }
            request.extensions_mut().insert(Counted);
        }
        _ => {}
    }
    Ok(request)
}

/// Counts a call of `tool` by `who` against the limits, when the tool is a plugin's and no
/// rule hides it from `who` (the handler refuses those, uncounted); in the counters every
/// replica shares, with `--redis-url`.
async fn count(state: &ServeState, policy: &Policy, who: &Who, tool: &str) -> Result<(), Denial> {
    let generation = state.generation();
    let registry = generation.registry();
    let Some(entry) = registry.tools().iter().find(|t| t.decl.name == tool) else {
        return Ok(());
    };
    let caller = who.caller();
    let facts = ToolFacts {
        name: tool,
        toolset: &entry.decl.toolset,
        plugin: &entry.plugin,
        annotations: &entry.decl.annotations,
    };
    // A rule reads the annotations as the tool's extensions leave them.
    if !policy.rules.allow_all() {
        let served = registry.extensions().apply_to(&entry.decl).annotations;
        let hidden = policy.hides(
            &caller,
            &ToolFacts {
                annotations: &served,
                ..facts
            },
        );
        if hidden.is_some() {
            return Ok(());
        }
    }
    match &state.shared {
        Some(shared) => policy.admit_shared(&caller, &facts, shared).await,
        None => policy.admit(&caller, &facts),
    }
}

/// HTTP 429 with `Retry-After` and the JSON-RPC error answering request `id`.
fn too_many(denial: &Denial, id: serde_json::Value) -> Response {
    let seconds = denial.retry_after_seconds();
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": TOO_MANY,
            "message": denial.message,
            "data": {
                "reason": denial.kind.as_str(),
                "rule": denial.rule,
                "retryAfterSeconds": seconds,
            },
        },
    });
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Some(seconds) = seconds {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
