//! What the host needs to answer a request itself, in the task that reads it
//! (`crate::serve::edge::hot`), instead of through rmcp's per-request machinery:
//!
//! - [`DirectSessions`]: each 2025-11-25 session's handler and the peer to its client, left in
//!   a [`Slot`] by its `initialize`, recorded by the session manager before the answer goes
//!   out, and forgotten when the session closes;
//! - [`InFlight`]: a session's requests answered that way, for a `notifications/cancelled`
//!   (which reaches the session's handler through rmcp) to end;
//! - [`detached_peer`]: for a request without a session, a peer whose messages go nowhere
//!   (the request's `Outlet` takes its notifications), as rmcp gives each such request a
//!   peer of its own;
//! - [`read`]: a hot method's request (`tools/call`, `tools/list`, `ping`) read with typed serde
//!   straight from its bytes;
//! - [`Handler::answer_directly`]: the request served by rmcp's own dispatch
//!   (`Service::handle_request`: version checks, capability guards, the method's handler), and
//!   its answer as a JSON-RPC message.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock, RwLock},
};

use axum::body::Bytes;
use rmcp::{
    Peer, RoleServer, ServerHandler, Service as _,
    model::{
        CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientRequest, Implementation,
        InitializeRequestParams, ListToolsRequest, PaginatedRequestParams, PingRequest,
        ProtocolVersion, RequestId, RequestMetaObject, ServerJsonRpcMessage,
    },
    service::RequestContext,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::Handler;
use crate::util::lock::lock;

/// A session the host may answer requests of itself: its handler and the peer to its client.
#[derive(Debug, Clone)]
pub(crate) struct Direct {
    /// The session's handler (its log level, subscriptions, calls in flight).
    pub(crate) handler: Handler,
    /// The session's peer: its client's capabilities, and where its log messages go.
    pub(crate) peer: Peer<RoleServer>,
}

/// The open sessions the host may answer requests of itself, by session id.
#[derive(Debug, Default)]
pub(crate) struct DirectSessions(RwLock<HashMap<Arc<str>, Direct>>);

impl DirectSessions {
    /// The session `id`, once its client said it is initialized.
    pub(crate) fn get(&self, id: &str) -> Option<Direct> {
        let sessions = self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sessions.get(id).cloned()
    }

    /// Forgets the session `id` (it closed).
    pub(crate) fn remove(&self, id: &str) {
        let mut sessions = self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sessions.remove(id);
    }

    /// Records the session `id`.
    pub(crate) fn insert(&self, id: Arc<str>, direct: Direct) {
        let mut sessions = self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sessions.insert(id, direct);
    }
}

/// A session's requests answered by the host itself, each with the token that cancels it.
#[derive(Debug, Default)]
pub(crate) struct InFlight(Mutex<HashMap<RequestId, CancellationToken>>);

impl InFlight {
    /// Records request `id`, cancelled by `ct`, until the guard is dropped.
    fn track(self: &Arc<Self>, id: &RequestId, ct: &CancellationToken) -> Tracked {
        lock(&self.0).insert(id.clone(), ct.clone());
        Tracked {
            in_flight: Arc::clone(self),
            id: id.clone(),
        }
    }

    /// Cancels request `id`, if it is in flight.
    pub(super) fn cancel(&self, id: &RequestId) {
        if let Some(ct) = lock(&self.0).remove(id) {
            tracing::info!(%id, "cancelled");
            ct.cancel();
        }
    }
}

/// A request in [`InFlight`]; forgotten when dropped.
struct Tracked {
    in_flight: Arc<InFlight>,
    id: RequestId,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        lock(&self.in_flight.0).remove(&self.id);
    }
}

/// Where a session's `initialize` leaves its handler and peer, for the session manager to
/// record the session under its id (which the handler does not know) before the answer goes
/// out: an extension of the `initialize` request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Slot(Arc<OnceLock<Direct>>);

impl Slot {
    /// What the session's `initialize` left.
    pub(crate) fn take(self) -> Option<Direct> {
        self.0.get().cloned()
    }
}

impl Handler {
    /// Leaves this handler and the session's peer in the request's [`Slot`], if it has one.
    pub(super) fn fill_slot(&self, context: &RequestContext<RoleServer>) {
        if let Some(slot) = context.extensions.get::<Slot>() {
            let direct = Direct {
                handler: self.clone(),
                peer: context.peer.clone(),
            };
            let _ = slot.0.set(direct);
        }
    }

    /// Serves `request` as rmcp's service loop would, in the caller's task; when
    /// `cancellable` (a request of a session), the client can cancel it
    /// (`notifications/cancelled`) meanwhile.
    pub(crate) async fn answer_directly(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
        cancellable: bool,
    ) -> ServerJsonRpcMessage {
        let id = context.id.clone();
        let _tracked = cancellable.then(|| self.in_flight.track(&id, &context.ct));
        match self.handle_request(request, context).await {
            Ok(result) => ServerJsonRpcMessage::response(result, id),
            Err(error) => {
                tracing::debug!(%id, ?error, "response error");
                ServerJsonRpcMessage::error(error, Some(id))
            }
        }
    }
}

/// A JSON-RPC message's envelope, its `params` unread.
#[derive(Deserialize)]
struct Envelope<'a> {
    jsonrpc: &'a str,
    id: RequestId,
    method: &'a str,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// The id, the typed request and the `_meta` of a hot method's body, as rmcp reads them (the
/// `_meta` apart from the params); `None` for anything else.
pub(crate) fn read(bytes: &[u8]) -> Option<(RequestId, ClientRequest, RequestMetaObject)> {
    let envelope: Envelope<'_> = serde_json::from_slice(bytes).ok()?;
    if envelope.jsonrpc != "2.0" {
        return None;
    }
    let params = envelope.params.map(RawValue::get);
    let (request, meta) = match envelope.method {
        "tools/call" => {
            let mut params: CallToolRequestParams = serde_json::from_str(params?).ok()?;
            let meta = params.meta.take();
            let call = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            (call, meta)
        }
        "tools/list" => {
            let mut params = match params {
                Some(params) => Some(serde_json::from_str::<PaginatedRequestParams>(params).ok()?),
                None => None,
            };
            let meta = params.as_mut().and_then(|p| p.meta.take());
            let list = ClientRequest::ListToolsRequest(ListToolsRequest {
                params,
                ..ListToolsRequest::default()
            });
            (list, meta)
        }
        "ping" if params.is_none() => (ClientRequest::PingRequest(PingRequest::default()), None),
        _ => return None,
    };
    Some((envelope.id, request, meta.unwrap_or_default()))
}

/// Where `tools/list` leaves its tools as JSON (serialised once per view) for a request the
/// host answers itself: an extension of the request. The result's own list is then empty,
/// and [`serialise`] puts these in its place.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListedJson(Arc<OnceLock<Bytes>>);

impl ListedJson {
    /// Leaves `tools`, a JSON array, for the answer.
    pub(super) fn leave(&self, tools: Bytes) {
        let _ = self.0.set(tools);
    }
}

/// `message` as JSON; a `tools/list` answer whose tools were left in `listed` gets them in
/// place of its empty list (the last member of the result, so the answer ends `"tools":[]}}`).
pub(crate) fn serialise(message: &ServerJsonRpcMessage, listed: Option<&ListedJson>) -> Vec<u8> {
    // Serialising a message the server built cannot fail.
    let mut body = serde_json::to_vec(message).unwrap_or_default();
    let Some(tools) = listed.and_then(|l| l.0.get()) else {
        return body;
    };
    const EMPTY: &[u8] = b"\"tools\":[]}}";
    if matches!(message, ServerJsonRpcMessage::Response(_)) && body.ends_with(EMPTY) {
        body.truncate(body.len() - "[]}}".len());
        body.extend_from_slice(tools);
        body.extend_from_slice(b"}}");
    }
    body
}

/// A handler with nothing to serve: the service behind a [`detached_peer`].
struct Nowhere;

impl ServerHandler for Nowhere {}

/// A peer for requests of protocol `version` without a session: it knows the version, as the
/// peer rmcp makes for each such request does (the client's capabilities, none; under
/// 2026-07-28 each request states its own), and sends nowhere.
pub(crate) fn detached_peer(version: ProtocolVersion) -> Peer<RoleServer> {
    let info =
        InitializeRequestParams::new(ClientCapabilities::default(), Implementation::default())
            .with_protocol_version(version);
    let transport = (
        futures::sink::drain(),
        futures::stream::pending::<rmcp::model::ClientJsonRpcMessage>(),
    );
    // Dropping the running service stops its loop: what is sent through the peer then fails
    // at once, which a call's notifications (taken by its outlet first) never meet.
    rmcp::service::serve_directly(Nowhere, transport, Some(info))
        .peer()
        .clone()
}
