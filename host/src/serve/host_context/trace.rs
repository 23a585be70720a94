//! The W3C trace context a request came with (SEP-414): `params._meta.traceparent` and
//! `tracestate`, else the HTTP request's `traceparent` and `tracestate` headers. What
//! `HostContext::trace_context` hands a plugin, as a JSON object of strings.

use axum::http::request::Parts;
use rmcp::{RoleServer, service::RequestContext};
use serde_json::{Map, Value};

/// The trace context of `request`, if it carries a well-formed `traceparent`.
pub(crate) fn of_request(request: &RequestContext<RoleServer>) -> Option<Map<String, Value>> {
    let from_meta = request.meta.get_traceparent().map(|parent| {
        (
            parent.to_owned(),
            request.meta.get_tracestate().map(str::to_owned),
        )
    });
    let from_headers = || {
        let headers = &request.extensions.get::<Parts>()?.headers;
        let header = |name: &str| headers.get(name)?.to_str().ok().map(str::to_owned);
        Some((header("traceparent")?, header("tracestate")))
    };
    let (parent, state) = from_meta.or_else(from_headers)?;
    context(parent, state)
}

/// `traceparent` and `tracestate` as the JSON object plugins get, if `traceparent` is well
/// formed (W3C Trace Context, version 00: `00-<32 hex>-<16 hex>-<2 hex>`, ids not all zeros);
/// a malformed one is dropped, as the recommendation says, with its state.
pub(crate) fn context(parent: String, state: Option<String>) -> Option<Map<String, Value>> {
    if !well_formed(&parent) {
        tracing::debug!(
            "a request's traceparent `{}` is not well formed: ignored",
            parent.escape_debug()
        );
        return None;
    }
    let mut context = Map::new();
    context.insert("traceparent".into(), Value::from(parent));
    if let Some(state) = state.filter(|s| !s.is_empty()) {
        context.insert("tracestate".into(), Value::from(state));
    }
    Some(context)
}

/// Whether `parent` is a W3C `traceparent` of version 00.
fn well_formed(parent: &str) -> bool {
    let parts: Vec<&str> = parent.split('-').collect();
    let hex = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
    matches!(parts.as_slice(), [version, trace, span, flags]
        if *version == "00" && hex(trace, 32) && nonzero(trace) && hex(span, 16)
            && nonzero(span) && hex(flags, 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_well_formed_traceparent_is_kept_with_its_state() {
        let context = context(PARENT.into(), Some("vendor=1".into())).unwrap();
        assert_eq!(
            Value::Object(context),
            serde_json::json!({"traceparent": PARENT, "tracestate": "vendor=1"})
        );
        let bare = super::context(PARENT.into(), Some(String::new())).unwrap();
        assert_eq!(
            Value::Object(bare),
            serde_json::json!({"traceparent": PARENT})
        );
    }

    #[test]
    fn a_malformed_traceparent_is_dropped() {
        for parent in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(context(parent.into(), None), None, "{parent}");
        }
    }
}
